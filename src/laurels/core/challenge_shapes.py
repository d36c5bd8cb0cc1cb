"""The bodies the challenges' services build (CONTRACT.md, "Challenges:
boards with a start and an end"), declared as core/shapes.py declares the
others: api/challenge_schemas.py publishes them and client/challenge_types.py
types them (tests/unit/test_bodies.py holds the three equal)."""

from __future__ import annotations

from typing import Literal, TypedDict

from laurels.core.ranking import TiePolicy
from laurels.core.registry import Metric
from laurels.core.states import Visibility

ChallengeStatus = Literal["upcoming", "active", "ended"]


class Reward(TypedDict("Reward", {"from": int})):
    to: int
    reward: str


class Challenge(TypedDict):
    challenge_id: str
    title: str
    board: str  # `global`, or a tag
    metric: Metric
    starts_at: str
    ends_at: str
    join: Literal["open", "required"]
    max_size: int | None
    participants: int
    rewards: list[Reward]
    status: ChallengeStatus
    decided: bool
    notify: bool  # (beyond the contract: what a console edits round-trips)
    grace_seconds: int


class Challenges(TypedDict):
    challenges: list[Challenge]
    next: str | None


class Joined(TypedDict):
    challenge_id: str
    user_id: int
    joined_at: str | None  # null: an open challenge (no join needed)


class ChallengeEntry(TypedDict):
    rank: int
    user_id: int | None  # null: an anonymous learner
    display_name: str
    score: int
    reward: str | None  # once decided: the reward of the rank (null: none)


class ChallengeBoard(TypedDict):
    challenge_id: str
    title: str
    board: str
    metric: Metric
    starts_at: str
    ends_at: str
    status: ChallengeStatus
    decided: bool
    tie_policy: TiePolicy
    total: int
    entries: list[ChallengeEntry]
    next: str | None


class ChallengeMe(TypedDict):
    rank: int
    user_id: int
    display_name: str
    score: int
    visibility: Visibility
    reward: str | None


class ChallengeNeighbor(ChallengeEntry):
    self: bool


class ChallengeAround(TypedDict):
    challenge_id: str
    board: str
    metric: Metric
    decided: bool
    user: ChallengeMe
    neighbors: list[ChallengeNeighbor]


class LearnerChallenge(Challenge):
    joined_at: str | None
    rank: int | None  # null: not ranked (no counted completion yet, or hidden)
    score: int | None
    reward: str | None  # once decided


class LearnerChallenges(TypedDict):
    user_id: int
    challenges: list[LearnerChallenge]
