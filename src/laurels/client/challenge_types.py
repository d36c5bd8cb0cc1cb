"""The bodies of the challenge calls (docs/contract.md, Challenges), as the
client types them, apart from types.py: core/challenge_shapes.py declares
what the service builds and api/challenge_schemas.py what it publishes,
alike (tests/unit/test_bodies.py holds the three equal). Instants are RFC
3339 strings."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, NotRequired, TypeAlias, TypedDict

from laurels.client.types import Metric, TiePolicy, Visibility

ChallengeStatus: TypeAlias = Literal["upcoming", "active", "ended"]  # at the service's clock
JoinRule: TypeAlias = Literal["open", "required"]  # `required`: only who joined takes part

# A reward of a range of ranks, `from` to `to` (both included). `from` is a
# Python keyword: read it as `reward["from"]`, write it as a dict.
Reward = TypedDict("Reward", {"from": "int", "to": "int", "reward": "str"})


class ChallengeDefinition(TypedDict):
    """A challenge's definition, `define_challenge`'s body: a field left out
    takes its default (`board` "global", `metric` "points", `join` "open",
    `max_size` None, `rewards` none, `notify` False, `grace_seconds` 0)."""

    title: str
    starts_at: datetime | str  # an aware datetime, or RFC 3339 text
    ends_at: datetime | str  # after starts_at, at most 92 days later
    board: NotRequired[str]  # `global`, or a tag `kind:value` of a defined kind
    metric: NotRequired[Metric]
    join: NotRequired[JoinRule]
    max_size: NotRequired[int | None]  # only with join "required": 1 to 1,000,000
    rewards: NotRequired[list[Reward]]  # ranges that do not overlap
    notify: NotRequired[bool]  # `top10` and `overtaken` while it runs
    grace_seconds: NotRequired[int]  # late completions counted after ends_at


class Challenge(TypedDict):
    """A challenge: `define_challenge`, `challenge`."""

    challenge_id: str
    title: str
    board: str  # `global`, or a tag
    metric: Metric
    starts_at: str
    ends_at: str
    join: JoinRule
    max_size: int | None
    participants: int
    rewards: list[Reward]
    status: ChallengeStatus
    decided: bool  # its final standings are frozen
    notify: bool  # top10 and overtaken while it runs
    grace_seconds: int  # how long after ends_at late completions still count


class Challenges(TypedDict):
    """A page of challenges, by id: `challenges`."""

    challenges: list[Challenge]
    next: str | None


class Joined(TypedDict):
    """`join_challenge`: the first join's instant, however often it is sent."""

    challenge_id: str
    user_id: int
    joined_at: str | None  # null: an open challenge (no join needed)


class ChallengeEntry(TypedDict):
    """A row of a challenge's board."""

    rank: int
    user_id: int | None  # null: an anonymous learner
    display_name: str
    score: int
    reward: str | None  # once decided: the reward of the rank (null: none)


class ChallengeBoard(TypedDict):
    """A page of a challenge's board: `challenge_board` (`total` 0 before
    the start; once decided, the frozen standings with their rewards)."""

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
    """The learner's own standing on a challenge (their real name)."""

    rank: int
    user_id: int
    display_name: str
    score: int
    visibility: Visibility
    reward: str | None


class ChallengeNeighbor(ChallengeEntry):
    """A row of a neighbourhood on a challenge."""

    self: bool  # the learner's own entry


class ChallengeAround(TypedDict):
    """A learner's neighbourhood on a challenge: `challenge_around`."""

    challenge_id: str
    board: str
    metric: Metric
    decided: bool
    user: ChallengeMe
    neighbors: list[ChallengeNeighbor]


class LearnerChallenge(Challenge):
    """One of a learner's challenges: a `Challenge`'s fields, and theirs."""

    joined_at: str | None
    rank: int | None  # null: not ranked (no counted completion yet, or hidden)
    score: int | None
    reward: str | None  # once decided


class LearnerChallenges(TypedDict):
    """The challenges a learner joined or took part in: `learner_challenges`."""

    user_id: int
    challenges: list[LearnerChallenge]
