"""Team boards read (CONTRACT.md, "Team boards"): a kind's teams ranked by
the aggregate of their members' scores on a board and season, and a
learner's teams.

An open season's team board is read from Redis (board/teams.py), kept as
its members score and move; it is filled from PostgreSQL's memberships
when first read (lifecycle/teams.py). A finalized season's is computed from
its archive and the memberships now, as a group's board is. Ties share a
rank (then by group id).

The members-only rule: a team whose group is members-only is listed with
`group_id` and `name` null to a caller who may not read that group (no
token, or a learner token of a non-member); its rank, score and member
count are the board's, and tell nothing of who is in it.
"""

from __future__ import annotations

from laurels.board import BoardMissing, TeamRow
from laurels.board.roles import TeamReader
from laurels.core import team_shapes
from laurels.core.errors import DomainError
from laurels.core.seasons import Season
from laurels.db import Database
from laurels.lifecycle.team_rules import TeamKind, ranked
from laurels.lifecycle.teams import Teams
from laurels.reads.boards import Reads

Caller = int | str | None  # a learner's id, "platform" (ingest or admin token), or None


class TeamReads:
    def __init__(self, db: Database, board: TeamReader, reads: Reads, teams: Teams) -> None:
        self.db = db
        self.board = board
        self.reads = reads
        self.teams = teams

    async def _live(self, season: Season, kind: TeamKind, offset: int, limit: int
                    ) -> tuple[int, list[TeamRow]]:
        for _ in range(3):  # (a rebuild may switch the version between the two)
            version = await self.teams.ready(season, kind)
            if version is None:
                raise BoardMissing(season)
            page = await self.board.team_top(season, version, kind.team, offset, limit)
            if page is not None:
                return page
        raise DomainError("rebuilding", f"the teams of {season.shown} are being filled; "
                          "retry shortly", retry_after=1)

    async def standings(self, season: Season, kind: TeamKind, offset: int, limit: int
                        ) -> tuple[int, list[TeamRow]]:
        """(how many teams, a page of them from `offset`)."""

        async def live() -> tuple[int, list[TeamRow]]:
            return await self._live(season, kind, offset, limit)

        async def archived(_policy: str) -> tuple[int, list[TeamRow]]:
            rows = ranked(kind, await self.db.fetch(
                "team_standings_archived", season=season, team=kind.team, top=kind.top or 0))
            return len(rows), rows[offset:offset + limit]

        found: tuple[int, list[TeamRow]] = await self.reads.with_board(
            season, live, archived, lambda: (0, []))
        return found

    async def page(self, team: str, season: Season, offset: int, limit: int,
                    caller: Caller) -> tuple[team_shapes.TeamBoard, int | None]:
        """A page of the kind's team board, and the offset of the next page
        (None for the last)."""
        kind = await self.teams.get(team)
        total, rows = await self.standings(season, kind, offset, limit)
        shown = await self._shown(rows, caller)
        body: team_shapes.TeamBoard = {
            "team": kind.team, "title": kind.title, "season": season.label,
            "board": season.board, "aggregate": kind.aggregate, "top": kind.top,
            "total": total, "next": None,
            "entries": [{"rank": r.rank, "group_id": shown[r.group_id][0],
                         "name": shown[r.group_id][1], "score": r.score,
                         "members": r.members} for r in rows]}
        more = offset + len(rows) < total and bool(rows)
        return body, (offset + len(rows) if more else None)

    async def _shown(self, rows: list[TeamRow], caller: Caller
                     ) -> dict[str, tuple[str | None, str | None]]:
        """Each team's group id and name as this caller may see them."""
        found = {r["group_id"]: r for r in await self.db.fetch(
            "teams_shown", group_ids=[r.group_id for r in rows],
            user_id=caller if isinstance(caller, int) else None)} if rows else {}
        out: dict[str, tuple[str | None, str | None]] = {}
        for r in rows:
            g = found.get(r.group_id)
            readable = g is not None and (g["access"] == "public" or isinstance(caller, str)
                                          or bool(g["member"]))
            out[r.group_id] = (r.group_id, str(g["name"])) if readable and g else (None, None)
        return out

    async def of_learner(self, user_id: int, season: Season) -> team_shapes.LearnerTeams:
        """The learner's teams (every kind of the groups they count in), with
        each one's rank, score and what the learner's points add to it."""
        rows = await self.db.fetch("learner_teams", user_id=user_id)
        out: list[team_shapes.LearnerTeam] = []
        for team in dict.fromkeys(r["team"] for r in rows):
            kind = await self.teams.get(team)
            names = {r["group_id"]: r["name"] for r in rows if r["team"] == team}
            total, points, mine = await self._mine(season, kind, user_id, set(names))
            out += [{"team": team, "group_id": t.group_id, "name": names[t.group_id],
                     "rank": t.rank, "score": t.score, "total": total,
                     "contribution": kind.contribution(points, t.members, counted)}
                    for t, counted in mine if t.group_id in names]
        return {"teams": out}

    async def _mine(self, season: Season, kind: TeamKind, user_id: int, groups: set[str]
                    ) -> tuple[int, int, list[tuple[TeamRow, bool]]]:
        """(how many teams, the learner's points, their teams with whether
        their points count in each: on a `top` kind, when among its best)."""

        async def live() -> tuple[int, int, list[tuple[TeamRow, bool]]]:
            for _ in range(3):
                version = await self.teams.ready(season, kind)
                if version is None:
                    raise BoardMissing(season)
                of = await self.board.team_of(season, version, kind.team, user_id)
                if of is not None:
                    return of.total, of.points, of.teams
            raise DomainError("rebuilding", f"the teams of {season.shown} are being filled; "
                              "retry shortly", retry_after=1)

        async def archived(_policy: str) -> tuple[int, int, list[tuple[TeamRow, bool]]]:
            rows = ranked(kind, await self.db.fetch(
                "team_standings_archived", season=season, team=kind.team, top=kind.top or 0))
            row = await self.db.fetch_one("team_archived_score", season=season, user_id=user_id)
            points = int(row["score"]) if row else 0
            best = {str(r["group_id"]): r for r in await self.db.fetch(
                "archived_best_of", season=season, user_id=user_id, group_ids=sorted(groups),
                top=kind.top or 0)}
            return len(rows), points, [(r, kind.aggregate != "top" or r.group_id in best)
                                       for r in rows if r.group_id in groups]

        found: tuple[int, int, list[tuple[TeamRow, bool]]] = await self.reads.with_board(
            season, live, archived, lambda: (0, 0, []))
        return found
