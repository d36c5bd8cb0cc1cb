"""Where a completion enters: validate, record durably, then apply (fast path).

One PostgreSQL transaction inserts the completion and its outbox row. After
commit the completion is applied to Redis at once; if that fails (or the
process dies first) the outbox row stays and the projector finishes the job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from laurels import failpoints
from laurels.db import Conn, Database, Row
from laurels.errors import STATUS
from laurels.metrics import COMPLETIONS
from laurels.projector import Projector
from laurels.seasons import season_of
from laurels.settings import Settings
from laurels.validation import CompletionIn, Invalid, validate_completion

log = logging.getLogger("laurels.ingest")

HEAL_WAIT_SECONDS = 2.0
Clock = Callable[[], datetime]


@dataclass
class Outcome:
    completion_id: str | None
    status: str  # recorded | duplicate | rejected
    seq: int | None = None
    season: str | None = None
    code: str | None = None
    detail: str | None = None

    @property
    def http_status(self) -> int:
        if self.status == "recorded":
            return 201
        if self.status == "duplicate":
            return 200
        return STATUS[self.code or "validation_error"]

    def body(self) -> dict[str, Any]:
        if self.status == "rejected":
            return {"completion_id": self.completion_id, "status": "rejected",
                    "error": {"code": self.code, "detail": self.detail}}
        return {"completion_id": self.completion_id, "seq": self.seq, "season": self.season,
                "status": self.status}


@dataclass
class _Item:
    index: int
    data: CompletionIn
    completed_at: datetime
    given: bool
    season: str


def _reject(cid: str | None, code: str, detail: str) -> Outcome:
    return Outcome(cid, "rejected", code=code, detail=detail)


def _same(item: _Item, row: Row) -> bool:
    stored_at = row["completed_at"] if item.given else row["received_at"]
    want_at = item.completed_at if item.given else row["completed_at"]
    return bool(row["user_id"] == item.data.user_id and row["points"] == item.data.points
                and stored_at == want_at)


class Ingestor:
    def __init__(self, settings: Settings, db: Database, projector: Projector,
                 clock: Clock = lambda: datetime.now(UTC)) -> None:
        self.settings = settings
        self.db = db
        self.projector = projector
        self.clock = clock

    async def record(self, raw_items: list[Any]) -> list[Outcome]:
        """Record a batch; one outcome per item, in order. Items are independent."""
        now = self.clock()
        skew = timedelta(seconds=self.settings.max_future_skew_seconds)
        outcomes: list[Outcome | None] = [None] * len(raw_items)
        items: list[_Item] = []
        for i, raw in enumerate(raw_items):
            cid = raw.get("completion_id") if isinstance(raw, dict) else None
            cid = cid if isinstance(cid, str) else None
            try:
                data, at = validate_completion(raw)
            except Invalid as exc:
                outcomes[i] = _reject(cid, "validation_error", str(exc))
                continue
            if at is not None and at > now + skew:
                outcomes[i] = _reject(cid, "validation_error",
                                      "completed_at lies too far in the future")
                continue
            completed_at = at or now
            items.append(_Item(i, data, completed_at, at is not None,
                               season_of(completed_at).name))
        if items:
            recorded = await self._record(items, now, outcomes)
            await failpoints.pause("ingest_after_commit")
            if recorded and not failpoints.skipped("fast_path"):
                await self.apply_fast_path(recorded)
        final = [o or _reject(None, "validation_error", "invalid item") for o in outcomes]
        for o in final:
            COMPLETIONS.labels(o.code or o.status).inc()
        return final

    async def _record(self, items: list[_Item], now: datetime,
                      outcomes: list[Outcome | None]) -> list[int]:
        for attempt in range(5):
            try:
                async with self.db.transaction() as conn:
                    return await self._record_tx(conn, items, now, outcomes)
            except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
                if attempt == 4:
                    raise
                await asyncio.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")

    async def _record_tx(self, conn: Conn, items: list[_Item], now: datetime,
                         outcomes: list[Outcome | None]) -> list[int]:
        # Learners first: an erased learner's writes are refused, replays included.
        user_ids = sorted({it.data.user_id for it in items})
        users = {r["user_id"]: r for r in await self.db.fetch("lock_users", conn,
                                                              user_ids=user_ids)}
        missing = [u for u in user_ids if u not in users]
        if missing:
            await self.db.execute("create_users", conn, user_ids=missing)
            for r in await self.db.fetch("lock_users", conn, user_ids=missing):
                users[r["user_id"]] = r

        ids = sorted({it.data.completion_id for it in items})
        existing = {r["completion_id"]: r
                    for r in await self.db.fetch("find_completions", conn, completion_ids=ids)}
        to_insert: dict[str, _Item] = {}
        refused: dict[str, Outcome | None] = {}  # first copies refused after the fact
        for it in items:
            cid = it.data.completion_id
            if users[it.data.user_id]["erased"]:
                outcomes[it.index] = _reject(cid, "user_erased", "this learner was erased")
            elif cid in existing or cid in to_insert:
                continue  # decided below, against the stored (or first) version
            elif season_of(it.completed_at).is_closed(now, self.settings.late_grace_seconds,
                                                      self.settings.close_seasons):
                outcomes[it.index] = _reject(
                    cid, "season_closed", f"season {it.season} is closed to new completions")
            else:
                to_insert[cid] = it

        if to_insert:
            # Share-lock the seasons: finalizing waits for us, and a season
            # finalized meanwhile refuses the completion.
            seasons = sorted({it.season for it in to_insert.values()})
            await self.db.execute("ensure_seasons", conn, seasons=seasons)
            finalized = {r["season"] for r in await self.db.fetch("lock_seasons", conn,
                                                                  seasons=seasons)
                         if r["finalized"]}
            for cid, it in list(to_insert.items()):
                if it.season in finalized:
                    outcomes[it.index] = _reject(
                        cid, "season_closed", f"season {it.season} is closed to new completions")
                    refused[cid] = outcomes[it.index]
                    del to_insert[cid]

        recorded: list[int] = []
        if to_insert:
            new = sorted(to_insert.values(), key=lambda it: it.data.completion_id)
            rows = await self.db.fetch(
                "insert_completions", conn,
                completion_ids=[it.data.completion_id for it in new],
                user_ids=[it.data.user_id for it in new],
                points=[it.data.points for it in new],
                completed_ats=[it.completed_at for it in new],
                received_ats=[now for _ in new],
                seasons=[it.season for it in new])
            seqs = {r["completion_id"]: r["seq"] for r in rows}
            if seqs:
                await self.db.execute("insert_outbox", conn, seqs=list(seqs.values()))
            lost = [cid for cid in to_insert if cid not in seqs]  # a concurrent insert won
            if lost:
                for r in await self.db.fetch("find_completions", conn, completion_ids=lost):
                    existing[r["completion_id"]] = r
            for cid, seq in seqs.items():
                it = to_insert[cid]
                outcomes[it.index] = Outcome(cid, "recorded", seq, it.season)
                existing[cid] = {"seq": seq, "user_id": it.data.user_id,
                                 "points": it.data.points, "completed_at": it.completed_at,
                                 "received_at": now, "season": it.season}
                recorded.append(seq)

        for it in items:
            if outcomes[it.index] is not None:
                continue
            cid = it.data.completion_id
            row = existing.get(cid)
            if row is None:  # a later copy of an item refused above: the same answer
                first = refused.get(cid)
                outcomes[it.index] = _reject(cid, first.code or "season_closed",
                                             first.detail or "") if first else _reject(
                    cid, "completion_conflict", "completion_id was not recorded")
            elif _same(it, row):
                outcomes[it.index] = Outcome(cid, "duplicate", row["seq"], row["season"])
            else:
                outcomes[it.index] = _reject(
                    cid, "completion_conflict",
                    "completion_id was already recorded with a different payload")
        return recorded

    async def apply_fast_path(self, seqs: list[int]) -> None:
        """Apply right after commit; whatever is not applied stays in the outbox.

        The completions are committed: from here on the client gets its 201 or
        200 whatever happens, and the projector finishes what fails here.
        """
        try:
            await self.projector.apply_now(seqs, HEAL_WAIT_SECONDS)
        except Exception as exc:  # any failure: the projector retries
            log.warning("fast-path apply failed, the projector will retry: %s: %s",
                        type(exc).__name__, exc, exc_info=True)
