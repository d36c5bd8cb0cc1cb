"""RFC 9457 problem details for every error; nothing internal reaches a client.

The one place where an error becomes an answer: a domain refusal
(`DomainError`, core/errors.py) or one of the HTTP layer itself (`Problem`: a
token refused, a body too large, a store that does not answer, ...) gets
its code's status; anything else a store raises is a 503 or a bug (500).
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse as StarletteJSONResponse
from starlette.responses import Response

from laurels.core.errors import DomainError, ErrorCode, StoreUnavailable
from laurels.ingest.record import Outcome

log = logging.getLogger("laurels.api")

# The codes only the HTTP edge gives; the domain's are errors.ErrorCode.
HttpCode = Literal["unauthorized", "forbidden", "payload_too_large", "unsupported_media_type",
                   "rate_limited", "unavailable", "method_not_allowed", "internal_error"]
ProblemCode = ErrorCode | HttpCode

STATUS: dict[ProblemCode, int] = {
    "validation_error": 422,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "not_ranked": 404,
    "completion_conflict": 409,
    "season_closed": 409,
    "kind_conflict": 409,
    "challenge_conflict": 409,
    "challenge_full": 409,
    "challenge_ended": 409,
    "user_erased": 410,
    "payload_too_large": 413,
    "unsupported_media_type": 415,
    "rate_limited": 429,
    "rebuilding": 503,
    "unavailable": 503,
    "method_not_allowed": 405,
    "internal_error": 500,
}

TITLES: dict[ProblemCode, str] = {
    "validation_error": "Invalid request",
    "unauthorized": "Unauthorized",
    "forbidden": "Forbidden",
    "not_found": "Not found",
    "not_ranked": "Not ranked",
    "completion_conflict": "Completion conflict",
    "season_closed": "Season closed",
    "kind_conflict": "Board kind conflict",
    "challenge_conflict": "Challenge conflict",
    "challenge_full": "Challenge full",
    "challenge_ended": "Challenge ended",
    "user_erased": "User erased",
    "payload_too_large": "Payload too large",
    "unsupported_media_type": "Unsupported media type",
    "rate_limited": "Too many requests",
    "rebuilding": "Board is being rebuilt",
    "unavailable": "Service unavailable",
    "method_not_allowed": "Method not allowed",
    "internal_error": "Internal error",
}


class Problem(Exception):
    """A refusal of the HTTP layer itself (auth, bodies, query strings, the
    stream budget, readiness): any contract code, a safe detail, and when to
    retry."""

    def __init__(self, code: ProblemCode, detail: str, retry_after: int | None = None) -> None:
        super().__init__(detail)
        self.code: ProblemCode = code
        self.detail = detail
        self.retry_after = retry_after


def outcome_status(outcome: Outcome) -> int:
    """The HTTP status of one completion's outcome (201, 200 or its error's)."""
    if outcome.status == "recorded":
        return 201
    if outcome.status == "duplicate":
        return 200
    return STATUS[outcome.code or "validation_error"]


_HTTP_CODES: dict[int, ProblemCode] = {401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 413: "payload_too_large",
               415: "unsupported_media_type", 422: "validation_error", 429: "rate_limited",
               503: "unavailable"}


class JSONResponse(StarletteJSONResponse):
    """JSON bodies serialized with orjson (FastAPI's ORJSONResponse is deprecated)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def problem_response(code: ProblemCode, detail: str, status: int | None = None,
                     retry_after: int | None = None,
                     extra_headers: dict[str, str] | None = None) -> Response:
    status = status or STATUS[code]
    body = {"type": f"https://laurels.dev/problems/{code.replace('_', '-')}",
            "title": TITLES.get(code, "Error"), "status": status, "detail": detail,
            "code": code}
    headers = dict(extra_headers or {})
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    if code == "unauthorized":
        headers.setdefault("WWW-Authenticate", "Bearer")
    return Response(orjson.dumps(body), status_code=status, headers=headers,
                    media_type="application/problem+json")


def _validation_detail(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(x) for x in err.get("loc", ()) if x not in ("query", "path", "body"))
        parts.append(f"{loc or 'request'}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def response_for(exc: Exception) -> Response:
    """The answer to an exception: a refusal's own code, 503 when a store is
    not reachable, 500 (logged with its traceback) for anything else. Used by
    FastAPI's handlers below and by the fast lane alike."""
    if isinstance(exc, DomainError | Problem):
        return problem_response(exc.code, exc.detail, retry_after=exc.retry_after)
    if isinstance(exc, StoreUnavailable):  # db/ and board/ decide what it is
        log.warning("%s", exc)
        return problem_response("unavailable", exc.detail, retry_after=2)
    log.error("unhandled error", exc_info=exc)
    return problem_response("internal_error", "an internal error occurred")


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> Response:
        return problem_response("validation_error", _validation_detail(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> Response:
        code = _HTTP_CODES.get(exc.status_code, "not_found")
        detail = exc.detail if isinstance(exc.detail, str) else TITLES[code]
        headers: dict[str, Any] = dict(exc.headers or {})
        return problem_response(code, detail, status=exc.status_code, extra_headers=headers)

    # The classes a handler is registered for are answered by Starlette's
    # exception middleware; `Exception` (the rest: a bug) by its server-error
    # middleware, which also re-raises it to the server.
    @app.exception_handler(DomainError)
    @app.exception_handler(Problem)
    @app.exception_handler(StoreUnavailable)
    @app.exception_handler(Exception)
    async def _any(_: Request, exc: Exception) -> Response:
        return response_for(exc)
