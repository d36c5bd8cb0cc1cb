"""Team boards in Redis (lua/_common.lua, "Teams"): for a team kind, on the
current version of a season's board, each team's score kept from its
members' points as apply.lua moves them, and each learner's groups as
lifecycle/teams.py moves them. A board of a kind is filled from PostgreSQL's
memberships when first read (`team_begin`, `team_fill`, `team_finish`);
the seasons holding one are listed in one set (`Keys.team_boards`), so a
membership change reaches each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from laurels.board.base import BoardBase
from laurels.board.lua_args import TeamArgs, TeamMember, TeamMembersArgs, TeamReadArgs, flat
from laurels.core.ranking import pad_uid
from laurels.core.seasons import Season, season_named

MOVES_PER_CALL = 2_000  # learners a team_members.lua call carries


class TeamKindKey(NamedTuple):
    """What a team board's keys and scripts need of its kind."""

    kind: str
    aggregate: str
    top: int  # N of a `top` kind, else 0


class TeamState(NamedTuple):
    current: str  # the season's current version ('' for no board)
    applied: int | None  # the membership changes it holds (None: no team board)
    ready: bool


class TeamRow(NamedTuple):
    group_id: str
    score: float  # a `mean` kind's may have a fraction
    members: int
    rank: int


class TeamsOf(NamedTuple):
    total: int
    points: int
    teams: list[tuple[TeamRow, bool]]  # each with whether the learner's points count in it


def _score(stored: bytes | str) -> float:
    value = -float(stored)
    return int(value) if value.is_integer() else value


class Teaming(BoardBase):
    def _team_call(self, season: Season, op: str, version: str, kind: TeamKindKey,
                   applied: int = 0) -> tuple[list[str], list[Any]]:
        sk = self.season_keys(season)
        return [sk.current, sk.version(version).teams], list(TeamArgs(
            op, version, kind.kind, kind.aggregate, kind.top, applied))

    async def team_state(self, season: Season, kind: TeamKindKey) -> TeamState:
        keys, args = self._team_call(season, "state", "", kind)
        # (the teams hash of the version the marker names: read the marker first)
        current = str(await self.redis.get(keys[0]) or "")
        if not current:
            return TeamState("", None, False)
        keys[1] = self.season_keys(season).version(current).teams
        _, current, state = (str(v) for v in await self.scripts["team"](keys=keys, args=args))
        if not state:
            return TeamState(current, None, False)
        _, _, applied, ready = state.split(":")
        return TeamState(current, int(applied), ready == "1")

    async def team_begin(self, season: Season, version: str, kind: TeamKindKey,
                         applied: int) -> bool:
        """Start filling the kind's board on `version` (any former one
        dropped); False when `version` is no longer current."""
        keys, args = self._team_call(season, "begin", version, kind, applied)
        reply = await self.scripts["team"](keys=keys, args=args)
        if str(reply[0]) != "OK":
            return False
        await self.redis.sadd(self.keys.team_boards(), f"{kind.kind}\t{season.name}")
        return True

    async def team_finish(self, season: Season, version: str, kind: TeamKindKey,
                          applied: int) -> bool:
        keys, args = self._team_call(season, "finish", version, kind, applied)
        reply = await self.scripts["team"](keys=keys, args=args)
        return str(reply[0]) == "OK" and str(reply[2]).endswith(":1")

    async def team_drop(self, season: Season, version: str, kind: str) -> None:
        keys, args = self._team_call(season, "drop", version, TeamKindKey(kind, "", 0))
        await self.scripts["team"](keys=keys, args=args)

    async def team_members(self, season: Season, version: str, kind: TeamKindKey, op: str,
                           groups: Sequence[tuple[int, str]], expected: int = 0,
                           applied: int = 0) -> str:
        """Learners' groups of the kind ((user id, comma-joined groups), ''
        for none) set on the board: 'fill' or 'move' (team_members.lua);
        its answer, 'OK', 'STALE', 'ABSENT' or 'DROPPED'. A move of many
        learners is one call per MOVES_PER_CALL, the first checking
        `expected` and the last recording `applied`."""
        sk = self.season_keys(season)
        vk = sk.version(version)
        keys = [sk.current, sk.erased, vk.public, vk.hidden, vk.users, vk.teams]
        status = "OK"
        chunks = [groups[i:i + MOVES_PER_CALL] for i in range(0, len(groups), MOVES_PER_CALL)]
        for n, chunk in enumerate(chunks or [[]]):
            before = expected if n == 0 else applied
            reply = await self.scripts["team_members"](keys=keys, args=flat(
                TeamMembersArgs(op, version, kind.kind, self.policy, before, applied),
                [TeamMember(pad_uid(uid), csv) for uid, csv in chunk]))
            status = str(reply[0])
            if status != "OK":
                return status
        return status

    async def team_top(self, season: Season, version: str, kind: str, offset: int,
                       limit: int) -> tuple[int, list[TeamRow]] | None:
        """A page of the kind's board from `offset` (None: not ready, or
        `version` no longer current)."""
        reply = await self._team_read(season, version, "top", kind, offset, limit, 0)
        if reply is None:
            return None
        rows = [TeamRow(str(reply[i]), _score(reply[i + 1]), int(reply[i + 2]), int(reply[i + 3]))
                for i in range(2, len(reply), 4)]
        return int(reply[1]), rows

    async def team_of(self, season: Season, version: str, kind: str, user_id: int
                      ) -> TeamsOf | None:
        reply = await self._team_read(season, version, "of", kind, 0, 0, user_id)
        if reply is None:
            return None
        teams = [(TeamRow(str(reply[i]), _score(reply[i + 1]), int(reply[i + 2]),
                          int(reply[i + 3])), str(reply[i + 4]) == "1")
                 for i in range(3, len(reply), 5)]
        return TeamsOf(int(reply[1]), int(float(reply[2])), teams)

    async def _team_read(self, season: Season, version: str, op: str, kind: str, offset: int,
                         limit: int, user_id: int) -> list[str] | None:
        sk = self.season_keys(season)
        reply = await self.scripts["team_read"](
            keys=[sk.current, sk.version(version).teams],
            args=list(TeamReadArgs(op, version, kind, offset, limit,
                                   pad_uid(user_id) if user_id else "")))
        if str(reply[0]) != "OK":
            return None
        return list(reply)

    async def team_boards(self, kind: str | None = None) -> list[tuple[str, Season]]:
        """The (kind, season) of every team board filled (a set: some may
        have gone since, with their season's keys or a rebuild)."""
        out = []
        for entry in await self.redis.smembers(self.keys.team_boards()):
            k, _, name = str(entry).partition("\t")
            if kind is None or k == kind:
                out.append((k, season_named(name, self.zone)))
        return out

    async def forget_team_board(self, kind: str, season: Season) -> None:
        await self.redis.srem(self.keys.team_boards(), f"{kind}\t{season.name}")
