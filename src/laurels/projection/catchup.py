"""A Redis restart costs what Redis lost: catch a board up, rebuild only
when it cannot be (issue 40; docs/operations.md, "When Redis restarts").

Redis restarted from an older snapshot (or a replica a second behind) still
holds boards that were exact when it was written: every script is atomic,
so each board's idempotency bits say exactly which completions it holds,
its corrections hash which corrections, its users hash which profile
versions. Catching a board up compares that with PostgreSQL and replays
only the difference, through the same scripts the live path uses:
- the completions whose bit is not set (with their state now: a voided
  one converges by its correction number);
- the corrections the board holds an older state of;
- the profiles the board holds an older version of (hidden learners are
  moved off the public set again);
- the tombstones of the learners erased since the season could concern
  them (as a rebuild puts them back), taking them off the board;
- a finalized season's expiry.
Traffic goes on meanwhile: a live apply and a replay of the same completion
meet on its bit. A board it cannot prove otherwise whole (a bitmap its
chunks set lists is gone, a version was being built) is rebuilt instead.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from laurels.board import Delta, Profile
from laurels.board.inspection import BoardChanged
from laurels.board.roles import Inspector
from laurels.core.seasons import Period, Season
from laurels.db import Database
from laurels.lifecycle.history import history_of
from laurels.projection.filling import LOAD_BATCH, SEQ_BATCH, Source
from laurels.projection.projector import Projector

if TYPE_CHECKING:
    from laurels.lifecycle.closing import Lifecycle
    from laurels.lifecycle.windows import Windows

log = logging.getLogger("laurels.catchup")
PROFILES_BY_LEARNERS = 10_000  # a board with fewer: its own learners' profiles (_profiles)


@dataclass
class CaughtUp:
    """What catching one board up replayed."""

    season: Season
    completions: int = 0
    corrections: int = 0
    profiles: int = 0


class CatchUp:
    def __init__(self, db: Database, board: Inspector, projector: Projector, lifecycle: Lifecycle,
                 periods: tuple[Period, ...], windows: Windows | None = None) -> None:
        self.db = db
        self.board = board
        self.projector = projector
        self.lifecycle = lifecycle
        self.periods = periods
        self.windows = windows

    async def season(self, season: Season) -> CaughtUp | None:
        """Catch a season's board up with PostgreSQL; None when it cannot be
        (no board, a version being built, a bitmap gone): rebuild it then."""
        state = await self.board.board_state(season)
        if state is None or state.building or not state.intact:
            return None
        done = CaughtUp(season)
        erased = await self._tombstones(season)
        history = await history_of(self.db, self.periods, season)
        if history is not None and not set(history.parts) <= await self.board.parts_of(
                season, state.version):
            # Its reads and rebuilds stand on archives this version was not
            # built from (a season finalized since the snapshot Redis came
            # back from): what it lacks cannot be told from them. Rebuilt.
            return None
        # A rolling window: the days its marker (as restored) still holds
        # (without one it cannot tell them: rebuilt).
        held_from = await self.windows.held_from(season) if self.windows else None
        if season.window and held_from is None:
            return None
        source = Source.of(season, history, held_from)
        missing: list[int] = []
        try:
            async with self.db.snapshot() as tx:
                async for seqs in self.db.stream_column(source.seqs, tx, SEQ_BATCH,
                                                        **source.params):
                    missing += await self.board.missing(season, state.version, seqs)
                corrections = await self.db.fetch("season_corrections", tx, season=season,
                                                  **source.window)
        except BoardChanged:
            return None  # a rebuild switched meanwhile: it has them all
        held, replayed = await self.board.corrections_of(season, state.version), set(missing)
        stale = [r["seq"] for r in corrections if r["seq"] not in replayed and held.get(
            r["seq"]) != (r["correction"], r["counted"])]
        done.completions, done.corrections = len(missing), len(stale)
        for i in range(0, len(missing) + len(stale), LOAD_BATCH):
            await self._replay(season, (missing + stale)[i:i + LOAD_BATCH])
        done.profiles = await self._profiles(season, state.version)
        if season.window and self.windows is not None:  # its days left since, out again
            await self.windows.move(season, self.windows.clock())
        if await self.lifecycle.finalized([season]):
            await self.lifecycle.expire(season)
        if erased or done.completions or done.corrections or done.profiles:
            # What readers see changed: every process drops its cached pages
            # of the season (a page cached before the restart is older than
            # the truth the repair put back, never newer: reads were refused
            # meanwhile, board/trust.py).
            await self.board.publish_hint({"season": season.name})
        return done

    async def _replay(self, season: Season, seqs: list[int]) -> None:
        """Apply these completions again, each with its state now, to this
        season's board only (the projector's path: a void's tie time)."""
        rows = await self.db.fetch("replay_rows", seqs=seqs)
        deltas = [d for d in await self.projector.boards_of(
            [Delta.from_row(r, self.db.zone) for r in rows]) if d.season.name == season.name]
        if deltas:
            await self.projector.apply(deltas)

    async def _profiles(self, season: Season, version: str) -> int:
        """Profiles the board holds an older version of, projected again:
        on a board of at most PROFILES_BY_LEARNERS learners (a board of a
        kind's, most often), its own learners' profiles; else every profile
        ever set, streamed (10,000 boards each reading every profile of
        200,000 learners would take hours)."""
        ids = await self.board.learners(season, version, PROFILES_BY_LEARNERS)
        if ids is not None:
            rows = await self.db.fetch("learner_profiles", user_ids=ids) if ids else []
            return await self._reproject(season, rows)
        changed = 0
        async with self.db.transaction() as tx:
            async for rows in self.db.stream("profiled_users", tx, LOAD_BATCH):
                changed += await self._reproject(season, rows)
        return changed

    async def _reproject(self, season: Season, rows: list[Any]) -> int:
        on_board = await self.board.profile_versions(season, [r["user_id"] for r in rows])
        changed = 0
        for r in rows:
            held = on_board.get(r["user_id"])
            if held is not None and held < r["profile_version"]:
                await self.board.set_profile(season, r["user_id"], Profile(
                    r["profile_version"], r["visibility"], r["display_name"]))
                changed += 1
        return changed

    async def _tombstones(self, season: Season) -> int:
        """The season's tombstones put back (every learner erased since the
        season could concern them, as a rebuild does), each off the board
        and out of its stream (erase.lua); how many."""
        since, until = self.lifecycle.erasures_since(season), self.lifecycle.expires_at(season)
        done = 0
        async with self.db.transaction() as tx:
            async for ids in self.db.stream_column("erased_since", tx, LOAD_BATCH,
                                                   since=since):
                for user_id in ids:
                    done += await self.board.erase(season, user_id, until)
        return done

