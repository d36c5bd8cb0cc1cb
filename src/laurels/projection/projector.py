"""The outbox relay: what guarantees every committed completion is applied.

It drains the outbox in batches (claimed with FOR UPDATE SKIP LOCKED, so any
number of projectors can run), then waits on LISTEN/NOTIFY *or* a poll timeout:
notifications cut latency, polling guarantees progress. Rows younger than
`min_age_seconds` (0.25 s) are left to the API's fast path, which applies
them at once and has them deleted in bulk every 50 ms (`flush_loop`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

from laurels.board import Delta
from laurels.board.roles import Applier
from laurels.core import failpoints
from laurels.core.errors import StoreUnavailable
from laurels.core.metrics import APPLY_LAG, OUTBOX_AGE, OUTBOX_DEPTH
from laurels.core.seasons import WINDOW_DAYS, Period, Season
from laurels.core.spans import Found, part_period
from laurels.core.states import ApplyResult
from laurels.db import Database, Listener, Tx
from laurels.lifecycle.board_kinds import BoardKinds
from laurels.lifecycle.closing import Lifecycle
from laurels.lifecycle.history import history_of
from laurels.lifecycle.kind_rules import tagged_boards
from laurels.lifecycle.windows import window_bounds
from laurels.projection.heal import BACKGROUND_HEAL_WAIT_SECONDS, Healer

log = logging.getLogger("laurels.projector")

FLUSH_SECONDS = 0.05  # well under min_age_seconds: the projector rarely re-applies
FLUSH_MAX = 100_000
MAX_TIE_ROUNDS = 8  # a void read again this often in one pass is left to the next


_CORRECTION = attrgetter("correction")


def boards_of(deltas: list[Delta], periods: tuple[Period, ...], zone: str,
              tagged: list[list[Delta]] | None = None) -> list[Delta]:
    """Each completion once per board it counts on: its week's (the row's
    season), then the season of each other configured period, then the
    boards of its tags (`tagged`, one list for each delta: tagged_boards).
    Each board keeps its own idempotency record, so a completion is applied
    to each exactly once; its outbox row goes only when every board has it.
    A completion's boards come together, so that one apply.lua call sends it
    once for all of them."""
    if len(periods) == 1 and tagged is None:
        return deltas
    # (a window's entries carry their local day: apply.lua, "Windows")
    parts = {p: "day" if p in WINDOW_DAYS else part_period(p, periods) for p in periods}
    found = Found()
    out = []
    for i, d in enumerate(deltas):
        out.append(d)
        for p in periods[1:]:
            part = parts[p]
            out.append(d.on_board(found.season(d.completed_at, p, zone), d.points,
                                  d.notify, found.season(d.completed_at, part, zone).name
                                  if part else ""))
        if tagged is not None:
            out += tagged[i]
    return out


class Projector:
    batch_size = 500  # outbox rows per claim
    poll_seconds = 0.5  # the wait for a NOTIFY before polling anyway
    min_age_seconds = 0.25  # younger rows are left to the fast path

    def __init__(self, db: Database, board: Applier, healer: Healer,
                 lifecycle: Lifecycle, periods: tuple[Period, ...] = ("week",),
                 kinds: BoardKinds | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.db = db
        self.clock = clock  # (a window's void: its first day by the clock)
        self.periods = periods
        self.kinds = kinds
        self.board = board
        self.healer = healer
        self.lifecycle = lifecycle
        self.applied_total = 0
        self.flushing = False  # a flush loop deletes the fast path's rows in bulk
        self._applied: list[int] = []

    async def _claim_and_apply(self, query: str, path: str, **params: Any
                               ) -> tuple[int, set[Season]]:
        """One transaction: claim outbox rows (locked), apply them, delete what
        was applied. Returns (rows applied, seasons that have no board).

        The rows stay locked while Redis is written, so an erasure (whose
        cascade deletes them) waits for the apply to finish, and an event read
        here is never one whose completion is already gone: no erased learner
        can come back from a stale copy in memory.
        """
        archived: dict[Season, str] = {}
        async with self.db.transaction() as tx:
            rows = await self.db.fetch(query, tx, **params)
            if not rows:
                return 0, set()
            await failpoints.pause(f"{path}_claimed")
            boards = await self.boards_of([Delta.from_row(r, self.db.zone) for r in rows], tx)
            results = await self.apply(boards, tx)
            missing = {d.season for d, res in zip(boards, results, strict=True)
                       if res == "missing"}
            if missing:
                # A finalized season is read from its archive (built from the
                # completions themselves): nothing is left to apply.
                archived = await self.lifecycle.finalized(sorted(missing), tx)
                missing -= archived.keys()
            blocked = {d.seq for d, res in zip(boards, results, strict=True)
                       if d.season in missing or res == "deferred"}
            done = [r["seq"] for r in rows if r["seq"] not in blocked]
            if done:
                await self.db.run("delete_outbox", tx, seqs=done)
        for r in rows:
            if r["seq"] not in blocked:
                APPLY_LAG.labels(path).observe(float(r["queued_seconds"]))
        for season in sorted(archived):  # a correction re-ranked its archive (as apply_now)
            await self.board.publish_hint({"season": season.name})
        return len(done), missing

    async def apply_now(self, deltas: list[Delta], heal_wait_seconds: float) -> None:
        """The fast path: apply the deltas an ingest just committed, from memory,
        in one script call (per APPLY_BATCH boards), then let their outbox rows
        go in bulk.

        An erasure that committed meanwhile needs no lock here: its tombstone
        (written whether or not the season has a board) makes the apply skip
        the learner. A season without a board is healed (rebuilt from
        PostgreSQL, whose snapshot holds these completions, since it began
        after this apply found no board); the deltas are never applied from
        memory onto the rebuilt board. If the heal is still running, the
        projector finishes the job from the outbox."""
        started = time.perf_counter()
        boards = await self.boards_of(deltas)
        results = await self.apply(boards)
        missing = ({d.season for d, res in zip(boards, results, strict=True)
                    if res == "missing"} if "missing" in results else set())
        if missing:
            archived = set(await self.lifecycle.finalized(sorted(missing)))
            for season in sorted(archived):  # a correction re-ranked its archive
                await self.board.publish_hint({"season": season.name})
            missing -= archived
        if missing:
            await failpoints.pause("fast_missing")
            if await self.healer.heal(missing, heal_wait_seconds):
                for season in sorted(missing):  # the board changed; name nobody
                    await self.board.publish_hint({"season": season.name})
                missing = set()
        blocked = ({d.seq for d, res in zip(boards, results, strict=True)
                    if d.season in missing or res == "deferred"}  # the projector retries
                   if missing or "deferred" in results else set())
        APPLY_LAG.labels("fast").observe(time.perf_counter() - started)
        await self.forget([d.seq for d in deltas if d.seq not in blocked])

    async def boards_of(self, deltas: list[Delta], tx: Tx | None = None) -> list[Delta]:
        """Each committed completion once per board it counts on: the whole
        board's of each configured period, then each board of a kind its
        tags name, by the kinds as they are now (read after the commit: a
        kind defined before it is among them)."""
        tagged = None
        if self.kinds is not None and any(d.tags for d in deltas):
            tagged = tagged_boards(deltas, await self.kinds.live(tx))
        return boards_of(deltas, self.periods, self.db.zone, tagged)

    async def apply(self, boards: list[Delta], tx: Tx | None = None) -> list[ApplyResult]:
        """Apply deltas to their boards. A void carries its fallback tie time,
        read for it here; when an apply of the same learner came between that
        read and the void's own apply (apply.lua, "Ties"), it is read and
        applied again. A void still refused after MAX_TIE_ROUNDS stays
        'deferred': its outbox row stays, and a later pass takes it."""
        results = await self.board.apply(await self._with_resets(boards, tx))
        # (most batches: no void read again, and nothing more to do a board)
        todo = [i for i, r in enumerate(results) if r == "retry"] if "retry" in results else []
        for _ in range(MAX_TIE_ROUNDS - 1):
            if not todo:
                break
            answers = await self.board.apply(
                await self._with_resets([boards[i] for i in todo], tx))
            for i, answer in zip(todo, answers, strict=True):
                results[i] = answer
            todo = [i for i in todo if results[i] == "retry"]
        for i in todo:
            results[i] = "deferred"
        return results

    async def _with_resets(self, boards: list[Delta], tx: Tx | None = None) -> list[Delta]:
        """A void carries, for each board, what it falls back to in that
        board's season: the learner's tie time from the completions that
        still count (the `first` policy's), and on a `best` board their next
        best. Read from PostgreSQL, as it is now, after the learner is
        marked in the season's ties hash (under `first`, and on `best`), so
        that an apply coming between the read and the void's own apply makes
        the void read again instead of writing a stale fallback."""
        if not any(map(_CORRECTION, boards)):  # (most batches: no correction, asked in C)
            return boards
        voids = [i for i, d in enumerate(boards) if d.correction and not d.counted]
        if not voids:
            return boards
        tokens: dict[int, str] = {}
        by_season: dict[Season, list[int]] = {}
        for i in voids:
            by_season.setdefault(boards[i].season, []).append(i)
        for season, idxs in by_season.items():
            if self.board.policy == "first" or self._best(season):
                marks = await self.board.mark_ties(season, [boards[i].user_id for i in idxs])
                tokens.update(zip(idxs, marks, strict=True))
        out = list(boards)
        for i in voids:
            d = boards[i]
            row = await self._fallback(d, tx)
            out[i] = d._replace(reset_at=row["last_at"] if row else None,
                             reset_score=row["score"] if row and self._best(d.season) else None,
                             tie_token=tokens.get(i, ""))
        await failpoints.pause("void_tie_read")
        return out

    def _best(self, season: Season) -> bool:
        return season.metric == "best"

    async def _fallback(self, d: Delta, tx: Tx | None) -> Any:
        """The learner's state from what still counts on a void's board (see
        _with_resets): on a `best` board built from archives (a closed
        season), from them as its reads are (lifecycle/history.py). On a
        window, from its first day by the clock: on a sum the latest
        completion is the same from any earlier day; on `best`, a void just
        after midnight, before the window moved, may fall back lower than a
        leaving day's best, which the move then takes out and sets the
        learner's best again (lifecycle/windows.py)."""
        if self._best(d.season):
            history = await history_of(self.db, self.periods, d.season, tx)
            if history is not None:
                return await self.db.fetch_one(
                    "long_sums_for", tx, season=d.season, user_ids=[d.user_id],
                    parts=history.parts, cutoff=history.cutoff)
        since = {}
        if d.season.window:  # a window's: from its first day by the clock (see below)
            since["window_starts"] = window_bounds(d.season, self.clock())[0]
        row = await self.db.fetch_one("latest_counted", tx, season=d.season, user_id=d.user_id,
                                      **since)
        return row if row and row["last_at"] is not None else None

    async def forget(self, seqs: list[int]) -> None:
        """Outbox rows of applied completions: deleted in bulk by the flush loop
        (one statement for many requests), or at once when none runs."""
        if not seqs:
            return
        if self.flushing:
            if len(self._applied) < FLUSH_MAX:
                self._applied.extend(seqs)  # beyond: the projector re-applies (no-ops)
            return
        await self.db.run("delete_outbox", seqs=seqs)

    async def flush(self) -> int:
        seqs, self._applied = self._applied, []
        if seqs:
            try:
                await self.db.run("delete_outbox", seqs=seqs)
            except BaseException:
                self._applied = seqs + self._applied  # next time
                raise
        return len(seqs)

    async def flush_loop(self, stop: asyncio.Event) -> None:
        """Delete applied outbox rows in bulk, every FLUSH_SECONDS."""
        self.flushing = True
        try:
            while not stop.is_set():
                await self.flush()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), FLUSH_SECONDS)
        finally:
            self.flushing = False
            with contextlib.suppress(Exception):
                await self.flush()

    async def drain_once(self, min_age_seconds: float | None = None) -> int:
        """Claim one batch, apply it, delete what was applied. Returns rows applied."""
        await self.flush()  # what the fast path applied is not the projector's work
        age = self.min_age_seconds if min_age_seconds is None else min_age_seconds
        done, missing = await self._claim_and_apply("claim_outbox", "projector",
                                                    min_age_seconds=age, limit=self.batch_size)
        if missing:
            log.info("seasons %s have no board: rebuilding", sorted(missing))
            await self.healer.heal(missing, BACKGROUND_HEAL_WAIT_SECONDS)
            again, _ = await self._claim_and_apply("claim_outbox", "projector",
                                                   min_age_seconds=age, limit=self.batch_size)
            done += again
        self.applied_total += done
        return done

    async def drain(self, min_age_seconds: float | None = None) -> int:
        total = 0
        while True:
            n = await self.drain_once(min_age_seconds)
            total += n
            if n < self.batch_size:  # a short batch: drained, or blocked until next pass
                return total

    async def run(self, stop: asyncio.Event) -> None:
        """Drain, then wait for a NOTIFY (sent by every transaction that writes
        outbox rows) or the poll timeout. After a NOTIFY it waits
        `min_age_seconds` more, absorbing the burst, so the fast path applies
        its own rows first and the projector only picks up what it left.
        Store errors are retried here; anything else ends the loop, and its
        supervisor logs it and restarts it."""
        while not stop.is_set():
            try:
                async with self.db.outbox_listener() as listener:
                    while not stop.is_set():
                        await self.drain()
                        if await self._notified(listener, stop):
                            async for _ in listener.notifies(timeout=self.min_age_seconds):
                                pass
            except StoreUnavailable as exc:
                log.warning("projector: %s; retrying in 1 s", exc)
                try:
                    await asyncio.wait_for(stop.wait(), 1.0)
                except TimeoutError:
                    pass

    async def _notified(self, listener: Listener,
                        stop: asyncio.Event) -> bool:
        """Wait for a NOTIFY, the poll timeout or `stop`; True on a NOTIFY."""

        async def first() -> bool:
            async for _ in listener.notifies(timeout=self.poll_seconds, stop_after=1):
                return True
            return False

        waiter = asyncio.ensure_future(first())
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({waiter, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not waiter.done():
                waiter.cancel()
        return waiter.done() and not waiter.cancelled() and waiter.result()

    async def measure_outbox(self) -> None:
        depth = await self.db.fetch_one("outbox_depth")
        if depth:
            OUTBOX_DEPTH.set(int(depth["depth"]))
            OUTBOX_AGE.set(float(depth["oldest_seconds"]))
