"""The bodies of the team calls (docs/contract.md, Team boards), as the
client types them: core/team_shapes.py declares what the service builds and
api/team_schemas.py what it publishes, alike (tests/unit/test_bodies.py)."""

from __future__ import annotations

from typing import Literal, NotRequired, TypeAlias, TypedDict

Aggregate: TypeAlias = Literal["sum", "mean", "top"]


class TeamKindDefinition(TypedDict):
    """`define_team_kind`'s body: a field left out keeps what the kind has."""

    title: NotRequired[str]
    aggregate: NotRequired[Aggregate]
    top: NotRequired[int]  # with "aggregate": "top", 1 to 100


class TeamKind(TypedDict):
    team: str
    title: str
    aggregate: Aggregate
    top: int | None
    created_at: str


class TeamKinds(TypedDict):
    team_kinds: list[TeamKind]


class TeamEntry(TypedDict):
    rank: int  # ties share it
    group_id: str | None  # null (and name) when the caller may not read the group
    name: str | None
    score: float
    members: int


class TeamBoard(TypedDict):
    team: str
    title: str
    season: str
    board: str
    aggregate: Aggregate
    top: int | None
    total: int
    entries: list[TeamEntry]
    next: str | None


class LearnerTeam(TypedDict):
    team: str
    group_id: str
    name: str
    rank: int
    score: float
    total: int
    contribution: float


class LearnerTeams(TypedDict):
    teams: list[LearnerTeam]
