"""Response shapes, for /openapi.json (handlers build the JSON directly), held
to core/shapes.py's and the client's (client/types.py) by tests/unit/test_bodies.py."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from laurels.api.kind_schemas import (  # re-exported: every body's model is here
    BoardKindIn as BoardKindIn,
)
from laurels.api.kind_schemas import BoardKindOut as BoardKindOut
from laurels.api.kind_schemas import BoardKindsOut as BoardKindsOut
from laurels.api.kind_schemas import KindBoardsOut as KindBoardsOut
from laurels.api.kind_schemas import LearnerBoardOut as LearnerBoardOut
from laurels.api.kind_schemas import LearnerBoardsOut as LearnerBoardsOut
from laurels.core.ranking import TiePolicy
from laurels.core.registry import Metric, NotificationKind
from laurels.core.shapes import AuditAction
from laurels.core.states import RebuildStatus, Visibility
from laurels.core.validation import BatchIn, CompletionIn, ProfileIn, ReadIn


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def absent(description: str) -> Any:
    """A field that is left out when it does not apply (a `NotRequired` key
    of core/shapes.py): not required, and never null (no default published)."""
    return Field(None, description=description, json_schema_extra=_no_default)


class ProblemOut(BaseModel):
    type: str
    title: str
    status: int
    detail: str
    code: str


class CompletionOut(BaseModel):
    completion_id: str
    seq: int
    season: str
    status: Literal["recorded", "duplicate"]


class ItemError(BaseModel):
    code: str
    detail: str


class RejectedOut(BaseModel):
    completion_id: str | None
    status: Literal["rejected"]
    error: ItemError


class BatchOut(BaseModel):
    results: list[CompletionOut | RejectedOut]


class LearnerOut(BaseModel):
    user_id: int
    display_name: str
    visibility: Visibility


class EntryOut(BaseModel):
    rank: int
    user_id: int | None
    display_name: str
    score: int


class BoardOut(BaseModel):
    season: str
    board: str = Field(description="`global`, or the tag of a board of a kind")
    metric: Metric = Field(description="what the board ranks by: points, completions or best")
    period: Literal["week", "day", "month", "all", "7d", "30d"]
    starts_at: str | None
    ends_at: str | None
    status: Literal["open", "closed"]
    tie_policy: TiePolicy
    total: int
    entries: list[EntryOut]
    next: str | None


class NeighborOut(EntryOut):
    self: bool


class MeOut(BaseModel):
    rank: int
    user_id: int
    display_name: str
    score: int
    visibility: Visibility


class AroundOut(BaseModel):
    season: str
    board: str
    metric: Metric
    user: MeOut
    neighbors: list[NeighborOut]


class GroupAroundOut(AroundOut):
    group_id: str


class RebuildStartedOut(BaseModel):
    rebuild_id: str
    season: str
    board: str
    status: Literal["running"]


class RebuildOut(BaseModel):
    rebuild_id: str
    season: str
    board: str
    status: RebuildStatus
    events: int | None = Field(description="completions streamed so far")
    error: str | None


class MismatchOut(BaseModel):
    user_id: int
    redis: int | None
    postgres: int | None
    field: Literal["score", "profile", "tie"] = Field(
        description="beyond the contract: what differs")
    difference: str = Field(description="beyond the contract: what differs, in words")


class VerifyOut(BaseModel):
    season: str
    board: str
    consistent: bool
    players_checked: int
    mismatches: list[MismatchOut]


class NotificationOut(BaseModel):
    id: int
    kind: NotificationKind
    season: str
    data: dict[str, Any]
    created_at: str
    updated_at: str
    read: bool


class NotificationsOut(BaseModel):
    notifications: list[NotificationOut]


class ReadOut(BaseModel):
    read: list[int]


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {
        "application/json": {"schema": model.model_json_schema()}}}}


def batch_schema() -> dict[str, Any]:
    schema = BatchIn.model_json_schema()
    schema["properties"]["completions"]["items"] = CompletionIn.model_json_schema()
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {s: {"model": ProblemOut, "content": {"application/problem+json": {}}}
            for s in statuses}


__all__ = ["ProfileIn", "ReadIn"]


class GroupOut(BaseModel):
    group_id: str
    name: str
    access: Literal["members", "public"]
    members: int
    team: str | None = Field(description="its team kind (Team boards), or null")


class RefusedOut(BaseModel):
    user_id: int
    code: Literal["user_erased"]


class MembersOut(BaseModel):
    group_id: str
    members: int
    refused: list[RefusedOut]


class GroupRefOut(BaseModel):
    group_id: str
    name: str
    access: Literal["members", "public"]


class LearnerGroupsOut(BaseModel):
    groups: list[GroupRefOut]


class GroupBoardOut(BoardOut):
    group_id: str
    name: str  # the group's name (its id when it has none), for a page's title


class FriendOut(EntryOut):
    board_rank: int | None
    self: bool = absent("only on the caller's own entry: true")


class FriendsOut(BaseModel):
    season: str
    board: str
    metric: Metric
    entries: list[FriendOut]


class CorrectionOut(BaseModel):
    completion_id: str
    seq: int
    season: str
    status: Literal["voided", "recorded"]


class LearnerVoidedOut(BaseModel):
    user_id: int
    voided: int


class LearnerRestoredOut(BaseModel):
    user_id: int
    restored: int


class SuspendOut(BaseModel):
    user_id: int
    suspended: bool


class AuditEntryOut(BaseModel):
    id: int
    at: str
    action: AuditAction
    target: str
    reason: str | None
    details: dict[str, Any] | None = Field(description="beyond the contract: the action's extras")


class AuditOut(BaseModel):
    entries: list[AuditEntryOut]
    next: str | None


class CompletionItemOut(BaseModel):
    completion_id: str
    points: int
    completed_at: str
    status: Literal["counted", "voided"]


class CompletionsOut(BaseModel):
    season: str
    board: str
    metric: Metric
    user_id: int
    score: int
    completions: list[CompletionItemOut]
    next: str | None
    retired: bool = absent("only when the season's completions were retired "
                           "(LAURELS_RETAIN_COMPLETIONS_DAYS): true, the archived score "
                           "and no completions")


class AttemptErrorOut(BaseModel):
    attempt: int
    at: str
    error: str


class DeliveryOut(BaseModel):
    id: str
    type: str
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    last_error: str | None
    next_attempt_at: str | None
    errors: list[AttemptErrorOut] = Field(
        description="beyond the contract: every failed attempt's error")


class DeliveriesOut(BaseModel):
    deliveries: list[DeliveryOut]
    next: str | None


# -- leagues (docs/contract.md, Leagues) ----------------------------------------------

LeagueZone = Literal["promotion", "demotion"]
LeagueOutcome = Literal["promoted", "demoted", "stayed"]


class LeagueEntryOut(EntryOut):
    zone: LeagueZone | None
    self: bool = Field(description="the caller's own entry, with their real name")
    outcome: LeagueOutcome = absent("only once the week is decided")


class LeagueSelfOut(BaseModel):
    rank: int
    score: int
    zone: LeagueZone | None


class LeagueResultOut(BaseModel):
    rank: int | None  # null: hidden, suspended or without counted points at the decision
    outcome: LeagueOutcome
    new_tier: str


class LeagueOut(BaseModel):
    season: str
    status: Literal["none", "pending", "placed"]
    tier: str
    tier_index: int
    cohort_id: str | None
    ends_at: str
    decides_at: str
    promote: int
    demote: int
    entries: list[LeagueEntryOut]
    self: LeagueSelfOut | None
    result: LeagueResultOut | None
    reason: Literal["no_completion", "hidden", "suspended"] | None = Field(
        description="why the learner is `none` (null otherwise)")
    waiting_for: str | None = Field(
        description="the week a `pending` learner waits for (null otherwise)")


class CohortOut(BaseModel):
    season: str
    tier: str
    cohort_id: str
    decided: bool
    entries: list[LeagueEntryOut]


class LeagueRecordOut(BaseModel):
    season: str
    tier: str
    cohort_id: str
    rank: int | None
    outcome: LeagueOutcome
    new_tier: str


class LeagueHistoryOut(BaseModel):
    results: list[LeagueRecordOut]
    next: str | None


class LeagueTierOut(BaseModel):
    tier: str
    cohorts: int
    members: int
    promoted: int
    demoted: int


class CohortRefOut(BaseModel):
    cohort_id: str
    tier: str
    members: int
    decided: bool


class CohortListOut(BaseModel):
    cohorts: list[CohortRefOut]
    next: str | None


class LeagueSummaryOut(BaseModel):
    season: str
    decided: bool
    tiers: list[LeagueTierOut]
