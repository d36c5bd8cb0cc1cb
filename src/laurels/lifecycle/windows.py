"""Rolling windows moved at each local midnight (CONTRACT.md, "Rolling
windows"; docs/design.md, "Rolling windows").

A window (`last-7d`, `last-30d`) is one board that every completion reaches
like any other period's, and that keeps the first local day it holds in its
marker (board/windows.py): apply.lua leaves alone any entry of an earlier
day. When the clock's window starts later than the marker, `move`:

1. advances the marker (`from`): from then on no apply touches a completion
   of the days leaving, so what the window holds of them is fixed;
2. takes each of those completions out, as a correction numbered
   WINDOW_LEFT (apply.lua, "Windows"): one script call per batch, exactly
   once (the number converges like a void's), each reading what the window
   itself recorded of it (counted, voided, never applied), never a rebuild;
   on `best`, a learner whose best leaves falls back to their best of the
   days left, read from PostgreSQL after their mark in the ties hash (a
   void's protocol: an apply coming between makes it read again);
3. records the days done, then drops the marks (`forgot`), so the
   window's corrections hash does not grow with every day.

Reads go on throughout (each batch is atomic; a read between two sees
some learners of the leaving days out, others not yet). The work is in
proportion to the completions of the days leaving, whatever the window
holds. A step cut short is taken again from the marker: each is
idempotent. The marker does not move while a version is being built (its
snapshot reads from the marker's day), and a rebuild sets one where there
is none (projection/rebuild.py).

Lock order: the move takes no PostgreSQL lock (it reads a snapshot); on
Redis each step is one script on the window's slot.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from laurels.board import Delta, Profile
from laurels.board.lua_args import WINDOW_LEFT
from laurels.board.roles import WindowMarking, WindowMover
from laurels.core import failpoints
from laurels.core.seasons import GLOBAL, WINDOW_DAYS, Period, Season, season_named
from laurels.core.time_zones import local_date, local_midnight
from laurels.db import Database
from laurels.lifecycle.board_kinds import BoardKinds
from laurels.lifecycle.kind_rules import score_of

log = logging.getLogger("laurels.windows")

LEAVE_BATCH = 5_000  # completions read from PostgreSQL at a time
LEAVE_CALL = 100  # and taken out a script call (reads wait at most one: about 5 ms)
MAX_TIE_ROUNDS = 8  # a `best` learner read again this often is left to the next move
DEFAULT = Profile(0, "public", "")  # a stored newer profile wins (apply.lua)


class Windows:
    def __init__(self, db: Database, board: WindowMover, periods: tuple[Period, ...],
                 kinds: BoardKinds, clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 rebuild: Callable[[Season], Awaitable[Any]] | None = None) -> None:
        self.db = db
        self.board = board
        self.periods = periods
        self.kinds = kinds
        self.clock = clock
        self._moved: dict[str, str] = {}  # window -> the first day it was last moved to
        # A board whose marker was lost (a lost key) cannot tell the days it
        # holds: rebuilt (wire() hands the rebuilder's `run` here).
        self.rebuild = rebuild

    async def seasons(self) -> list[Season]:
        """Every window with a board to keep: the whole board's configured
        ones, and those of defined kinds that have been built."""
        names = [f"last-{p}" for p in self.periods if p in WINDOW_DAYS]
        kinds = await self.kinds.live()
        if not names and not any(p in WINDOW_DAYS for k in kinds.values() for p in k.periods):
            return []  # no window anywhere: nothing read (a tick a second)
        out = []
        for r in await self.db.fetch("window_seasons", names=names):
            season = season_named(r["season"], self.db.zone)
            if season.board == GLOBAL:
                out.append(season)
            elif (kind := kinds.get(season.kind or "")) is not None and kind.defines(season):
                out.append(season)
        return out

    async def tick(self) -> None:
        """Move every window the clock has moved (a loop's step: most ticks
        find each window where it was left, and ask Redis nothing)."""
        now = self.clock()
        for season in await self.seasons():
            first = season.window_from(local_date(now, season.zone)).isoformat()
            if self._moved.get(season.name) != first:
                if await self.move(season, now):
                    self._moved[season.name] = first

    async def move(self, season: Season, now: datetime) -> bool:
        """Bring one window to the clock (see the module's steps); False when
        it could not finish now (a version being built, a void read too
        often): the next tick takes it up."""
        first = season.window_from(local_date(now, season.zone)).isoformat()
        marker = await self.board.window(season)
        if not marker.current:
            return True  # no board: its build sets the marker from the clock
        if not marker.first:
            log.warning("%s lost its window marker: rebuilding it", season)
            if self.rebuild is not None:
                with contextlib.suppress(Exception):  # (one already running: it sets one)
                    await self.rebuild(season)
            return False  # (moved to the clock by the next tick, from its new marker)
        if marker.first < first:
            marker = await self.board.window(season, "advance", first)
            if marker.busy:
                return False
            await failpoints.pause("window_advanced")
        if marker.done < marker.first:
            if not await self._leave(season, marker.done, marker.first):
                return False
            marker = await self.board.window(season, "done", marker.first)
        if marker.forgot < marker.done:
            await self._forget(season, marker.forgot, marker.done, marker.current)
            await self.board.window(season, "forgot", marker.done)
        return True

    async def held_from(self, season: Season) -> datetime | None:
        """The first instant a window's board holds, by its marker as it is
        (None for a season that is no window, or a window without one)."""
        if not season.window:
            return None
        marker = await self.board.window(season)
        return local_midnight(date.fromisoformat(marker.first), season.zone) \
            if marker.first else None

    async def starts(self, season: Season) -> datetime:
        """The first instant the window holds, once moved to the clock (what
        `laurels verify` compares it with); the clock's when it has no board."""
        now = self.clock()
        await self.move(season, now)
        held = await self.held_from(season)
        return window_bounds(season, now)[0] if held is None else held

    def _span(self, season: Season, since: str, until: str) -> dict[str, object]:
        return {"since": local_midnight(date.fromisoformat(since), season.zone),
                "until": local_midnight(date.fromisoformat(until), season.zone),
                "board": season.board}

    async def _leave(self, season: Season, since: str, until: str) -> bool:
        """Take the completions of the days [since, until) out of the window."""
        span = self._span(season, since, until)
        async with self.db.transaction() as tx:
            async for rows in self.db.stream_tuples("window_leaving", tx, LEAVE_BATCH, **span):
                deltas = [Delta(seq, user_id, score_of(season.metric, points), at, season,
                                DEFAULT, WINDOW_LEFT, False,
                                part=local_date(at, season.zone).isoformat())
                          for seq, user_id, points, at in rows]
                for i in range(0, len(deltas), LEAVE_CALL):
                    if not await self._apply(season, deltas[i:i + LEAVE_CALL], until):
                        return False
                    await failpoints.pause("window_batch_left")
        return True

    async def _apply(self, season: Season, deltas: list[Delta], until: str) -> bool:
        """One batch out; on `best`, with each learner's fallback (see the
        module), read again for those an apply came between."""
        todo = deltas
        for _ in range(MAX_TIE_ROUNDS):
            if season.metric == "best":
                todo = await self._with_best(season, todo, until)
            results = await self.board.apply(todo)
            if "missing" in results or "deferred" in results:
                return False  # no board, or one being built: the next move
            todo = [d for d, r in zip(todo, results, strict=True) if r == "retry"]
            if not todo:
                return True
        return False

    async def _with_best(self, season: Season, deltas: list[Delta], until: str
                         ) -> list[Delta]:
        users = sorted({d.user_id for d in deltas})
        tokens = dict(zip(users, await self.board.mark_ties(season, users), strict=True))
        since = local_midnight(date.fromisoformat(until), season.zone)
        best = {r["user_id"]: r for r in await self.db.fetch(
            "window_best", user_ids=users, since=since, board=season.board)}
        out = []
        for d in deltas:
            row = best.get(d.user_id)
            out.append(d._replace(reset_at=row["last_at"] if row else None,
                                  reset_score=row["score"] if row else 0,
                                  tie_token=tokens[d.user_id]))
        return out

    async def _forget(self, season: Season, since: str, until: str, version: str) -> None:
        async with self.db.transaction() as tx:
            async for rows in self.db.stream_tuples("window_leaving", tx, LEAVE_BATCH,
                                                    **self._span(season, since, until)):
                await self.board.forget_left(season, version, [r[0] for r in rows])


def window_bounds(season: Season, now: datetime) -> tuple[datetime, datetime]:
    """What a window holds by the clock: from its first day's first instant
    to the next local midnight (a read's `starts_at` and `ends_at`)."""
    today = local_date(now, season.zone)
    return (local_midnight(season.window_from(today), season.zone),
            local_midnight(today + timedelta(days=1), season.zone))


async def build_starts(board: WindowMarking, season: Season, now: datetime) -> datetime | None:
    """Where a rebuild's snapshot of a rolling window starts: at its
    marker's first day, set here (to the clock's window) where there is
    none. It cannot move while the version is building (window.lua)."""
    if not season.window:
        return None
    first = season.window_from(local_date(now, season.zone)).isoformat()
    marker = await board.window(season, "begin", first)
    return local_midnight(date.fromisoformat(marker.first), season.zone)
