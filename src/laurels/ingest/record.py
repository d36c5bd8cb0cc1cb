"""Where a completion enters: validate, record durably, then apply (fast path).

One PostgreSQL transaction inserts the completion and its outbox row. After
commit the completion is applied to Redis at once; if that fails (or the
process dies first) the outbox row stays and the projector finishes the job.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from laurels.board import Delta, Profile
from laurels.core import failpoints
from laurels.core.errors import ErrorCode
from laurels.core.metrics import COMPLETIONS
from laurels.core.seasons import END_OF_TIME, Season, shifted
from laurels.core.shapes import Recorded, Rejected
from laurels.core.spans import Found
from laurels.core.states import OutcomeStatus
from laurels.core.validation import Completion, Invalid, validate_completion
from laurels.db import Database, Row, bool_array, int_array, text_array, timestamp_array
from laurels.lifecycle.history import Partitions, month_of
from laurels.process.settings import Settings
from laurels.projection.heal import REQUEST_HEAL_WAIT_SECONDS
from laurels.projection.projector import Projector

log = logging.getLogger("laurels.ingest")

Clock = Callable[[], datetime]


@dataclass
class Outcome:
    completion_id: str | None
    status: OutcomeStatus
    seq: int | None = None
    season: str | None = None
    code: ErrorCode | None = None
    detail: str | None = None

    def body(self) -> Recorded | Rejected:
        if self.status == "rejected":
            if self.code is None or self.detail is None:
                raise RuntimeError("a refusal says why")
            return {"completion_id": self.completion_id, "status": "rejected",
                    "error": {"code": self.code, "detail": self.detail}}
        if self.completion_id is None or self.seq is None or self.season is None:
            raise RuntimeError("a stored completion has its id, seq and season")
        return {"completion_id": self.completion_id, "seq": self.seq, "season": self.season,
                "status": self.status}


@dataclass
class _Item:
    index: int
    data: Completion
    completed_at: datetime
    given: bool  # completed_at was sent (else: the time of receipt)
    season: Season  # its week
    closed: bool  # one of its seasons no longer takes new completions (by the clock)
    others: str  # its seasons of the other configured periods, comma-joined
    closing: str  # the season it is refused for when closed: the first closed one


def _reject(cid: str | None, code: ErrorCode, detail: str) -> Outcome:
    return Outcome(cid, "rejected", code=code, detail=detail)


def _same(item: _Item, row: Row) -> bool:
    stored_at = row["completed_at"] if item.given else row["received_at"]
    want_at = item.completed_at if item.given else row["completed_at"]
    return bool(row["user_id"] == item.data.user_id and row["points"] == item.data.points
                and stored_at == want_at and tuple(row["tags"] or ()) == item.data.tags)


def _closed(item: _Item) -> Outcome:
    return _reject(item.data.completion_id, "season_closed",
                   f"season {item.closing} is closed to new completions")


REFUSALS: dict[str, tuple[ErrorCode, str]] = {
    "erased": ("user_erased", "this learner was erased")}


class Ingestor:
    def __init__(self, settings: Settings, db: Database, projector: Projector,
                 partitions: Partitions, clock: Clock = lambda: datetime.now(UTC)) -> None:
        self.settings = settings
        self.db = db
        self.projector = projector
        self.partitions = partitions
        self.clock = clock

    async def record(self, raw_items: list[Any]) -> list[Outcome]:
        """Record a batch; one outcome per item, in order. Items are independent."""
        now = self.clock()
        outcomes: list[Outcome | None] = [None] * len(raw_items)
        items = self._validate(raw_items, now, outcomes)
        if items:
            deltas = await self._record(items, now, outcomes)
            await failpoints.pause("ingest_after_commit")
            if deltas and not failpoints.skipped("fast_path"):
                await self.apply_fast_path(deltas)
        final = [o or _reject(None, "validation_error", "invalid item") for o in outcomes]
        for status, count in Counter(o.status for o in final).items():  # a label lookup a status
            COMPLETIONS.labels(status).inc(count)
        return final

    def _validate(self, raw_items: list[Any], now: datetime,
                  outcomes: list[Outcome | None]) -> list[_Item]:
        """Items that may be recorded; the others get their outcome here."""
        latest = shifted(now, timedelta(seconds=self.settings.max_future_skew_seconds))
        items, found = [], Found()
        for i, raw in enumerate(raw_items):
            cid = raw.get("completion_id") if isinstance(raw, dict) else None
            cid = cid if isinstance(cid, str) else None
            try:
                data, at = validate_completion(raw)
            except Invalid as exc:
                outcomes[i] = _reject(cid, "validation_error", str(exc))
                continue
            if at is not None and at >= END_OF_TIME:  # the boards' end, exclusive
                outcomes[i] = _reject(cid, "validation_error",
                                      "completed_at is out of range (before 9999-12-31T"
                                      "23:59:59.999999Z)")
                continue
            if at is not None and at > latest:
                outcomes[i] = _reject(
                    cid, "validation_error", "completed_at lies too far in the future (more "
                    f"than {self.settings.max_future_skew_seconds} s after the server's clock: "
                    "LAURELS_MAX_FUTURE_SKEW_SECONDS)")
                continue
            completed_at = at or now
            # Every configured period's season (the week first); the item is
            # recorded only while all of them are open.
            seasons = found.seasons(completed_at, self.settings.periods,
                                    self.settings.time_zone)
            closed = [s for s in seasons if s.is_closed(
                now, self.settings.late_grace_seconds, self.settings.close_seasons)]
            items.append(_Item(i, data, completed_at, at is not None, seasons[0],
                               bool(closed), ",".join(s.name for s in seasons[1:]),
                               (closed or seasons)[0].name))
        return items

    async def _record(self, items: list[_Item], now: datetime,
                      outcomes: list[Outcome | None]) -> list[Delta]:
        """One round trip to PostgreSQL for the batch (laurels_ingest_v1), then each
        item's outcome; returns the deltas to apply."""
        rows = await self._insert(items, now)
        raced = sorted({it.data.completion_id for it, r in zip(items, rows, strict=True)
                        if r["status"] == "raced"})
        if raced:  # recorded by a concurrent batch after ours looked: compare with it
            stored = {r["completion_id"]: r
                      for r in await self.db.fetch("find_completions", completion_ids=raced)}
            rows = [{**stored[it.data.completion_id], "status": "exists"}
                    if r["status"] == "raced" else r for it, r in zip(items, rows, strict=True)]
        deltas = []
        for it, row in zip(items, rows, strict=True):
            cid, status = it.data.completion_id, row["status"]
            if status in REFUSALS:
                outcomes[it.index] = _reject(cid, *REFUSALS[status])
            elif status in ("closed", "finalized"):
                outcomes[it.index] = _closed(it)
            elif status == "recorded":
                outcomes[it.index] = Outcome(cid, "recorded", row["seq"], it.season.name)
                deltas.append(Delta.recorded(row["seq"], it.data.user_id, it.data.points,
                                             it.completed_at, it.season,
                                             Profile(row["profile_version"],
                                                     row["visibility"], row["display_name"]),
                                             it.data.tags))
            elif _same(it, row):  # a replay, or a later copy of an item of this batch
                outcomes[it.index] = Outcome(cid, "duplicate", row["seq"], row["season"])
            else:
                outcomes[it.index] = _reject(
                    cid, "completion_conflict",
                    "completion_id was already recorded with a different payload")
        return deltas

    async def _insert(self, items: list[_Item], now: datetime) -> list[Row]:
        await self.partitions.ensure_before_recording({month_of(it.completed_at) for it in items})
        return await self.db.fetch_contended(
            "ingest_batch",
            completion_ids=text_array([it.data.completion_id for it in items]),
            user_ids=int_array([it.data.user_id for it in items]),
            points=int_array([it.data.points for it in items]),
            completed_ats=timestamp_array([it.completed_at for it in items]),
            received_at=now, seasons=text_array([it.season.name for it in items]),
            closed=bool_array([it.closed for it in items]),
            others=text_array([it.others for it in items]),
            tags=text_array([",".join(it.data.tags) for it in items]))

    async def apply_fast_path(self, deltas: list[Delta]) -> None:
        """Apply right after commit; whatever is not applied stays in the outbox.

        The completions are committed: from here on the client gets its 201 or
        200 whatever happens, and the projector finishes what fails here.
        """
        try:
            await self.projector.apply_now(deltas, REQUEST_HEAL_WAIT_SECONDS)
        except Exception as exc:  # any failure: the projector retries
            log.warning("fast-path apply failed, the projector will retry: %s: %s",
                        type(exc).__name__, exc)


class GroupCommit:
    """Single completions posted at the same moment, recorded together: one
    transaction and one commit for all of them, as databases group commits
    (issue 30). Each caller still gets its own outcome (an item that fails
    fails alone) and only after the commit; a store error fails every item
    of its group. While groups are in flight (at most IN_FLIGHT), new items
    wait for the next: under load the groups grow, and the commits per
    second stay what PostgreSQL can do while the completions per second
    grow with them. Alone, an item waits for nothing but one turn of the
    event loop."""

    IN_FLIGHT = 4  # groups being recorded at once (each holds a connection)
    MAX_ITEMS = 500

    def __init__(self, ingestor: Ingestor) -> None:
        self.ingestor = ingestor
        self._waiting: list[tuple[Any, asyncio.Future[Outcome]]] = []
        self._flushers = 0

    async def submit(self, raw: Any) -> Outcome:
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._waiting.append((raw, future))
        if self._flushers < self.IN_FLIGHT:
            self._flushers += 1
            asyncio.get_running_loop().create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        try:
            await asyncio.sleep(0)  # the requests of this turn of the loop join in
            while self._waiting:
                group = self._waiting[:self.MAX_ITEMS]
                del self._waiting[:self.MAX_ITEMS]
                try:
                    outcomes = await self.ingestor.record([raw for raw, _ in group])
                except BaseException as exc:  # a store error: every item of the group
                    for _, future in group:
                        if not future.done():
                            future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                for (_, future), outcome in zip(group, outcomes, strict=True):
                    if not future.done():  # (its client may have gone)
                        future.set_result(outcome)
        finally:
            self._flushers -= 1
