"""Notice Redis going back in time, and repair every board exactly.

Redis with snapshots or `appendfsync everysec` can restart from a state a
moment (or an hour) older than the last applies; so can a failover to a
lagging replica. Season markers survive such a rollback, so nothing else
would notice: the last applies, their idempotency bits, erasures and profile
changes are simply gone.

Every restart or failover gives the server a new `run_id`. This process
watches the run ids of the Redis servers (every primary, on a cluster) and
compares them with the fingerprint recorded in PostgreSQL. When they differ,
one process (a row lock decides which) rebuilds every board that Redis still
holds from PostgreSQL, then records the new fingerprint. Boards Redis lost
altogether heal on first use, as before. A rebuild is exact whatever the age
of the snapshot, and readers keep the old board until the new one switches
in. The cost in steady state is one `INFO server` a second per process.
"""

from __future__ import annotations

import asyncio
import logging

from laurels.board import Board
from laurels.db import Database
from laurels.rebuild import Rebuilder, RebuildFailed, RebuildRunning

log = logging.getLogger("laurels.epoch")

CHECK_SECONDS = 1.0
RUNNING_RETRY_SECONDS = 0.5
RUNNING_RETRIES = 120  # a rebuild already running: wait for it, then build again


class EpochWatch:
    def __init__(self, db: Database, board: Board, rebuilder: Rebuilder) -> None:
        self.db = db
        self.board = board
        self.rebuilder = rebuilder
        self.seen = ""  # the fingerprint known to be repaired for
        self.repairs = 0

    async def check(self) -> bool:
        """Repair if Redis changed since the boards were last known good;
        True when this call repaired."""
        now = await self.board.fingerprint()
        if now == self.seen:
            return False
        prefix = self.board.keys.prefix
        await self.db.run("ensure_redis_epoch", key_prefix=prefix)
        async with self.db.transaction() as conn:
            row = await self.db.fetch_one("lock_redis_epoch", conn, key_prefix=prefix)
            if row is None:
                return False  # another process is repairing; look again later
            if row["fingerprint"] == now:
                self.seen = now
                return False
            if row["fingerprint"]:
                log.warning("Redis changed (run id %s -> %s): rebuilding every board it "
                            "holds", row["fingerprint"], now)
            else:  # none recorded yet (a first start): nothing changed, record it
                log.info("Redis run id %s recorded (none before); checking the boards it "
                         "holds", now)
            await self.repair()
            if await self.board.fingerprint() != now:
                return False  # it changed again meanwhile: repair again next time
            await self.db.run("set_redis_epoch", conn, key_prefix=prefix, fingerprint=now)
        self.seen = now
        self.repairs += 1
        return True

    async def repair(self) -> list[str]:
        """Rebuild every season whose board Redis holds; returns them."""
        rebuilt = []
        for row in await self.db.fetch("all_seasons"):
            season = row["season"]
            if not await self.board.present(season):
                continue  # lost altogether: it heals on first use
            for _ in range(RUNNING_RETRIES):
                try:
                    await self.rebuilder.run(season)
                    rebuilt.append(season)
                    break
                except RebuildRunning:  # started before the change: build again after it
                    await asyncio.sleep(RUNNING_RETRY_SECONDS)
                except RebuildFailed as exc:
                    log.warning("repair rebuild of %s failed (%s); trying again", season, exc)
                    await asyncio.sleep(RUNNING_RETRY_SECONDS)
            else:
                raise RebuildFailed(f"could not rebuild {season} after Redis changed")
        return rebuilt

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.check()
            try:
                await asyncio.wait_for(stop.wait(), CHECK_SECONDS)
            except TimeoutError:
                pass
