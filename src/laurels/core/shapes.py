"""What the services hand the routes: one typed body per answer.

Each is the JSON body of an endpoint (or a part of one) as a `TypedDict`, so
a service that builds one with a key missing, misspelt or of the wrong type
fails mypy, not a client. tests/unit/test_bodies.py holds each to the API's
own model of it (api/schemas.py, what OpenAPI publishes) and to the client's
(client/types.py): the same keys, required alike, of the same types. The
routes serialize them as they are.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict, get_args

from laurels.core.ranking import TiePolicy
from laurels.core.registry import Metric, NotificationKind, Zone
from laurels.core.states import RebuildStatus as RebuildState
from laurels.core.states import Visibility

LeagueOutcome = Literal["promoted", "demoted", "stayed"]


def tie_policy(stored: str) -> TiePolicy:
    """A tie policy read back from a store, as the type it is."""
    if stored not in get_args(TiePolicy):
        raise ValueError(f"unknown tie policy {stored!r}")
    return stored  # type: ignore[return-value]


def visibility(stored: str) -> Visibility:
    """A visibility read back from a store, as the type it is."""
    if stored not in get_args(Visibility):
        raise ValueError(f"unknown visibility {stored!r}")
    return stored  # type: ignore[return-value]


def league_outcome(stored: str) -> LeagueOutcome:
    """A league outcome read back from PostgreSQL, as the type it is."""
    if stored not in get_args(LeagueOutcome):
        raise ValueError(f"unknown league outcome {stored!r}")
    return stored  # type: ignore[return-value]


class Entry(TypedDict):
    rank: int
    user_id: int | None  # null: an anonymous learner
    display_name: str
    score: int


class Neighbor(Entry):
    self: bool


class Me(TypedDict):
    rank: int
    user_id: int
    display_name: str
    score: int
    visibility: Visibility


class Around(TypedDict):
    season: str
    board: str
    metric: Metric
    user: Me
    neighbors: list[Neighbor]


class SeasonInfo(TypedDict):
    """The head of a board's body (BoardOut without its entries)."""

    season: str  # its period's name (Season.label)
    board: str  # `global`, or a tag of a board kind
    metric: Metric
    period: Literal["week", "day", "month", "all", "7d", "30d"]
    starts_at: str | None
    ends_at: str | None
    status: Literal["open", "closed"]
    tie_policy: TiePolicy


class CompletionItem(TypedDict):
    completion_id: str
    points: int
    completed_at: str
    status: Literal["counted", "voided"]


class Completions(TypedDict):
    season: str
    board: str
    metric: Metric
    user_id: int
    score: int
    completions: list[CompletionItem]
    next: str | None
    retired: NotRequired[bool]


class LearnerBoard(TypedDict):
    """One of a learner's boards (GET /v1/users/{user_id}/boards)."""

    board: str
    kind: str  # `global` for the whole board
    title: str
    metric: Metric
    season: str
    rank: int
    score: int
    total: int


class LearnerBoards(TypedDict):
    boards: list[LearnerBoard]


class RebuildStatus(TypedDict):
    rebuild_id: str
    season: str
    board: str
    status: RebuildState
    events: int | None  # completions streamed so far
    error: str | None


MismatchField = Literal["score", "profile", "tie"]


class Mismatch(TypedDict):
    user_id: int
    redis: int | None
    postgres: int | None
    field: MismatchField  # beyond the contract: what differs, and in words
    difference: str


class Verified(TypedDict):
    season: str
    board: str
    consistent: bool
    players_checked: int
    mismatches: list[Mismatch]


class Group(TypedDict):
    group_id: str
    name: str
    access: Literal["members", "public"]
    members: int
    team: str | None  # its team kind (CONTRACT.md, "Team boards")


class Refused(TypedDict):
    user_id: int
    code: Literal["user_erased"]


class MembersChanged(TypedDict):
    group_id: str
    members: int
    refused: list[Refused]


class GroupRef(TypedDict):
    group_id: str
    name: str
    access: Literal["members", "public"]


class LearnerGroups(TypedDict):
    groups: list[GroupRef]


class Correction(TypedDict):
    completion_id: str
    seq: int
    season: str
    status: Literal["voided", "recorded"]


class LearnerVoided(TypedDict):
    user_id: int
    voided: int


class LearnerRestored(TypedDict):
    user_id: int
    restored: int


LearnerCorrection = LearnerVoided | LearnerRestored


class Notification(TypedDict):
    id: int
    kind: NotificationKind
    season: str
    data: dict[str, Any]
    created_at: str
    updated_at: str
    read: bool


class Notifications(TypedDict):
    notifications: list[Notification]


class Read(TypedDict):
    read: list[int]


class LeagueEntry(Entry):
    zone: Zone | None
    self: bool
    outcome: NotRequired[LeagueOutcome]  # once the week is decided


class LeagueSelf(TypedDict):
    rank: int
    score: int
    zone: Zone | None


class LeagueResult(TypedDict):
    rank: int | None
    outcome: LeagueOutcome
    new_tier: str


class League(TypedDict):
    season: str
    status: Literal["none", "pending", "placed"]
    tier: str
    tier_index: int
    cohort_id: str | None
    ends_at: str
    decides_at: str
    promote: int
    demote: int
    entries: list[LeagueEntry]
    self: LeagueSelf | None
    result: LeagueResult | None
    reason: Literal["no_completion", "hidden", "suspended"] | None
    waiting_for: str | None


class CohortBoard(TypedDict):
    season: str
    tier: str
    cohort_id: str
    decided: bool
    entries: list[LeagueEntry]


class LeagueRecord(TypedDict):
    season: str
    tier: str
    cohort_id: str
    rank: int | None
    outcome: LeagueOutcome
    new_tier: str


class LeagueHistory(TypedDict):
    results: list[LeagueRecord]
    next: str | None


class LeagueTier(TypedDict):
    tier: str
    cohorts: int
    members: int
    promoted: int
    demoted: int


class CohortRef(TypedDict):
    cohort_id: str
    tier: str
    members: int
    decided: bool


class CohortList(TypedDict):
    cohorts: list[CohortRef]
    next: str | None


class LeagueSummary(TypedDict):
    season: str
    decided: bool
    tiers: list[LeagueTier]


class BoardPage(SeasonInfo):
    """A page of a board as reads.top gives it: `next` is the position of
    its last entry when more follow (the route seals it into a cursor)."""

    total: int
    entries: list[Entry]
    next: Any


class GroupBoardPage(BoardPage):
    group_id: str
    name: str  # the group's name (its id when it has none)


class Friend(Entry):
    board_rank: int | None
    self: NotRequired[bool]


class Friends(TypedDict):
    season: str
    board: str
    metric: Metric
    entries: list[Friend]


class GroupAround(Around):
    group_id: str


class Recorded(TypedDict):
    completion_id: str
    seq: int
    season: str
    status: Literal["recorded", "duplicate"]


class Suspend(TypedDict):
    user_id: int
    suspended: bool


class ItemError(TypedDict):
    code: str
    detail: str


class Rejected(TypedDict):
    completion_id: str | None
    status: Literal["rejected"]
    error: ItemError


class LearnerProfile(TypedDict):
    user_id: int
    display_name: str
    visibility: Visibility


AuditAction = Literal["void", "restore", "suspend", "unsuspend", "erase", "rebuild",
                      "group_delete", "kind_define", "kind_delete",
                      "challenge_define", "challenge_delete", "team_define", "team_delete"]


class AuditEntry(TypedDict):
    id: int
    at: str
    action: AuditAction
    target: str
    reason: str | None
    details: dict[str, Any] | None


class Audit(TypedDict):
    entries: list[AuditEntry]
    next: str | None


class AttemptError(TypedDict):
    attempt: int
    at: str
    error: str


class Delivery(TypedDict):
    id: str
    type: str
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    last_error: str | None
    next_attempt_at: str | None
    errors: list[AttemptError]  # beyond the contract: every failed attempt's error


class Deliveries(TypedDict):
    deliveries: list[Delivery]
    next: str | None
