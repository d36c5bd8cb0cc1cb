"""The client's exceptions: one per problem code of the contract (RFC 9457
problem answers, docs/contract.md), under `LaurelsError`, and the mapping of
an error answer to its exception (`problem`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

# A gateway's answers when the service behind it could not be reached.
GATEWAY_STATUSES = (502, 503, 504)


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
    """404: no such group, completion, rebuild, delivery or challenge, a
    period that is not configured, or a group the caller may not read."""

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


class KindConflict(LaurelsError):
    """409: the board kind exists with another metric, periods, zone or notify."""

    code = "kind_conflict"


class ChallengeConflict(LaurelsError):
    """409: the challenge has started and the change is one that may no
    longer be made (only `title`, `rewards` and a later `ends_at` may)."""

    code = "challenge_conflict"


class ChallengeFull(LaurelsError):
    """409: the challenge has `max_size` learners joined already."""

    code = "challenge_full"


class ChallengeEnded(LaurelsError):
    """409: the challenge has ended: it can no longer be joined."""

    code = "challenge_ended"


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
    SeasonClosed, KindConflict, ChallengeConflict, ChallengeFull, ChallengeEnded, UserErased,
    PayloadTooLarge, UnsupportedMediaType, RateLimited, Rebuilding, Unavailable)}


def problem(resp: httpx.Response, retry_after: float | None) -> LaurelsError:
    """The exception of an error answer (status 400 or more), carrying its
    `Retry-After` seconds (parsed by the caller: transport.retry_after)."""
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
        resp.status_code, code, str(body.get("detail") or resp.reason_phrase), retry_after, body)
