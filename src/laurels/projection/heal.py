"""Self-healing: a season whose board is missing from Redis (never built,
or lost with a restart, a flush, a failover) is rebuilt from PostgreSQL on
first use, once per process, by one process at a time (the rebuild's lock);
meanwhile its reads answer `503 rebuilding` and its deltas wait in the
outbox. `prepare` builds each configured period's current board (and the
next, near its end) ahead of its first completion, so first completions
are applied live, with their hints and rank events, rather than absorbed by
a first build.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from laurels.board.roles import Presence
from laurels.core.seasons import END_OF_TIME, Period, Season
from laurels.core.spans import seasons_of
from laurels.projection.filling import BOARDS_AT_ONCE, board_of, group_of
from laurels.projection.rebuild import Rebuilder, RebuildResult, RebuildRunning, retrieved

if TYPE_CHECKING:
    from laurels.lifecycle.closing import Lifecycle

log = logging.getLogger("laurels.heal")

# How long a caller waits for a missing board to be healed: a request (a
# read, the fast path of an ingest) briefly, then answers 503 or leaves the
# rest to the projector; background work (projector, prepare) longer.
REQUEST_HEAL_WAIT_SECONDS = 2.0
BACKGROUND_HEAL_WAIT_SECONDS = 30.0
HEALS_AT_ONCE = 2  # boards a process builds at once when healing


class Healer:
    def __init__(self, board: Presence, rebuilder: Rebuilder, lifecycle: Lifecycle | None = None,
                 periods: tuple[Period, ...] = ("week",), *, zone: str) -> None:
        self.board = board
        self.zone = zone  # the calendar of `prepare`'s seasons (LAURELS_TIME_ZONE)
        self.rebuilder = rebuilder
        self.lifecycle = lifecycle
        self.periods = periods  # the boards `prepare` creates ahead
        self._local: dict[Season, asyncio.Task[RebuildResult | None]] = {}
        # Heals build at most this many boards at once in a process (each
        # holds a pooled connection for its snapshot): with several periods,
        # a start-up or a Redis restart finds many boards missing at once.
        self._slots = asyncio.Semaphore(HEALS_AT_ONCE)
        # Boards of kinds waiting for a slot, by group (rebuild.group_of).
        self._waiting: dict[str, dict[Season, asyncio.Future[RebuildResult | None]]] = {}
        self._group_builds = 0  # slots building boards of kinds now

    def ensure(self, season: Season) -> asyncio.Task[RebuildResult | None]:
        """Start (once per process) a rebuild of a season whose board is missing."""
        task = self._local.get(season)
        if task is None or task.done():
            task = asyncio.create_task(self._heal(season))
            task.add_done_callback(retrieved)
            self._local[season] = task
        return task

    async def heal(self, seasons: set[Season], wait_seconds: float) -> bool:
        """Rebuild the seasons whose board is missing (here, or by waiting on
        another process that builds them); True once every board is back.
        Waits at most about `wait_seconds`; a rebuild still running goes on."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        tasks = {season: self.ensure(season) for season in seasons}
        for season, task in tasks.items():
            try:
                await asyncio.wait_for(asyncio.shield(task),
                                       max(0.0, deadline - loop.time()))
            except TimeoutError:
                log.info("rebuild of %s still running", season)
            except Exception as exc:  # recorded as failed; the next heal tries again
                log.warning("rebuild of %s failed: %s", season, exc)
        present = True
        for season in seasons:  # another process may hold the lock and be building
            present &= await self.board.wait_present(season,
                                                     max(0.1, deadline - loop.time()))
        return present

    async def prepare(self, now: datetime | None = None) -> None:
        """Create the current board of every configured period ahead of its
        first completion (and the next one near the end of this one), so
        first completions are applied live, with their hints and rank events,
        rather than absorbed by a first build."""
        now = now or datetime.now(UTC)
        seasons = []
        for this in seasons_of(now, self.periods, zone=self.zone):
            seasons.append(this)
            lead = timedelta(hours=1) if this.period == "day" else timedelta(days=1)
            if this.bounded and this.ends_at - now < lead and this.ends_at < END_OF_TIME:
                seasons.append(this.next())
        await self.heal(set(seasons), BACKGROUND_HEAL_WAIT_SECONDS)

    async def _heal(self, season: Season) -> RebuildResult | None:
        group = group_of(season)
        if group is not None:
            return await self._heal_together(season, group)
        if await self.board.present(season):
            return None
        if self.lifecycle and await self.lifecycle.finalized([season]):
            return None  # a finalized season is read from its archive
        async with self._slots:
            if await self.board.present(season):
                return None  # built meanwhile (by another process)
            try:
                return await self.rebuilder.run(season)
            except RebuildRunning:
                return None  # another process is building it

    async def _heal_together(self, season: Season, group: str) -> RebuildResult | None:
        """A board of a kind waits with the others of its group: whoever gets
        a slot builds its share of those waiting, from one scan (run_many)."""
        mine: asyncio.Future[RebuildResult | None] = asyncio.get_running_loop().create_future()
        mine.add_done_callback(retrieved)  # its own heal may be gone by then
        self._waiting.setdefault(group, {})[season] = mine
        while not mine.done():
            if self._waiting.get(group, {}).get(season) is not mine:
                await asyncio.wait([mine])  # taken by a build under way
                break
            async with self._slots:
                if self._waiting.get(group, {}).get(season) is mine:
                    self._group_builds += 1
                    try:
                        await self._build_group(group, HEALS_AT_ONCE - self._group_builds + 1)
                    finally:
                        self._group_builds -= 1
        return mine.result()

    async def _build_group(self, group: str, free: int) -> None:
        """Build a share of the boards of `group` waiting for a slot (those
        heals started in the same turn have joined: one yield), split over
        the `free` slots not building boards of kinds already, this one
        included (at most BOARDS_AT_ONCE), and settle each one's future. (Split
        over every slot, the second took half of what the first left, the
        next half of that: a tail of ever smaller scans.)"""
        await asyncio.sleep(0)
        waiting = self._waiting.get(group, {})
        share = min(BOARDS_AT_ONCE, -(-len(waiting) // max(1, free)))
        # By name, and never part of a board's periods (its week, its all
        # time): one scan deals each of its completions to all of them.
        names = sorted(waiting)
        while share < len(names) and board_of(names[share]) == board_of(names[share - 1]):
            share += 1
        batch = {season: waiting[season] for season in names[:share]}
        for season in batch:
            del waiting[season]
        if not waiting:
            self._waiting.pop(group, None)
        try:
            # Present (built meanwhile, by another process), or finalized
            # (read from its archive): nothing to build.
            done = set(await self.lifecycle.finalized(list(batch))) if self.lifecycle else set()
            todo = []
            for season, settled in batch.items():
                if season in done or await self.board.present(season):
                    settled.set_result(None)
                else:
                    todo.append(season)
            outcome = await self.rebuilder.run_many(todo) if todo else {}
        except BaseException as exc:
            for settled in batch.values():
                if settled.done():
                    continue
                if isinstance(exc, asyncio.CancelledError):
                    settled.cancel()
                else:
                    settled.set_exception(exc)
            raise
        for season in todo:
            settle(batch[season], outcome.get(season))


def settle(waiter: asyncio.Future[RebuildResult | None],
           result: RebuildResult | BaseException | None) -> None:
    """A waiting heal's outcome: built, failed, or built elsewhere (None)."""
    if isinstance(result, RebuildRunning) or result is None:
        waiter.set_result(None)  # another process is building it
    elif isinstance(result, BaseException):
        waiter.set_exception(result)
    else:
        waiter.set_result(result)


