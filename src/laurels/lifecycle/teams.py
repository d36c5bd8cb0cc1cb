"""Team kinds, and who counts in their teams on the boards Redis keeps
(CONTRACT.md, "Team boards"; docs/design.md, "Team boards").

A team board (board/teams.py) is kept incrementally on the current version
of a season's board: apply.lua moves each team's score with its members'
points in the same call that moves theirs; here, who counts in which team
moves with the changes that make it (a membership, a group's team kind, a
suspension), and a board is filled from PostgreSQL when first read.

Exactly once, without a lock across the stores: each change of who counts
in a kind takes the kind's row FOR UPDATE, gives it a new count of changes
(`members_version`, from a sequence), and moves every team board of the kind
in Redis *before* it commits, each move checking that the board held the
count before it. A board that missed one (a process stopped between its
Redis call and its commit, a Redis back from an older snapshot) holds
another count than PostgreSQL and is filled again when next read; a fill
takes the same row lock, so no change runs while it reads. An erasure needs
no count: erase.lua takes the learner out of every team of the version, and
the season's tombstone keeps any later move or fill from putting them back.

Lock order (docs/concurrency.md): a writer's learners and group first, then
the team kinds' rows (`team_kind`, in name order); a fill takes only its
kind's row.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from laurels.board import TeamKindKey
from laurels.board.roles import TeamKeeper
from laurels.core import failpoints
from laurels.core.errors import DomainError
from laurels.core.seasons import Season
from laurels.db import Database, Tx
from laurels.lifecycle.team_rules import TeamKind, check_team, parse_team_kind

FILL_BATCH = 5_000  # learners read and filled a step
# A team kind defined or deleted is told every process as a group change
# of this name (its cached team pages drop: api/caches.py): no group id has
# a space.
KIND_CHANGED = "team kind "


def key_of(kind: TeamKind) -> TeamKindKey:
    return TeamKindKey(kind.team, kind.aggregate, kind.top or 0)


class Teams:
    def __init__(self, db: Database, board: TeamKeeper) -> None:
        self.db = db
        self.board = board
        self._filling: dict[tuple[str, str], asyncio.Future[str]] = {}

    # -- the kinds --------------------------------------------------------------

    async def all(self) -> list[TeamKind]:
        return [TeamKind.from_row(r) for r in await self.db.fetch("every_team_kind")]

    async def boards(self) -> list[tuple[str, Season]]:
        """(kind, season) of every team board Redis keeps (some may be gone)."""
        return await self.board.team_boards()

    async def get(self, team: str) -> TeamKind:
        row = await self.db.fetch_one("team_kind", team=check_team(team))
        if row is None:
            raise DomainError("not_found", f"no team kind {team} is defined")
        return TeamKind.from_row(row)

    async def define(self, team: str, body: dict[str, Any]) -> tuple[TeamKind, bool]:
        """The kind as defined, and whether this call created it; another
        title is not a change of its boards, another aggregate or `top` is
        `kind_conflict`. A field left out keeps what the kind has."""
        check_team(team)
        async with self.db.transaction() as tx:
            row = await self.db.fetch_one("lock_team_kind", tx, team=team)
            old = TeamKind.from_row(row) if row else None
            new = parse_team_kind(team, body, old, datetime.now(UTC))
            if old is not None and not old.same_as(new):
                raise DomainError("kind_conflict", f"team kind {team} exists with another "
                                  "aggregate; delete it first to change how it ranks")
            saved, = await self.db.fetch("insert_team_kind", tx, team=team, title=new.title,
                                         aggregate=new.aggregate, top=new.top)
            await self.db.run("insert_audit", tx, action="team_define", target=team,
                              reason=None, details=None)
        await self.board.publish_group_change(KIND_CHANGED + team)  # (its title, in caches)
        return TeamKind.from_row(saved), bool(saved["created"])

    async def delete(self, team: str) -> None:
        """The kind gone (its groups are in none), and its boards in Redis."""
        async with self.db.transaction() as tx:
            await self.db.fetch("lock_team_groups", tx, team=check_team(team))
            if await self.db.fetch_one("delete_team_kind", tx, team=team) is None:
                raise DomainError("not_found", f"no team kind {team} is defined")
            await self.db.run("insert_audit", tx, action="team_delete", target=team,
                              reason=None, details=None)
        await self.board.publish_group_change(KIND_CHANGED + team)
        for _, season in await self.board.team_boards(team):
            state = await self.board.team_state(season, TeamKindKey(team, "", 0))
            if state.current:
                await self.board.team_drop(season, state.current, team)
            await self.board.forget_team_board(team, season)

    # -- who counts in which team ------------------------------------------------

    async def moved(self, tx: Tx, teams: Sequence[str], user_ids: Sequence[int]) -> None:
        """In a writer's transaction, after its change (a membership, a
        group's kind, a suspension) and before it commits: the kinds' rows
        locked (in name order), each given a new count, and these learners'
        groups of each kind, as the transaction sees them, set on every team
        board of the kind (see the module)."""
        if not teams or not user_ids:
            return
        for row in await self.db.fetch("lock_team_kinds", tx, teams=sorted(set(teams))):
            kind = TeamKind.from_row(row)
            bumped, = await self.db.fetch("bump_team_members", tx, team=kind.team)
            now = {int(r["user_id"]): str(r["groups"]) for r in await self.db.fetch(
                "team_groups_of", tx, team=kind.team, user_ids=sorted(set(user_ids)))}
            groups = [(uid, now.get(uid, "")) for uid in sorted(set(user_ids))]
            await failpoints.pause("team_moving")
            for _, season in await self.board.team_boards(kind.team):
                state = await self.board.team_state(season, key_of(kind))
                if state.current and state.applied is not None:
                    await self.board.team_members(
                        season, state.current, key_of(kind), "move", groups,
                        expected=kind.members_version, applied=int(bumped["members_version"]))
                else:  # gone (expired, rebuilt): a read fills it again, and lists it
                    await self.board.forget_team_board(kind.team, season)

    async def moved_everywhere(self, tx: Tx, user_id: int) -> None:
        """`moved` for every kind of the groups a learner is in (their
        suspension, or its end)."""
        rows = await self.db.fetch("learner_team_kinds", tx, user_id=user_id)
        await self.moved(tx, [r["team"] for r in rows], [user_id])

    # -- a board ready to read ---------------------------------------------------

    async def ready(self, season: Season, kind: TeamKind) -> str | None:
        """The version of the season's board whose team board of `kind` is
        ready and holds PostgreSQL's count of membership changes, filled
        first when it is not; None when the season has no board in Redis.
        One fill at a time per board in a process, and across processes
        the kind's row lock."""
        state = await self.board.team_state(season, key_of(kind))
        if not state.current:
            return None
        if state.ready and state.applied == kind.members_version:
            return state.current
        key = (season.name, kind.team)
        running = self._filling.get(key)
        if running is None:
            running = self._filling[key] = asyncio.ensure_future(self._fill(season, kind.team))
            running.add_done_callback(lambda _: self._filling.pop(key, None))
        return await asyncio.shield(running)

    async def _fill(self, season: Season, team: str) -> str:
        async with self.db.transaction() as tx:
            row = await self.db.fetch_one("lock_team_kind", tx, team=team)
            if row is None:
                raise DomainError("not_found", f"no team kind {team} is defined")
            kind = TeamKind.from_row(row)
            state = await self.board.team_state(season, key_of(kind))
            version = kind.members_version
            if state.ready and state.applied == version:
                return state.current
            if not await self.board.team_begin(season, state.current, key_of(kind), version):
                raise DomainError("rebuilding", f"the board of {season.shown} changed; "
                                  "retry shortly", retry_after=1)
            await failpoints.pause("team_filling")
            async for rows in self.db.stream_tuples("team_memberships", tx, FILL_BATCH,
                                                    team=team):
                status = await self.board.team_members(
                    season, state.current, key_of(kind), "fill",
                    [(int(uid), str(groups)) for uid, groups in rows])
                if status != "OK":
                    raise DomainError("rebuilding", f"the board of {season.shown} changed; "
                                      "retry shortly", retry_after=1)
            await self.board.team_finish(season, state.current, key_of(kind), version)
            return state.current
