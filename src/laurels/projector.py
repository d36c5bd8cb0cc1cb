"""The outbox relay: what guarantees every committed completion is applied.

It drains the outbox in batches (claimed with FOR UPDATE SKIP LOCKED, so any
number of projectors can run), then waits on LISTEN/NOTIFY *or* a poll timeout:
notifications cut latency, polling guarantees progress. Rows younger than
`min_age_seconds` are left to the API's fast path, which normally deletes them
within milliseconds.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import psycopg
from redis.exceptions import RedisClusterException, RedisError

from laurels import failpoints
from laurels.board import Board, Event
from laurels.board.rebuild import Rebuilder
from laurels.db import Database
from laurels.lifecycle import Lifecycle
from laurels.metrics import APPLY_LAG, OUTBOX_AGE, OUTBOX_DEPTH

if TYPE_CHECKING:
    from laurels.notify import Notifier

log = logging.getLogger("laurels.projector")

CHANNEL = "laurels_outbox"
HEAL_WAIT_SECONDS = 30.0


class Projector:
    def __init__(self, db: Database, board: Board, rebuilder: Rebuilder,
                 lifecycle: Lifecycle, notifier: Notifier | None = None,
                 batch_size: int = 500, poll_seconds: float = 0.5,
                 min_age_seconds: float = 1.0, housekeeping_seconds: float = 10.0) -> None:
        self.db = db
        self.board = board
        self.rebuilder = rebuilder
        self.lifecycle = lifecycle
        self.housekeeping_seconds = housekeeping_seconds
        self._last_housekeeping = 0.0
        self.notifier = notifier
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

    async def apply_now(self, seqs: list[int], heal_wait_seconds: float) -> None:
        """The fast path: apply the rows an ingest just committed. A season
        without a board is healed (rebuilt from PostgreSQL, which holds these
        completions already), then the rows are claimed again: applying them
        is then a no-op, unless the heal is still running; then the projector
        finishes the job."""
        _, missing = await self._claim_and_apply("claim_outbox_seqs", "fast", seqs=seqs)
        if missing:
            await failpoints.pause("fast_missing")
            await self.rebuilder.heal(missing, heal_wait_seconds)
            await self._claim_and_apply("claim_outbox_seqs", "fast", seqs=seqs)
            for season in sorted(missing):  # the board changed; name nobody
                await self.board.publish_hint({"season": season})

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

    async def housekeeping(self, force: bool = False) -> None:
        """Notifications from the rank-event streams; now and then: finalize
        closed seasons, finish interrupted erasures."""
        if self.notifier is not None:
            await self.notifier.consume()
        now = asyncio.get_running_loop().time()
        if not force and now - self._last_housekeeping < self.housekeeping_seconds:
            return
        self._last_housekeeping = now
        depth = await self.db.fetch_one("outbox_depth")
        if depth:
            OUTBOX_DEPTH.set(int(depth["depth"]))
            OUTBOX_AGE.set(float(depth["oldest_seconds"]))
        await self.rebuilder.prepare()
        await self.lifecycle.finalize_due()
        await self.lifecycle.resume_erasures()

    async def run(self, stop: asyncio.Event) -> None:
        """Loop until `stop` is set; survives PostgreSQL and Redis outages."""
        while not stop.is_set():
            try:
                async with await psycopg.AsyncConnection.connect(
                        self.db.url, autocommit=True) as listener:
                    await listener.execute(f"LISTEN {CHANNEL}")
                    while not stop.is_set():
                        await self.drain()
                        await self.housekeeping()
                        async for _ in listener.notifies(timeout=self.poll_seconds,
                                                         stop_after=1):
                            pass
            except (psycopg.Error, RedisError, RedisClusterException, OSError) as exc:
                log.warning("projector: %s; retrying in 1 s", exc)
                try:
                    await asyncio.wait_for(stop.wait(), 1.0)
                except TimeoutError:
                    pass
