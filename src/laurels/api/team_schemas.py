"""Bodies of team boards (CONTRACT.md, "Team boards"), for /openapi.json;
core/team_shapes.py and client/team_types.py declare them alike
(tests/unit/test_bodies.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Aggregate = Literal["sum", "mean", "top"]


class TeamKindIn(BaseModel):
    """A team kind's definition: a field left out keeps what the kind has
    (a new one: its name as title, `sum`)."""

    model_config = ConfigDict(extra="forbid")  # for the schema: the service refuses others

    title: str | None = Field(None, min_length=1, max_length=100, examples=["Classes"])
    aggregate: Aggregate | None = Field(
        None, description="`sum` of the members' scores, `mean` over every member (a member "
                          "without points counting 0), or `top`: the sum of the `top` best")
    top: int | None = Field(None, ge=1, le=100, description='with `"aggregate": "top"` only')


class TeamKindOut(BaseModel):
    team: str
    title: str
    aggregate: Aggregate
    top: int | None
    created_at: str


class TeamKindsOut(BaseModel):
    team_kinds: list[TeamKindOut]


class TeamEntryOut(BaseModel):
    rank: int = Field(description="ties share a rank")
    group_id: str | None = Field(description="null to a caller who may not read the group")
    name: str | None
    score: float
    members: int


class TeamBoardOut(BaseModel):
    team: str
    title: str
    season: str
    board: str
    aggregate: Aggregate
    top: int | None
    total: int
    entries: list[TeamEntryOut]
    next: str | None


class LearnerTeamOut(BaseModel):
    team: str
    group_id: str
    name: str
    rank: int
    score: float
    total: int
    contribution: float = Field(description="what the learner's points add to its score")


class LearnerTeamsOut(BaseModel):
    teams: list[LearnerTeamOut]
