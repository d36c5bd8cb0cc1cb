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
from typing import TYPE_CHECKING

import psycopg
from redis.exceptions import RedisClusterException, RedisError

from laurels.board import Board, Event, Profile
from laurels.board.rebuild import Rebuilder
from laurels.db import Database
from laurels.lifecycle import Lifecycle
from laurels.metrics import APPLY_LAG, OUTBOX_AGE, OUTBOX_DEPTH

if TYPE_CHECKING:
    from laurels.notify import Notifier

log = logging.getLogger("laurels.projector")

CHANNEL = "laurels_outbox"
HEAL_WAIT_SECONDS = 30.0  # the claimed rows stay locked meanwhile; others go on


class Projector:
    def __init__(self, db: Database, board: Board, rebuilder: Rebuilder,
                 lifecycle: Lifecycle, batch_size: int = 500, poll_seconds: float = 0.5,
                 min_age_seconds: float = 1.0, housekeeping_seconds: float = 10.0) -> None:
        self.db = db
        self.board = board
        self.rebuilder = rebuilder
        self.lifecycle = lifecycle
        self.housekeeping_seconds = housekeeping_seconds
        self._last_housekeeping = 0.0
        self.notifier: Notifier | None = None  # set by the runtime
        self.batch_size = batch_size
        self.poll_seconds = poll_seconds
        self.min_age_seconds = min_age_seconds
        self.applied_total = 0

    async def drain_once(self, min_age_seconds: float | None = None) -> int:
        """Claim one batch, apply it, delete what was applied. Returns rows handled."""
        age = self.min_age_seconds if min_age_seconds is None else min_age_seconds
        async with self.db.transaction() as conn:
            rows = await self.db.fetch("claim_outbox", conn, min_age_seconds=age,
                                       limit=self.batch_size)
            if not rows:
                return 0
            events = [Event(r["seq"], r["user_id"], r["points"], r["completed_at"], r["season"],
                            Profile(r["profile_version"], r["visibility"], r["display_name"]))
                      for r in rows]
            results = await self.board.apply(events)
            missing = {ev.season for ev, res in zip(events, results, strict=True)
                       if res == "missing"}
            if missing:
                # A finalized season is read from its archive (built from the
                # completions themselves): nothing is left to apply.
                archived = await self.lifecycle.finalized(sorted(missing))
                for i, ev in enumerate(events):
                    if results[i] == "missing" and ev.season in archived:
                        results[i] = "archived"
                missing -= set(archived)
            if missing:
                # The rows stay locked while their seasons are rebuilt; the
                # rebuild reads completions, which already hold these events.
                log.info("seasons %s have no board: rebuilding", sorted(missing))
                await self.rebuilder.heal(missing, HEAL_WAIT_SECONDS)
                retry = [i for i, res in enumerate(results) if res == "missing"]
                again = await self.board.apply([events[i] for i in retry])
                for i, res in zip(retry, again, strict=True):
                    results[i] = res
            done = [ev.seq for ev, res in zip(events, results, strict=True) if res != "missing"]
            if done:
                await self.db.execute("delete_outbox", conn, seqs=done)
        for r, res in zip(rows, results, strict=True):
            if res != "missing":
                APPLY_LAG.labels("projector").observe(float(r["queued_seconds"]))
        self.applied_total += len(done)
        return len(done)

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
