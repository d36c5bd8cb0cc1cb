"""Notice Redis going back in time, and repair every board exactly, at the
cost of what Redis lost.

Redis with snapshots or `appendfsync everysec` can restart from a state a
moment (or an hour) older than the last applies; so can a failover to a
lagging replica. Season markers survive such a rollback, so nothing else
would notice: the last applies, their idempotency bits, erasures and profile
changes are simply gone.

Every restart or failover gives the server a new `run_id`. This process
watches the run ids of the Redis servers (every primary, on a cluster) and
compares them with the fingerprint recorded in PostgreSQL. When they differ,
one process (a row lock decides which) catches every board that Redis still
holds up with PostgreSQL (projection/catchup.py: only what the board lacks is applied
again, found from its idempotency bits, corrections and profiles), and
rebuilds the ones it cannot prove otherwise whole; then it records the new
fingerprint. Boards Redis lost altogether heal on first use, as before. What
is applied again is what Redis lost; proving the rest is there reads each
board's completion ids (about a tenth of a rebuild's cost: docs/
performance.md, "A Redis restart"). In steady state it costs one `INFO
server` a second per process.
"""

from __future__ import annotations

import asyncio
import logging

from laurels.board.roles import Epochs
from laurels.core.seasons import Season, season_named
from laurels.db import Database
from laurels.lifecycle.board_kinds import BoardKinds
from laurels.projection.catchup import CatchUp
from laurels.projection.filling import RebuildFailed
from laurels.projection.rebuild import Rebuilder, RebuildRunning

log = logging.getLogger("laurels.epoch")

CHECK_SECONDS = 1.0
RUNNING_RETRY_SECONDS = 0.5
RUNNING_RETRIES = 120  # a rebuild already running: wait for it, then build again
REPAIR_CONCURRENCY = 8  # seasons caught up side by side (repair)


class EpochWatch:
    def __init__(self, db: Database, board: Epochs, rebuilder: Rebuilder,
                 catchup: CatchUp, kinds: BoardKinds | None = None) -> None:
        self.db = db
        self.board = board
        self.rebuilder = rebuilder
        self.catchup = catchup
        self.kinds = kinds
        self.seen = ""  # the fingerprint known to be repaired for
        self.repairs = 0

    async def check(self) -> bool:
        """Repair if Redis changed since the boards were last known good;
        True when this call repaired."""
        now = await self.board.fingerprint()
        trust = self.board.trust
        if now == self.seen:
            await trust.settle(now, now)  # a doubt of a server gone meanwhile
            return False
        prefix = self.board.keys.prefix
        await self.db.run("ensure_redis_epoch", key_prefix=prefix)
        async with self.db.transaction() as tx:
            row = await self.db.fetch_one("lock_redis_epoch", tx, key_prefix=prefix)
            if row is None:
                return False  # another process is repairing; look again later
            if row["fingerprint"] == now:
                self.seen = now
                await trust.settle(now, now)
                return False
            if row["fingerprint"]:
                log.info("Redis changed (run id %s -> %s): catching every board it holds up "
                         "with PostgreSQL", row["fingerprint"], now)
            else:  # none recorded yet (a first start): nothing changed, record it
                log.info("Redis run id %s recorded (none before); checking the boards it "
                         "holds", now)
            rebuilt, replayed, lost = await self.repair()
            if rebuilt or replayed:
                log.warning("Redis had gone back in time (run id %s -> %s): %d completions, "
                            "corrections and profiles applied again, %d boards rebuilt",
                            row["fingerprint"] or "none", now, replayed, len(rebuilt))
            if lost and row["fingerprint"]:  # (a first start's Redis may be new: no loss)
                log.warning("Redis came back without %d open boards PostgreSQL holds (run id "
                            "%s -> %s: emptied, or a new server): each is rebuilt from "
                            "PostgreSQL on first use", lost, row["fingerprint"], now)
            if await self.board.fingerprint() != now:
                return False  # it changed again meanwhile: repair again next time
            await self.db.run("set_redis_epoch", tx, key_prefix=prefix, fingerprint=now)
        self.seen = now
        await trust.settle(now, now)  # proven: this process reads again at once
        self.repairs += 1
        return True

    async def recorded(self) -> str:
        """The fingerprint PostgreSQL records the boards repaired for ('' none)."""
        row = await self.db.fetch_one("redis_epoch", key_prefix=self.board.keys.prefix)
        return str(row["fingerprint"]) if row else ""

    async def load(self) -> None:
        """This process's trust at its start: what PostgreSQL records, and
        the servers as they are (a Redis restarted while no process ran is
        doubted until the repair)."""
        self.board.trust.load(await self.recorded(), await self.board.fingerprint())

    async def repair(self) -> tuple[list[Season], int, int]:
        """Catch every season whose board Redis holds up with PostgreSQL, or
        rebuild it when it cannot be; returns the ones rebuilt, how many
        facts (completions, corrections, profiles) were applied again, and
        how many open seasons' boards Redis lacks (they heal on first use).
        REPAIR_CONCURRENCY seasons at a time: each is independent, and a
        kind may have 10,000 boards (issue 42)."""
        turns = asyncio.Semaphore(REPAIR_CONCURRENCY)
        if self.kinds is not None:  # boards of kinds deleted since Redis's snapshot
            await self.kinds.drop_undefined()

        async def one(season: Season) -> tuple[bool, int]:
            async with turns:
                return await self._repair(season)

        rows = await self.db.fetch("all_seasons")
        seasons = [season_named(row["season"], self.db.zone) for row in rows]
        outcomes = await asyncio.gather(*(one(s) for s in seasons), return_exceptions=True)
        done: list[tuple[bool, int]] = []
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
            done.append(outcome)
        lost = sum(1 for row, (_, n) in zip(rows, done, strict=True)
                   if n < 0 and not row["finalized"])
        return ([s for s, (rebuilt, _) in zip(seasons, done, strict=True) if rebuilt],
                sum(max(n, 0) for _, n in done), lost)

    async def _repair(self, season: Season) -> tuple[bool, int]:
        """One season caught up (False, facts applied again), rebuilt (True,
        0) or absent from Redis (False, -1)."""
        if not await self.board.present(season):
            return False, -1  # lost altogether: it heals on first use
        caught = await self.catchup.season(season)
        if caught is not None:
            replayed = caught.completions + caught.corrections + caught.profiles
            if replayed:
                log.info("%s caught up: %d completions, %d corrections, %d profiles "
                         "applied again", season, caught.completions, caught.corrections,
                         caught.profiles)
            return False, replayed
        log.warning("%s cannot be caught up (a version was being built, or part of it "
                    "is gone): rebuilding it", season)
        for _ in range(RUNNING_RETRIES):
            try:
                await self.rebuilder.run(season)
                return True, 0
            except RebuildRunning:  # started before the change: build again after it
                await asyncio.sleep(RUNNING_RETRY_SECONDS)
            except RebuildFailed as exc:
                log.warning("repair rebuild of %s failed (%s); trying again", season, exc)
                await asyncio.sleep(RUNNING_RETRY_SECONDS)
        raise RebuildFailed(f"could not rebuild {season} after Redis changed")

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.check()
            try:
                await asyncio.wait_for(stop.wait(), CHECK_SECONDS)
            except TimeoutError:
                pass
