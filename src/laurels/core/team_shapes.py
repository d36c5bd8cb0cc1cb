"""The bodies the team boards' services build (CONTRACT.md, "Team boards"),
declared as core/shapes.py declares the others: api/team_schemas.py
publishes them and client/team_types.py types them (tests/unit/test_bodies.py
holds the three equal)."""

from __future__ import annotations

from typing import Literal, TypedDict

Aggregate = Literal["sum", "mean", "top"]


class TeamKind(TypedDict):
    team: str
    title: str
    aggregate: Aggregate
    top: int | None  # N of a `top` kind
    created_at: str


class TeamKinds(TypedDict):
    team_kinds: list[TeamKind]


class TeamEntry(TypedDict):
    rank: int
    group_id: str | None  # null (and `name`) to a caller who may not read the group
    name: str | None
    score: float  # a `mean` kind's may have a fraction
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
    contribution: float  # what their points add to its score


class LearnerTeams(TypedDict):
    teams: list[LearnerTeam]
