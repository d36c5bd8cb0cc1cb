"""A Python client of the laurels HTTP API, sync (`Client`) and async
(`AsyncClient`), on httpx. The reference is docs/client.md.

    from laurels.client import Client

    with Client("https://laurels.example", token=INGEST_TOKEN) as laurels:
        laurels.post_completion("lesson-42:user-7", user_id=7, points=10)

Every call returns the JSON body the contract describes, typed as a
`TypedDict` below (`Board`, `Neighbourhood`, ...). A problem answer raises a
`LaurelsError` subclass carrying its contract `code` (`NotFound`,
`RateLimited`, ...). Connection errors, timeouts, `429`, `502`, `503` and
`504` are retried with exponential backoff and jitter, honouring
`Retry-After`, up to `retries` times; a service that stays unreachable or
unavailable raises `Unavailable` (with the transport error as `cause` when no
answer came). Retrying is safe: `completion_id` makes a completion idempotent
(a retried one answers `200 duplicate`, never counts twice), and every other
call of the API is idempotent too (PUTs, membership sets, void, restore,
suspend).

Each call is written once (`_Endpoints`), as a function that builds its
request; `_Call` turns it into a method of both clients: `Client().board()`
returns a `Board`, `AsyncClient().board()` a coroutine of one.
"""

from __future__ import annotations

import asyncio
import email.utils
import inspect
import random
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import (
    Any,
    Generic,
    Literal,
    NotRequired,
    ParamSpec,
    Self,
    TypeAlias,
    TypedDict,
    TypeVar,
    overload,
)
from urllib.parse import quote

import httpx

__all__ = [
    "Access", "AsyncClient", "AuditAction", "AuditEntry", "AuditLog", "BatchResult", "Board",
    "Client", "Completion", "CompletionConflict", "CompletionRecord", "CompletionResult",
    "Correction", "Deliveries", "Delivery", "DeliveryStatus", "Entry", "Forbidden", "FriendEntry",
    "FriendsBoard", "Group", "GroupBoard", "GroupRef", "ItemError", "LaurelsError", "MarkedRead",
    "Membership", "Mismatch", "Neighbor", "Neighbourhood", "NotFound", "NotRanked",
    "Notification", "NotificationKind", "Notifications", "Paged", "PayloadTooLarge", "Period",
    "RateLimited", "Rebuild", "RebuildStarted", "Rebuilding", "Refused", "Rejected",
    "SeasonClosed", "Standing", "Suspension", "TiePolicy", "Unauthorized", "Unavailable",
    "UnsupportedMediaType", "User", "UserCompletions", "UserErased", "UserGroups",
    "ValidationError", "VerifyResult", "Visibility",
]

BATCH_MAX = 1000  # items per POST /v1/completions/batch (the contract's limit)
# Answers worth another try: rate limited, and unavailable (the service's
# own 503, or a gateway's 502/503/504 in front of it).
RETRY_STATUSES = (429, 502, 503, 504)
GATEWAY_STATUSES = (502, 503, 504)
MAX_RETRY_AFTER_SECONDS = 60.0

# Transport errors that mean "the service could not be reached (or did not
# answer in time)": retried, then raised as `Unavailable`. The others
# (`UnsupportedProtocol`: a base URL without http(s)://, `LocalProtocolError`:
# a request httpx cannot send) are the caller's mistakes: raised at once.
_UNREACHABLE: tuple[type[httpx.TransportError], ...] = (
    httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)

# -- the contract's values -------------------------------------------------------------------

Visibility: TypeAlias = Literal["public", "anonymous", "hidden"]
Access: TypeAlias = Literal["members", "public"]
Period: TypeAlias = Literal["week", "day", "month", "all"]
TiePolicy: TypeAlias = Literal["shared", "first"]
NotificationKind: TypeAlias = Literal["overtaken", "top10", "season_final", "league_zone",
                                      "league_result"]
AuditAction: TypeAlias = Literal["void", "restore", "suspend", "unsuspend", "erase", "rebuild",
                                 "group_delete"]
DeliveryStatus: TypeAlias = Literal["pending", "delivered", "failed"]
Paged: TypeAlias = Literal["board", "group_board", "completions", "audit", "deliveries"]


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


class _BatchBody(TypedDict):
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
    user: Standing
    neighbors: list[Neighbor]  # from rank - radius to rank + radius
    group_id: NotRequired[str]  # on a group's neighbourhood


class FriendEntry(Entry):
    """A row of a friends board."""

    board_rank: int | None  # the rank on the whole board
    self: NotRequired[bool]  # only on the caller's own entry


class FriendsBoard(TypedDict):
    """A friends board: `POST /v1/leaderboards/{season}/ranks`."""

    season: str
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
    user_id: int
    score: int  # the counted points add up to it
    completions: list[CompletionRecord]
    next: str | None
    retired: NotRequired[bool]  # true: retired completions, the archived score only


class Notification(TypedDict):
    """A durable notification. `data` by kind: `top10` and `season_final`
    {"rank", "score"}; `overtaken` {"season", "by_user_id", "by_display_name"}
    (null and "Anonymous" for a learner who may not be named); `league_zone`
    {"tier", "cohort_id", "zone", "rank"}; `league_result` {"tier",
    "cohort_id", "rank", "outcome", "new_tier"}."""

    id: int
    kind: NotificationKind
    season: str
    data: dict[str, Any]
    created_at: str
    read: bool


class Notifications(TypedDict):
    """A learner's notifications: `GET /v1/users/{user_id}/notifications`."""

    notifications: list[Notification]  # newest first


class MarkedRead(TypedDict):
    """Beyond the contract, which promises no body: what was marked read."""

    read: list[int]  # the ids now marked read (the learner's own, of those sent)


class Group(TypedDict):
    """A group: `PUT` and `GET /v1/groups/{group_id}`."""

    group_id: str
    name: str
    access: Access
    members: int  # the member count


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
    details: NotRequired[dict[str, Any] | None]  # beyond the contract: the action's extras


class AuditLog(TypedDict):
    """One page of the audit log: `GET /v1/admin/audit`."""

    entries: list[AuditEntry]  # newest first
    next: str | None


class RebuildStarted(TypedDict):
    """`POST /v1/admin/leaderboards/{season}/rebuild` (202)."""

    rebuild_id: str
    season: str
    status: Literal["running"]


class Rebuild(TypedDict):
    """A rebuild's state: `GET /v1/admin/rebuilds/{rebuild_id}`."""

    rebuild_id: str
    season: str
    status: Literal["running", "succeeded", "failed"]
    events: int | None  # completions streamed so far
    error: str | None


class Mismatch(TypedDict):
    """A learner whose board entry differs from PostgreSQL."""

    user_id: int
    redis: int | None
    postgres: int | None
    field: NotRequired[Literal["score", "profile", "tie"]]  # beyond the contract: what differs
    difference: NotRequired[str]  # beyond the contract: the difference, in words


class VerifyResult(TypedDict):
    """`GET /v1/admin/leaderboards/{season}/verify`."""

    season: str
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
    type: str  # the event type, e.g. "notification.created"
    status: DeliveryStatus
    attempts: int
    last_error: str | None  # the last failed attempt's error (kept once delivered)
    errors: NotRequired[list[AttemptError]]  # extra: every failed attempt's error
    next_attempt_at: str | None  # null unless pending


class Deliveries(TypedDict):
    """One page of webhook deliveries: `GET /v1/admin/webhooks/deliveries`."""

    deliveries: list[Delivery]  # newest first
    next: str | None


# -- problems --------------------------------------------------------------------------------

class LaurelsError(Exception):
    """A problem answer (RFC 9457) of the API: `code` is the contract's,
    `status` the HTTP status (None when no answer came: `Unavailable`),
    `detail` the problem's, `retry_after` the `Retry-After` seconds if any,
    `body` the whole problem."""

    code = "internal_error"

    def __init__(self, status: int | None, code: str, detail: str,
                 retry_after: float | None = None,
                 body: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{status} {code}: {detail}" if status is not None
                         else f"{code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.retry_after = retry_after
        self.body = dict(body or {})


class ValidationError(LaurelsError):
    """422: a malformed field, id, season or cursor, or a body that breaks a rule."""

    code = "validation_error"


class Unauthorized(LaurelsError):
    """401: no token, or one that is invalid or expired."""

    code = "unauthorized"


class Forbidden(LaurelsError):
    """403: a valid token that may not make this call."""

    code = "forbidden"


class NotFound(LaurelsError):
    """404: no such group, completion, rebuild or delivery, a period that is
    not configured, or a group the caller may not read."""

    code = "not_found"


class NotRanked(LaurelsError):
    """404: the learner has no completions in the season."""

    code = "not_ranked"


class CompletionConflict(LaurelsError):
    """409: the `completion_id` was recorded with another payload."""

    code = "completion_conflict"


class SeasonClosed(LaurelsError):
    """409: the completion's season is closed (past its grace)."""

    code = "season_closed"


class UserErased(LaurelsError):
    """410: the learner was erased."""

    code = "user_erased"


class PayloadTooLarge(LaurelsError):
    """413: a body over 1 MiB."""

    code = "payload_too_large"


class UnsupportedMediaType(LaurelsError):
    """415: a body that is not JSON."""

    code = "unsupported_media_type"


class RateLimited(LaurelsError):
    """429, after the retries: too many requests from this token."""

    code = "rate_limited"


class Rebuilding(LaurelsError):
    """503, after the retries: the season's board is being rebuilt."""

    code = "rebuilding"


class Unavailable(LaurelsError):
    """The service could not be reached or is unavailable, after the
    retries: it answered `503 unavailable` (or a gateway in front of it
    answered 502, 503 or 504), or no answer came at all (refused, reset,
    timed out, broken). Then `status` is None and `cause` is the last
    `httpx.TransportError` (also the exception's `__cause__`)."""

    code = "unavailable"

    def __init__(self, status: int | None, code: str, detail: str,
                 retry_after: float | None = None, body: Mapping[str, Any] | None = None,
                 *, cause: httpx.TransportError | None = None) -> None:
        super().__init__(status, code, detail, retry_after, body)
        self.cause = cause

    @classmethod
    def unreachable(cls, where: str, attempts: int, cause: httpx.TransportError) -> Unavailable:
        """No answer from `where` (a method and a URL without its query: never
        a token) in `attempts` tries; the last error was `cause`."""
        why = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        return cls(None, "unavailable", f"could not reach {where} ({tries}): {why}",
                   cause=cause)


ERRORS: dict[str, type[LaurelsError]] = {cls.code: cls for cls in (
    ValidationError, Unauthorized, Forbidden, NotFound, NotRanked, CompletionConflict,
    SeasonClosed, UserErased, PayloadTooLarge, UnsupportedMediaType, RateLimited, Rebuilding,
    Unavailable)}


def _retry_after(value: str | None) -> float | None:
    """`Retry-After` in seconds: delay-seconds or an HTTP-date (RFC 9110)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return max(0.0, (at - datetime.now(UTC)).total_seconds())


def _error(resp: httpx.Response) -> LaurelsError:
    try:
        body = resp.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    code = body.get("code")
    if not isinstance(code, str) or not code:
        # Not a laurels problem: a gateway's 502/503/504 means the service
        # could not be reached through it.
        code = "unavailable" if resp.status_code in GATEWAY_STATUSES else "internal_error"
    return ERRORS.get(code, LaurelsError)(
        resp.status_code, code, str(body.get("detail") or resp.reason_phrase),
        _retry_after(resp.headers.get("retry-after")), body)


# -- requests --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Completion:
    """One completed tutorial, as the platform posts it."""

    completion_id: str
    user_id: int
    points: int
    completed_at: datetime | str | None = None  # RFC 3339 with an offset; None: now

    def body(self) -> dict[str, Any]:
        """The JSON item of `POST /v1/completions` (and of a batch)."""
        out: dict[str, Any] = {"completion_id": self.completion_id, "user_id": self.user_id,
                               "points": self.points}
        if self.completed_at is not None:
            at = self.completed_at
            out["completed_at"] = at.isoformat() if isinstance(at, datetime) else at
        return out


R = TypeVar("R")  # the body a call answers
P = ParamSpec("P")


@dataclass(frozen=True)
class _Request(Generic[R]):
    """One HTTP request of a call; `R` is the type of its answer's body."""

    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    bodiless: bool = False  # the contract promises no body: answer None, whatever comes


def _seg(value: object) -> str:
    return quote(str(value), safe="")


def _page(limit: int, after: str | None) -> dict[str, Any]:
    return {"limit": limit, **({"after": after} if after else {})}


def _shown(build: Callable[..., Any]) -> inspect.Signature:
    """The signature of a call as its users see it: `-> Board`, not
    `-> _Request[Board]` (annotations are strings in this module)."""
    sig = inspect.signature(build)
    ret = str(sig.return_annotation).removeprefix("_Request[").removesuffix("]")
    return sig.replace(return_annotation=ret)


class _Call(Generic[P, R]):
    """A call of the API, written once for both clients: `build` makes its
    request. On a `Client`, the method sends it and returns the body (`R`);
    on an `AsyncClient`, it is a coroutine function returning the body."""

    def __init__(self, build: Callable[P, _Request[R]]) -> None:
        self.build = build
        self.__name__ = build.__name__
        self.__doc__ = build.__doc__
        self.__signature__ = _shown(build)

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.__qualname__ = f"{owner.__name__}.{name}"

    def __repr__(self) -> str:
        return f"<laurels call {self.__name__}{self.__signature__}>"

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> Self: ...

    @overload
    def __get__(self, obj: Client, owner: type[Any] | None = None) -> Callable[P, R]: ...

    @overload
    def __get__(self, obj: AsyncClient, owner: type[Any] | None = None
                ) -> Callable[P, Coroutine[Any, Any, R]]: ...

    def __get__(self, obj: Client | AsyncClient | None, owner: type[Any] | None = None
                ) -> Any:
        if obj is None:
            return self
        build = self.build
        if isinstance(obj, AsyncClient):
            async_client = obj

            async def send_async(*args: P.args, **kwargs: P.kwargs) -> R:
                return await async_client._run(build(*args, **kwargs))

            return self._dress(send_async, obj)
        client = obj

        def send(*args: P.args, **kwargs: P.kwargs) -> R:
            return client._run(build(*args, **kwargs))

        return self._dress(send, obj)

    def _dress(self, method: Any, obj: object) -> Any:
        """The bound method as `help()` and `inspect` should show it."""
        method.__name__ = self.__name__
        method.__qualname__ = f"{type(obj).__name__}.{self.__name__}"
        method.__doc__ = self.__doc__
        method.__signature__ = self.__signature__
        return method


class _Endpoints:
    """Every call of the API, written once. Each builds its request;
    `Client._run` and `AsyncClient._run` send it. Besides what each lists,
    every call raises `Unauthorized`/`Forbidden` (token), `RateLimited`,
    `Unavailable` (unreachable or 503, after the retries) and `ValidationError`
    (a malformed argument)."""

    # -- writes (the ingest token) ----------------------------------------------------------

    @_Call
    def post_completion(completion_id: str, user_id: int, points: int,
                        completed_at: datetime | str | None = None
                        ) -> _Request[CompletionResult]:
        """Record one completion: `POST /v1/completions` (ingest token).
        Idempotent on `completion_id`: a replay answers `status: "duplicate"`.
        `completed_at`: an aware datetime or RFC 3339 text; None: now.
        Returns a `CompletionResult`. Raises `CompletionConflict` (same id,
        other payload), `SeasonClosed`, `UserErased`, `ValidationError`."""
        body = Completion(completion_id, user_id, points, completed_at).body()
        return _Request("POST", "/v1/completions", json=body)

    @_Call
    def put_user(user_id: int, display_name: str | None = None,
                 visibility: Visibility | None = None) -> _Request[User]:
        """Set a learner's display name and/or visibility (None: unchanged):
        `PUT /v1/users/{user_id}` (ingest token). Returns the stored `User`.
        Raises `UserErased`, `ValidationError` (a name that is blank, too
        long, "Anonymous", or has control or format characters)."""
        body = {k: v for k, v in (("display_name", display_name), ("visibility", visibility))
                if v is not None}
        return _Request("PUT", f"/v1/users/{user_id}", json=body)

    # -- groups (writes: the ingest token) ---------------------------------------------------

    @_Call
    def put_group(group_id: str, name: str | None = None, access: Access | None = None
                  ) -> _Request[Group]:
        """Create a group, or change its name or access (None: unchanged, or
        the defaults of a new group: its id, "members"):
        `PUT /v1/groups/{group_id}` (ingest token). Returns the `Group`."""
        body = {k: v for k, v in (("name", name), ("access", access)) if v is not None}
        return _Request("PUT", f"/v1/groups/{_seg(group_id)}", json=body)

    @_Call
    def get_group(group_id: str) -> _Request[Group]:
        """A group: `GET /v1/groups/{group_id}` (ingest token). Returns the
        `Group`. Raises `NotFound`."""
        return _Request("GET", f"/v1/groups/{_seg(group_id)}")

    @_Call
    def delete_group(group_id: str) -> _Request[None]:
        """Delete a group; its boards are gone: `DELETE /v1/groups/{group_id}`
        (ingest token). Returns None. Raises `NotFound`."""
        return _Request("DELETE", f"/v1/groups/{_seg(group_id)}")

    @_Call
    def change_members(group_id: str, add: Iterable[int] = (), remove: Iterable[int] = ()
                       ) -> _Request[Membership]:
        """Add and remove members (up to 10,000 ids in all; idempotent):
        `POST /v1/groups/{group_id}/members` (ingest token). Returns a
        `Membership` (erased learners are `refused`). Raises `NotFound`."""
        return _Request("POST", f"/v1/groups/{_seg(group_id)}/members",
                        json={"add": list(add), "remove": list(remove)})

    @_Call
    def group_board(group_id: str, season: str = "current", limit: int = 100,
                    after: str | None = None) -> _Request[GroupBoard]:
        """One page of a group's board, its members ranked among themselves:
        `GET /v1/groups/{group_id}/leaderboards/{season}` (a `public` group:
        no token; a `members` one: a member's learner token, or ingest/admin).
        Returns a `GroupBoard`. Raises `NotFound` (no such group, or one the
        learner may not read), `Rebuilding`."""
        return _Request("GET", f"/v1/groups/{_seg(group_id)}/leaderboards/{_seg(season)}",
                        _page(limit, after))

    @_Call
    def group_around(group_id: str, season: str, user_id: int, radius: int = 5
                     ) -> _Request[Neighbourhood]:
        """A member's neighbourhood within a group:
        `GET /v1/groups/{group_id}/leaderboards/{season}/users/{user_id}`
        (that member's learner token, or admin). Returns a `Neighbourhood`
        (with `group_id`). Raises `NotFound` (not a member), `NotRanked`."""
        return _Request(
            "GET", f"/v1/groups/{_seg(group_id)}/leaderboards/{_seg(season)}/users/{user_id}",
            {"radius": radius})

    @_Call
    def user_groups(user_id: int) -> _Request[UserGroups]:
        """The groups a learner is in: `GET /v1/users/{user_id}/groups` (their
        learner token, or admin). Returns `UserGroups`."""
        return _Request("GET", f"/v1/users/{user_id}/groups")

    # -- reads ------------------------------------------------------------------------------

    @_Call
    def board(season: str = "current", limit: int = 100, after: str | None = None
              ) -> _Request[Board]:
        """One page of a season's public board (`limit` 1 to 1000, `after` the
        previous page's `next`): `GET /v1/leaderboards/{season}` (no token).
        `season`: `2026-W49`, `2026-11-30`, `2026-11`, `all`, `current`,
        `current-day`, `current-month`. Returns a `Board`. Raises `NotFound`
        (a period not configured), `ValidationError` (a malformed season or
        cursor), `Rebuilding`."""
        return _Request("GET", f"/v1/leaderboards/{_seg(season)}", _page(limit, after))

    @_Call
    def around(season: str, user_id: int, radius: int = 5) -> _Request[Neighbourhood]:
        """A learner's rank and the `radius` (0 to 50) ranks around it:
        `GET /v1/leaderboards/{season}/users/{user_id}` (their learner token,
        or admin). Returns a `Neighbourhood`. Raises `NotRanked` (no
        completions this season), `Rebuilding`."""
        return _Request("GET", f"/v1/leaderboards/{_seg(season)}/users/{user_id}",
                        {"radius": radius})

    @_Call
    def friends(season: str, user_ids: Iterable[int]) -> _Request[FriendsBoard]:
        """A friends board of 1 to 1000 learners, ranked among themselves:
        `POST /v1/leaderboards/{season}/ranks` (any learner token, or
        ingest). Hidden and anonymous learners are left out, but for the
        caller (`self`). Returns a `FriendsBoard`. Raises `Rebuilding`."""
        return _Request("POST", f"/v1/leaderboards/{_seg(season)}/ranks",
                        json={"user_ids": list(user_ids)})

    @_Call
    def completions(season: str, user_id: int, limit: int = 50, after: str | None = None
                    ) -> _Request[UserCompletions]:
        """Why a learner's score is what it is: their completions in the
        season, newest first, counted or voided, one page:
        `GET /v1/leaderboards/{season}/users/{user_id}/completions` (their
        learner token, or admin). Returns `UserCompletions`."""
        return _Request("GET", f"/v1/leaderboards/{_seg(season)}/users/{user_id}/completions",
                        _page(limit, after))

    # -- notifications (the learner's token, or admin) --------------------------------------

    @_Call
    def notifications(user_id: int) -> _Request[Notifications]:
        """A learner's durable notifications, newest first:
        `GET /v1/users/{user_id}/notifications` (their learner token, or
        admin). Returns `Notifications`."""
        return _Request("GET", f"/v1/users/{user_id}/notifications")

    @_Call
    def mark_read(user_id: int, ids: Iterable[int]) -> _Request[MarkedRead]:
        """Mark some of a learner's notifications read:
        `POST /v1/users/{user_id}/notifications/read` (their learner token, or
        admin). Returns `MarkedRead`."""
        return _Request("POST", f"/v1/users/{user_id}/notifications/read",
                        json={"ids": list(ids)})

    # -- admin (the admin token) ------------------------------------------------------------

    @_Call
    def erase_user(user_id: int) -> _Request[None]:
        """Erase a learner for good (completions, name, notifications, every
        board and group): `DELETE /v1/users/{user_id}` (admin token). Returns
        None."""
        return _Request("DELETE", f"/v1/users/{user_id}")

    @_Call
    def void(completion_id: str, reason: str) -> _Request[Correction]:
        """Void a completion (`reason` 1 to 500 characters): it stops counting
        on every board: `POST /v1/admin/completions/{completion_id}/void`
        (admin token). Voiding twice answers the same. Returns a `Correction`
        (`status: "voided"`). Raises `NotFound`."""
        return _Request("POST", f"/v1/admin/completions/{_seg(completion_id)}/void",
                        json={"reason": reason})

    @_Call
    def restore(completion_id: str, reason: str | None = None) -> _Request[Correction]:
        """Restore a voided completion: it counts again:
        `POST /v1/admin/completions/{completion_id}/restore` (admin token).
        Returns a `Correction` (`status: "recorded"`). Raises `NotFound`."""
        return _Request("POST", f"/v1/admin/completions/{_seg(completion_id)}/restore",
                        json={"reason": reason} if reason else {})

    @_Call
    def suspend(user_id: int, reason: str) -> _Request[Suspension]:
        """Suspend a learner (off every public board, like a hidden one):
        `POST /v1/admin/users/{user_id}/suspend` (admin token). Returns a
        `Suspension`. Raises `UserErased`."""
        return _Request("POST", f"/v1/admin/users/{user_id}/suspend", json={"reason": reason})

    @_Call
    def unsuspend(user_id: int, reason: str | None = None) -> _Request[Suspension]:
        """Unsuspend a learner: `POST /v1/admin/users/{user_id}/unsuspend`
        (admin token). Returns a `Suspension`. Raises `UserErased`."""
        return _Request("POST", f"/v1/admin/users/{user_id}/unsuspend",
                        json={"reason": reason} if reason else {})

    @_Call
    def audit(limit: int = 100, after: str | None = None) -> _Request[AuditLog]:
        """One page of the audit log, newest first: `GET /v1/admin/audit`
        (admin token). Returns an `AuditLog`."""
        return _Request("GET", "/v1/admin/audit", _page(limit, after))

    @_Call
    def rebuild(season: str) -> _Request[RebuildStarted]:
        """Rebuild a season's board from PostgreSQL in the background:
        `POST /v1/admin/leaderboards/{season}/rebuild` (admin token). Returns
        `RebuildStarted` (follow it with `rebuild_status`). Raises
        `NotFound`, `Rebuilding` (one is starting: retried)."""
        return _Request("POST", f"/v1/admin/leaderboards/{_seg(season)}/rebuild")

    @_Call
    def rebuild_status(rebuild_id: str) -> _Request[Rebuild]:
        """A rebuild's state: `GET /v1/admin/rebuilds/{rebuild_id}` (admin
        token). Returns a `Rebuild`. Raises `NotFound`."""
        return _Request("GET", f"/v1/admin/rebuilds/{_seg(rebuild_id)}")

    @_Call
    def verify(season: str) -> _Request[VerifyResult]:
        """Compare a season's board in Redis with the sums in PostgreSQL:
        `GET /v1/admin/leaderboards/{season}/verify` (admin token). Returns a
        `VerifyResult`. Raises `NotFound`."""
        return _Request("GET", f"/v1/admin/leaderboards/{_seg(season)}/verify")

    @_Call
    def deliveries(status: DeliveryStatus | None = None, limit: int = 100,
                   after: str | None = None) -> _Request[Deliveries]:
        """One page of webhook deliveries, newest first, of one `status` or
        all: `GET /v1/admin/webhooks/deliveries` (admin token). Returns
        `Deliveries`."""
        params = _page(limit, after)
        if status is not None:
            params["status"] = status
        return _Request("GET", "/v1/admin/webhooks/deliveries", params)

    @_Call
    def retry_delivery(delivery_id: str) -> _Request[None]:
        """Send a webhook delivery again at once (a failed one gets another
        24 hours): `POST /v1/admin/webhooks/deliveries/{id}/retry` (admin
        token). Returns None. Raises `NotFound`."""
        return _Request("POST", f"/v1/admin/webhooks/deliveries/{_seg(delivery_id)}/retry",
                        bodiless=True)


def _batches(items: Iterable[Completion | Mapping[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for item in items:
        batch.append(item.body() if isinstance(item, Completion) else dict(item))
        if len(batch) == BATCH_MAX:
            yield batch
            batch = []
    if batch:
        yield batch


# Which list of a body a paged read walks through.
_ITEMS: dict[str, str] = {"board": "entries", "group_board": "entries",
                          "completions": "completions", "audit": "entries",
                          "deliveries": "deliveries"}


def _paged(method: str) -> str:
    if method not in _ITEMS:
        raise ValueError(f"pages() walks {', '.join(_ITEMS)}, not {method!r}")
    return _ITEMS[method]


@dataclass
class _Retry:
    retries: int = 5
    backoff: float = 0.2  # seconds before the first retry; doubles, with jitter
    max_backoff: float = 10.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER_SECONDS)
        base = min(self.max_backoff, self.backoff * 2.0 ** attempt)
        return base / 2 + random.uniform(0, base / 2)  # noqa: S311 (jitter, not secrecy)

    def after_answer(self, attempt: int, resp: httpx.Response) -> float | None:
        """Seconds to wait before trying again after this answer; None: it is final."""
        if resp.status_code in RETRY_STATUSES and attempt < self.retries:
            return self.delay(attempt, _retry_after(resp.headers.get("retry-after")))
        return None

    def after_no_answer(self, attempt: int, where: str, exc: httpx.TransportError) -> float:
        """Seconds to wait before trying again after no answer; raises
        `Unavailable` once the retries are spent."""
        if attempt >= self.retries:
            raise Unavailable.unreachable(where, attempt + 1, exc) from exc
        return self.delay(attempt, None)


def _where(base_url: httpx.URL, req: _Request[Any]) -> str:
    """The request's method and URL without query or credentials (for messages)."""
    url = base_url.copy_with(raw_path=base_url.raw_path + req.path.lstrip("/").encode())
    return f"{req.method} {url.scheme}://{url.netloc.decode('ascii')}{url.path}"


def _body(req: _Request[Any], resp: httpx.Response) -> Any:
    if resp.status_code >= 400:
        raise _error(resp)
    return resp.json() if resp.content and not req.bodiless else None


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


class Client(_Endpoints):
    """The synchronous client (a thread-safe `httpx.Client` underneath, as
    `http`). `token`: the ingest token (the platform's backend), the admin
    token (operators) or a learner's JWT (their own reads); None for the
    public reads. `retries` more tries after the first, waiting `backoff`
    seconds before the first, doubling (with jitter, at most 10 s), or what
    `Retry-After` says (at most 60 s)."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 10.0,
                 retries: int = 5, backoff: float = 0.2,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.http = httpx.Client(base_url=base_url, headers=_headers(token), timeout=timeout,
                                 transport=transport)
        self.retry = _Retry(retries, backoff)

    def _run(self, req: _Request[R]) -> R:
        for attempt in range(self.retry.retries + 1):
            try:
                resp = self.http.request(req.method, req.path, params=req.params or None,
                                         json=req.json)
            except _UNREACHABLE as exc:
                where = _where(self.http.base_url, req)
                time.sleep(self.retry.after_no_answer(attempt, where, exc))
                continue
            wait = self.retry.after_answer(attempt, resp)
            if wait is not None:
                time.sleep(wait)
                continue
            body: R = _body(req, resp)
            return body
        raise AssertionError("unreachable")

    def post_completions(self, items: Iterable[Completion | Mapping[str, Any]]
                         ) -> list[BatchResult]:
        """Record any number of completions (`Completion`s or JSON items),
        1,000 per `POST /v1/completions/batch` (ingest token). Returns every
        item's result in order: a `CompletionResult` (recorded, duplicate) or
        a `Rejected` with its error; items are independent. Raises
        `ValidationError` (a malformed batch) and what every call raises."""
        out: list[BatchResult] = []
        for batch in _batches(items):
            req: _Request[_BatchBody] = _Request("POST", "/v1/completions/batch",
                                                 json={"completions": batch})
            out += self._run(req)["results"]
        return out

    @overload
    def pages(self, method: Literal["board", "group_board"], *args: Any, **kwargs: Any
              ) -> Iterator[Entry]: ...

    @overload
    def pages(self, method: Literal["completions"], *args: Any, **kwargs: Any
              ) -> Iterator[CompletionRecord]: ...

    @overload
    def pages(self, method: Literal["audit"], *args: Any, **kwargs: Any
              ) -> Iterator[AuditEntry]: ...

    @overload
    def pages(self, method: Literal["deliveries"], *args: Any, **kwargs: Any
              ) -> Iterator[Delivery]: ...

    def pages(self, method: Paged, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """Every item of a paged read (`board`, `group_board`,
        `completions`, `audit`, `deliveries`, called with `args` and
        `kwargs`), following the `next` cursors from `after` (default: the
        first page): `for e in c.pages("board", "all", limit=1000)`. Raises
        `ValueError` for another method, and what the method raises."""
        items, after = _paged(method), kwargs.pop("after", None)
        while True:
            body = getattr(self, method)(*args, **kwargs, after=after)
            yield from body[items]
            after = body.get("next")
            if not after:
                return

    def close(self) -> None:
        """Close the connections (`with Client(...)` does it on exit)."""
        self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class AsyncClient(_Endpoints):
    """The asyncio client (an `httpx.AsyncClient` underneath, as `http`):
    every method is a coroutine function returning what `Client`'s returns;
    `pages` is an async iterator. Arguments as `Client`'s."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 10.0,
                 retries: int = 5, backoff: float = 0.2,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.http = httpx.AsyncClient(base_url=base_url, headers=_headers(token),
                                      timeout=timeout, transport=transport)
        self.retry = _Retry(retries, backoff)

    async def _run(self, req: _Request[R]) -> R:
        for attempt in range(self.retry.retries + 1):
            try:
                resp = await self.http.request(req.method, req.path,
                                               params=req.params or None, json=req.json)
            except _UNREACHABLE as exc:
                await asyncio.sleep(self.retry.after_no_answer(
                    attempt, _where(self.http.base_url, req), exc))
                continue
            wait = self.retry.after_answer(attempt, resp)
            if wait is not None:
                await asyncio.sleep(wait)
                continue
            body: R = _body(req, resp)
            return body
        raise AssertionError("unreachable")

    async def post_completions(self, items: Iterable[Completion | Mapping[str, Any]]
                               ) -> list[BatchResult]:
        """As `Client.post_completions`: every item's result, in order."""
        out: list[BatchResult] = []
        for batch in _batches(items):
            req: _Request[_BatchBody] = _Request("POST", "/v1/completions/batch",
                                                 json={"completions": batch})
            out += (await self._run(req))["results"]
        return out

    @overload
    def pages(self, method: Literal["board", "group_board"], *args: Any, **kwargs: Any
              ) -> AsyncIterator[Entry]: ...

    @overload
    def pages(self, method: Literal["completions"], *args: Any, **kwargs: Any
              ) -> AsyncIterator[CompletionRecord]: ...

    @overload
    def pages(self, method: Literal["audit"], *args: Any, **kwargs: Any
              ) -> AsyncIterator[AuditEntry]: ...

    @overload
    def pages(self, method: Literal["deliveries"], *args: Any, **kwargs: Any
              ) -> AsyncIterator[Delivery]: ...

    async def pages(self, method: Paged, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """As `Client.pages`, asynchronously:
        `async for e in c.pages("board", "all")`."""
        items, after = _paged(method), kwargs.pop("after", None)
        while True:
            body = await getattr(self, method)(*args, **kwargs, after=after)
            for item in body[items]:
                yield item
            after = body.get("next")
            if not after:
                return

    async def aclose(self) -> None:
        """Close the connections (`async with AsyncClient(...)` does it on exit)."""
        await self.http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

