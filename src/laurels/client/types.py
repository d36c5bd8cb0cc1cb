"""What the API answers, as the client types it (docs/contract.md): the contract's
values (`Literal`s) and bodies (`TypedDict`s, plain dicts). Instants are RFC 3339 text."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

# -- the contract's values -------------------------------------------------------------------

Visibility: TypeAlias = Literal["public", "anonymous", "hidden"]
Access: TypeAlias = Literal["members", "public"]
Period: TypeAlias = Literal["week", "day", "month", "all", "7d", "30d"]
TiePolicy: TypeAlias = Literal["shared", "first"]
Metric: TypeAlias = Literal["points", "completions", "best"]  # what a board ranks by
NotificationKind: TypeAlias = Literal["overtaken", "top10", "season_final", "league_zone",
                                      "league_result", "challenge_result"]
AuditAction: TypeAlias = Literal["void", "restore", "suspend", "unsuspend", "erase", "rebuild",
                                 "group_delete", "kind_define", "kind_delete", "challenge_define",
                                 "challenge_delete", "team_define", "team_delete"]
DeliveryStatus: TypeAlias = Literal["pending", "delivered", "failed"]
Paged: TypeAlias = Literal["board", "group_board", "completions", "audit", "deliveries",
                           "league_history", "challenges", "challenge_board", "team_board"]


# -- the contract's bodies (docs/contract.md); instants are RFC 3339 strings ----------------

class CompletionResult(TypedDict):
    """A recorded completion: `POST /v1/completions`, and a batch item that
    was not rejected."""

    completion_id: str
    seq: int
    season: str  # its week, e.g. "2026-W49"
    status: Literal["recorded", "duplicate"]


class ItemError(TypedDict):
    """Why a batch item was rejected."""

    code: str  # the contract's code, e.g. "validation_error", "season_closed"
    detail: str


class Rejected(TypedDict):
    """A batch item that was not recorded (the others are independent)."""

    completion_id: str | None  # null when the item had no valid id
    status: Literal["rejected"]
    error: ItemError


# One item's result of a batch, in the order sent; tell them apart by `status`.
BatchResult: TypeAlias = CompletionResult | Rejected


class BatchBody(TypedDict):
    """`POST /v1/completions/batch` (the client returns its results)."""

    results: list[BatchResult]


class User(TypedDict):
    """A learner's stored profile: `PUT /v1/users/{user_id}`."""

    user_id: int
    display_name: str
    visibility: Visibility


class Entry(TypedDict):
    """One row of a board."""

    rank: int
    user_id: int | None  # null for an anonymous learner
    display_name: str  # "Anonymous" for an anonymous learner
    score: int


class Board(TypedDict):
    """One page of a season's board: `GET /v1/leaderboards/{season}`."""

    season: str
    board: str  # `global`, or the tag of a board of a kind (`course:python-101`)
    metric: Metric
    period: Period
    starts_at: str | None  # null for "all"
    ends_at: str | None  # null for "all"
    status: Literal["open", "closed"]
    tie_policy: TiePolicy
    total: int  # learners on the board, hidden ones not counted
    entries: list[Entry]
    next: str | None  # the cursor of the next page; null after the last


class GroupBoard(Board):
    """A group's board: its members ranked among themselves."""

    group_id: str
    name: str  # the group's name (its id when it has none)


class Standing(TypedDict):
    """The learner's own standing (their real name, whatever their visibility)."""

    rank: int  # for a hidden learner, the rank they would hold
    user_id: int
    display_name: str
    score: int
    visibility: Visibility


class Neighbor(Entry):
    """A row of a neighbourhood."""

    self: bool  # the learner's own entry


class Neighbourhood(TypedDict):
    """A learner's rank and neighbours: `GET .../users/{user_id}`."""

    season: str
    board: str
    metric: Metric
    user: Standing
    neighbors: list[Neighbor]  # from rank - radius to rank + radius


class GroupNeighbourhood(Neighbourhood):
    group_id: str  # a member's neighbourhood within a group: `group_around`


class FriendEntry(Entry):
    """A row of a friends board."""

    board_rank: int | None  # the rank on the whole board
    self: NotRequired[bool]  # only on the caller's own entry


class FriendsBoard(TypedDict):
    """A friends board: `POST /v1/leaderboards/{season}/ranks`."""

    season: str
    board: str
    metric: Metric
    entries: list[FriendEntry]


class CompletionRecord(TypedDict):
    """One of a learner's completions, counted or voided."""

    completion_id: str
    points: int
    completed_at: str
    status: Literal["counted", "voided"]


class UserCompletions(TypedDict):
    """Why a learner's score is what it is, one page, newest first."""

    season: str
    board: str
    metric: Metric
    user_id: int
    score: int  # the counted points add up to it
    completions: list[CompletionRecord]
    next: str | None
    retired: NotRequired[bool]  # true: retired completions, the archived score only


class Notification(TypedDict):
    """A durable notification. `data` by kind: `top10` and `season_final`
    {"rank", "score"}; `overtaken` {"season", "by_user_id", "by_display_name"}
    (null and "Anonymous" for a learner who may not be named); from a board
    of a kind these carry "board", from a challenge "challenge_id"; `league_zone`
    {"tier", "cohort_id", "zone", "rank"}; `league_result` {"tier",
    "cohort_id", "rank", "outcome", "new_tier"}; `challenge_result`
    {"challenge_id", "title", "rank", "score", "reward"}."""

    id: int
    kind: NotificationKind
    season: str
    data: dict[str, Any]
    created_at: str
    updated_at: str  # its latest change (a refreshed notice's newer state)
    read: bool


class Notifications(TypedDict):
    """A learner's notifications: `GET /v1/users/{user_id}/notifications`."""

    notifications: list[Notification]  # the latest change first


class MarkedRead(TypedDict):
    """Beyond the contract, which promises no body: what was marked read."""

    read: list[int]  # the ids now marked read (the learner's own, of those sent)


class Group(TypedDict):
    """A group: `PUT` and `GET /v1/groups/{group_id}`."""

    group_id: str
    name: str
    access: Access
    members: int  # the member count
    team: str | None  # its team kind, or None


class Refused(TypedDict):
    """A learner who could not be added to a group."""

    user_id: int
    code: Literal["user_erased"]


class Membership(TypedDict):
    """The outcome of `POST /v1/groups/{group_id}/members`."""

    group_id: str
    members: int  # the member count after the change
    refused: list[Refused]


class GroupRef(TypedDict):
    """A group a learner is in."""

    group_id: str
    name: str
    access: Access


class UserGroups(TypedDict):
    """The groups a learner is in: `GET /v1/users/{user_id}/groups`."""

    groups: list[GroupRef]


class Correction(TypedDict):
    """A voided or restored completion."""

    completion_id: str
    seq: int
    season: str
    status: Literal["voided", "recorded"]


class LearnerCorrection(TypedDict):
    """A bulk void's or restore's answer: a `LearnerVoided`, a `LearnerRestored`."""

    user_id: int


class LearnerVoided(LearnerCorrection):
    voided: int  # how many of the learner's completions a bulk void voided (`void_user`)


class LearnerRestored(LearnerCorrection):
    restored: int  # how many a bulk restore restored (`restore_user`)


class Suspension(TypedDict):
    """A learner's suspension state after suspend or unsuspend."""

    user_id: int
    suspended: bool


class AuditEntry(TypedDict):
    """One admin action."""

    id: int
    at: str
    action: AuditAction
    target: str  # a completion id, a user id, a season or a group id
    reason: str | None
    details: dict[str, Any] | None  # beyond the contract: the action's extras


class AuditLog(TypedDict):
    """One page of the audit log: `GET /v1/admin/audit`."""

    entries: list[AuditEntry]  # newest first
    next: str | None


class RebuildStarted(TypedDict):
    """`POST /v1/admin/leaderboards/{season}/rebuild` (202)."""

    rebuild_id: str
    season: str
    board: str
    status: Literal["running"]


class Rebuild(TypedDict):
    """A rebuild's state: `GET /v1/admin/rebuilds/{rebuild_id}`."""

    rebuild_id: str
    season: str
    board: str
    status: Literal["running", "succeeded", "failed"]
    events: int | None  # completions streamed so far
    error: str | None


class Mismatch(TypedDict):
    """A learner whose board entry differs from PostgreSQL."""

    user_id: int
    redis: int | None
    postgres: int | None
    field: Literal["score", "profile", "tie"]  # beyond the contract: what differs
    difference: str  # beyond the contract: the difference, in words


class VerifyResult(TypedDict):
    """`GET /v1/admin/leaderboards/{season}/verify`."""

    season: str
    board: str
    consistent: bool
    players_checked: int
    mismatches: list[Mismatch]  # at most 100


class AttemptError(TypedDict):
    """One failed attempt of a webhook delivery."""

    attempt: int
    at: str
    error: str


class Delivery(TypedDict):
    """A webhook delivery."""

    id: str
    type: str  # the event type, e.g. "notification.created", "challenge.decided"
    status: DeliveryStatus
    attempts: int
    last_error: str | None  # the last failed attempt's error (kept once delivered)
    errors: list[AttemptError]  # extra: every failed attempt's error
    next_attempt_at: str | None  # null unless pending


class Deliveries(TypedDict):
    """One page of webhook deliveries: `GET /v1/admin/webhooks/deliveries`."""

    deliveries: list[Delivery]  # newest first
    next: str | None


class LearnerBoard(TypedDict):
    """One of a learner's boards of a week."""

    board: str
    kind: str  # `global` for the whole board
    title: str
    metric: Metric
    season: str
    rank: int
    score: int
    total: int


class LearnerBoards(TypedDict):
    """`GET /v1/users/{user_id}/boards`: every board the learner counts on."""

    boards: list[LearnerBoard]


class BoardKind(TypedDict):
    """A board kind (`PUT /v1/admin/board-kinds/{kind}`)."""

    kind: str
    title: str
    metric: Metric
    periods: list[Period]
    time_zone: str
    notify: bool
    created_at: str


class BoardKinds(TypedDict):
    kinds: list[BoardKind]


class KindBoard(TypedDict):
    board: str
    learners: int


class KindBoards(TypedDict):
    """`GET /v1/admin/board-kinds/{kind}/boards`: a page of a kind's boards."""

    kind: str
    season: str
    boards: list[KindBoard]
    next: str | None
