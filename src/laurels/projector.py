"""The outbox relay: what guarantees every committed completion is applied.

It drains the outbox in batches (claimed with FOR UPDATE SKIP LOCKED, so any
number of projectors can run), then waits on LISTEN/NOTIFY *or* a poll timeout:
notifications cut latency, polling guarantees progress. Rows younger than
`min_age_seconds` (0.1 s) are left to the API's fast path, which normally
deletes them within milliseconds; the fast path (`apply_now`) shares the
claim-and-apply code below.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import psycopg
from redis.exceptions import RedisClusterException, RedisError

from laurels import failpoints
from laurels.board import Board, Event
from laurels.board.rebuild import Rebuilder
from laurels.db import Database
from laurels.lifecycle import Lifecycle
from laurels.metrics import APPLY_LAG, OUTBOX_AGE, OUTBOX_DEPTH

log = logging.getLogger("laurels.projector")

CHANNEL = "laurels_outbox"  # NOTIFYed by a trigger on outbox (migration 003)
STORE_ERRORS = (psycopg.Error, RedisError, RedisClusterException, OSError)
HEAL_WAIT_SECONDS = 30.0


class Projector:
    def __init__(self, db: Database, board: Board, rebuilder: Rebuilder,
                 lifecycle: Lifecycle, batch_size: int = 500, poll_seconds: float = 0.5,
                 min_age_seconds: float = 0.1) -> None:
        self.db = db
        self.board = board
        self.rebuilder = rebuilder
        self.lifecycle = lifecycle
        self.batch_size = batch_size
        self.poll_seconds = poll_seconds
        self.min_age_seconds = min_age_seconds
        self.applied_total = 0

    async def _claim_and_apply(self, query: str, path: str, **params: Any
                               ) -> tuple[int, set[str]]:
        """One transaction: claim outbox rows (locked), apply them, delete what
        was applied. Returns (rows applied, seasons that have no board).

        The rows stay locked while Redis is written, so an erasure (whose
        cascade deletes them) waits for the apply to finish, and an event read
        here is never one whose completion is already gone: no erased learner
        can come back from a stale copy in memory.
        """
        async with self.db.transaction() as conn:
            rows = await self.db.fetch(query, conn, **params)
            if not rows:
                return 0, set()
            await failpoints.pause(f"{path}_claimed")
            events = [Event.from_row(r) for r in rows]
            results = await self.board.apply(events)
            missing = {ev.season for ev, res in zip(events, results, strict=True)
                       if res == "missing"}
            if missing:
                # A finalized season is read from its archive (built from the
                # completions themselves): nothing is left to apply.
                archived = await self.lifecycle.finalized(sorted(missing), conn)
                missing -= set(archived)
            done = [ev.seq for ev, res in zip(events, results, strict=True)
                    if ev.season not in missing]
            if done:
                await self.db.execute("delete_outbox", conn, seqs=done)
        for r in rows:
            if r["season"] not in missing:
                APPLY_LAG.labels(path).observe(float(r["queued_seconds"]))
        return len(done), missing

    async def apply_now(self, events: list[Event], heal_wait_seconds: float) -> None:
        """The fast path: apply the events an ingest just committed. A season
        without a board is healed (rebuilt from PostgreSQL, which holds these
        completions already), then they are taken again: applying them is
        then a no-op, unless the heal is still running; then the projector
        finishes the job."""
        missing = await self._take_and_apply(events)
        if missing:
            await failpoints.pause("fast_missing")
            await self.rebuilder.heal(missing, heal_wait_seconds)
            await self._take_and_apply(events)
            for season in sorted(missing):  # the board changed; name nobody
                await self.board.publish_hint({"season": season})

    async def _take_and_apply(self, events: list[Event]) -> set[str]:
        """One transaction: take (delete) the events' outbox rows, apply the
        events still there, commit; the seasons without a board (then nothing
        is committed: the rows stay for after the heal, or the projector).

        The events come from the ingest's memory, but only the ones whose
        rows this transaction holds are applied: an erasure that deleted
        them first wins, and one that comes later waits for this commit."""
        missing: set[str] = set()
        try:
            async with self.db.transaction() as conn:
                rows = await self.db.fetch("take_outbox", conn, seqs=[ev.seq for ev in events])
                held = {r["seq"]: float(r["queued_seconds"]) for r in rows}
                todo = [ev for ev in events if ev.seq in held]
                if not todo:
                    return missing
                await failpoints.pause("fast_claimed")
                results = await self.board.apply(todo)
                missing = {ev.season for ev, res in zip(todo, results, strict=True)
                           if res == "missing"}
                if missing:
                    missing -= set(await self.lifecycle.finalized(sorted(missing), conn))
                if missing:
                    raise psycopg.Rollback  # keep every row; applied ones re-apply as no-ops
        except psycopg.Rollback:  # pragma: no cover - psycopg swallows it in the block
            pass
        if not missing:
            for lag in held.values():
                APPLY_LAG.labels("fast").observe(lag)
        return missing

    async def drain_once(self, min_age_seconds: float | None = None) -> int:
        """Claim one batch, apply it, delete what was applied. Returns rows applied."""
        age = self.min_age_seconds if min_age_seconds is None else min_age_seconds
        done, missing = await self._claim_and_apply("claim_outbox", "projector",
                                                    min_age_seconds=age, limit=self.batch_size)
        if missing:
            log.info("seasons %s have no board: rebuilding", sorted(missing))
            await self.rebuilder.heal(missing, HEAL_WAIT_SECONDS)
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
                async with await psycopg.AsyncConnection.connect(
                        self.db.url, autocommit=True) as listener:
                    await listener.execute(f"LISTEN {CHANNEL}")
                    while not stop.is_set():
                        await self.drain()
                        if await self._notified(listener, stop):
                            async for _ in listener.notifies(timeout=self.min_age_seconds):
                                pass
            except STORE_ERRORS as exc:
                log.warning("projector: %s; retrying in 1 s", exc)
                try:
                    await asyncio.wait_for(stop.wait(), 1.0)
                except TimeoutError:
                    pass

    async def _notified(self, listener: psycopg.AsyncConnection[Any],
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
