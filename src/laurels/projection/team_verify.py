"""Team boards checked (`laurels verify --all`): each team board Redis keeps
(board/teams.py) against the same teams computed from PostgreSQL, the
season's completions that count and the memberships now
(`team_standings_counted`): every team's score, member count and rank.

A board is first brought to PostgreSQL's count of membership changes
(lifecycle/teams.py `ready`: a board that missed one is filled again), so
what differs here is a score the board kept wrong. An all-time board built
from archived weeks (lifecycle/history.py) is left to its learners'
board's own verify, which compares it with the archives: not here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from laurels.board.roles import TeamReader
from laurels.core.seasons import Period, Season
from laurels.db import Database
from laurels.lifecycle.history import history_of
from laurels.lifecycle.team_rules import ranked
from laurels.lifecycle.teams import Teams
from laurels.lifecycle.windows import Windows

ALL = 1 << 30  # (every team of a board in one read)


@dataclass
class TeamDifference:
    user_id: str  # the team's group id (named so for `verify --all`'s listing)
    difference: str


@dataclass
class TeamCheck:
    team: str
    season: Season
    players_checked: int = 0  # teams checked
    mismatches: list[TeamDifference] = field(default_factory=list)

    @property
    def consistent(self) -> bool:
        return not self.mismatches

    @property
    def mismatch_count(self) -> int:
        return len(self.mismatches)


class TeamChecker:
    def __init__(self, db: Database, board: TeamReader, teams: Teams, windows: Windows,
                 periods: tuple[Period, ...]) -> None:
        self.db = db
        self.board = board
        self.teams = teams
        self.windows = windows
        self.periods = periods

    async def every(self) -> list[tuple[str, Season]]:
        """Every team board Redis keeps, of a kind still defined."""
        kinds = {k.team for k in await self.teams.all()}
        return [(t, s) for t, s in await self.teams.boards() if t in kinds]

    async def verify(self, team: str, season: Season) -> TeamCheck:
        check = TeamCheck(team, season)
        kind = await self.teams.get(team)
        version = await self.teams.ready(season, kind)
        if version is None:
            return check  # no board in Redis any more: nothing kept to compare
        found = await self.board.team_top(season, version, team, 0, ALL)
        if found is None:
            check.mismatches.append(TeamDifference("", "the board changed while read"))
            return check
        _, kept = found
        params: dict[str, Any] = {}
        if season.window:
            params["window_starts"] = await self.windows.starts(season)
        if await history_of(self.db, self.periods, season) is not None:
            return check  # (see the module)
        expected = ranked(kind, await self.db.fetch(
            "team_standings_counted", season=season, team=team, top=kind.top or 0, **params))
        by_group = {r.group_id: r for r in kept}
        check.players_checked = len(expected)
        for want in expected:
            got = by_group.pop(want.group_id, None)
            if got != want:
                check.mismatches.append(TeamDifference(
                    want.group_id, f"Redis {_shown(got)}, PostgreSQL {_shown(want)}"))
        for extra in by_group.values():
            check.mismatches.append(TeamDifference(
                extra.group_id, f"Redis {_shown(extra)}, PostgreSQL none"))
        return check


def _shown(row: Any) -> str:
    if row is None:
        return "none"
    return f"score {row.score}, {row.members} members, rank {row.rank}"
