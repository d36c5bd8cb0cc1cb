"""Bodies of challenges (CONTRACT.md, "Challenges: boards with a start and
an end"), for /openapi.json; core/challenge_shapes.py and
client/challenge_types.py declare them alike (tests/unit/test_bodies.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from laurels.core.registry import Metric

Status = Literal["upcoming", "active", "ended"]


class RewardOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    from_: int = Field(alias="from", ge=1, description="the first rank of the range")
    to: int = Field(ge=1, description="the last rank of the range")
    reward: str = Field(min_length=1, max_length=64, examples=["gold"])


class RewardIn(RewardOut):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class ChallengeIn(BaseModel):
    """A challenge's definition (CONTRACT.md, "Challenges")."""

    model_config = ConfigDict(extra="forbid")  # for the schema: the service refuses others

    title: str = Field(min_length=1, max_length=200, examples=["December SQL sprint"])
    board: str = Field("global", examples=["course:sql-201"],
                       description="`global`, or a tag `kind:value`")
    metric: Metric = "points"
    starts_at: str = Field(examples=["2026-12-14T00:00:00Z"])
    ends_at: str = Field(examples=["2026-12-21T00:00:00Z"],
                         description="after starts_at, at most 92 days later")
    join: Literal["open", "required"] = "open"
    max_size: int | None = Field(None, ge=1, le=1_000_000,
                                 description="only with join: required")
    rewards: list[RewardIn] = Field(default_factory=list)
    notify: bool = False
    grace_seconds: int = Field(0, ge=0, description="at most LAURELS_LATE_GRACE_SECONDS")


class ChallengeOut(BaseModel):
    challenge_id: str
    title: str
    board: str
    metric: Metric
    starts_at: str
    ends_at: str
    join: Literal["open", "required"]
    max_size: int | None
    participants: int
    rewards: list[RewardOut]
    status: Status
    decided: bool
    notify: bool
    grace_seconds: int


class ChallengesOut(BaseModel):
    challenges: list[ChallengeOut]
    next: str | None


class JoinIn(BaseModel):
    """With the ingest token: whose join (a learner's own token needs no body)."""

    model_config = ConfigDict(extra="forbid")

    user_id: int = Field(ge=1)


class JoinedOut(BaseModel):
    challenge_id: str
    user_id: int
    joined_at: str | None


class ChallengeEntryOut(BaseModel):
    rank: int
    user_id: int | None
    display_name: str
    score: int
    reward: str | None


class ChallengeBoardOut(BaseModel):
    challenge_id: str
    title: str
    board: str
    metric: Metric
    starts_at: str
    ends_at: str
    status: Status
    decided: bool
    tie_policy: Literal["shared", "first"]
    total: int
    entries: list[ChallengeEntryOut]
    next: str | None


class ChallengeMeOut(BaseModel):
    rank: int
    user_id: int
    display_name: str
    score: int
    visibility: Literal["public", "anonymous", "hidden"]
    reward: str | None


class ChallengeNeighborOut(ChallengeEntryOut):
    self: bool


class ChallengeAroundOut(BaseModel):
    challenge_id: str
    board: str
    metric: Metric
    decided: bool
    user: ChallengeMeOut
    neighbors: list[ChallengeNeighborOut]


class LearnerChallengeOut(ChallengeOut):
    joined_at: str | None
    rank: int | None
    score: int | None
    reward: str | None


class LearnerChallengesOut(BaseModel):
    user_id: int
    challenges: list[LearnerChallengeOut]
