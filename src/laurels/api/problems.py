"""RFC 9457 problem details for every error; nothing internal reaches a client."""

from __future__ import annotations

import logging
from typing import Any

import orjson
import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from redis.exceptions import RedisClusterException, RedisError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse as StarletteJSONResponse
from starlette.responses import Response

from laurels.errors import STATUS, TITLES, Problem

log = logging.getLogger("laurels.api")

_HTTP_CODES = {401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 413: "payload_too_large",
               415: "unsupported_media_type", 422: "validation_error", 429: "rate_limited",
               503: "unavailable"}


class JSONResponse(StarletteJSONResponse):
    """JSON bodies serialized with orjson (FastAPI's ORJSONResponse is deprecated)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def problem_response(code: str, detail: str, status: int | None = None,
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
    """The answer to an exception raised outside FastAPI's handlers (the fast
    lane): the same mapping as `install` below."""
    if isinstance(exc, Problem):
        return problem_response(exc.code, exc.detail, retry_after=exc.retry_after)
    if isinstance(exc, psycopg.Error):
        log.warning("PostgreSQL error: %s", type(exc).__name__)
        return problem_response("unavailable", "the database is unavailable; retry shortly",
                                retry_after=2)
    if isinstance(exc, RedisError | RedisClusterException):
        log.warning("Redis error: %s", type(exc).__name__)
        return problem_response("unavailable", "the board store is unavailable; retry shortly",
                                retry_after=2)
    log.exception("unhandled error", exc_info=exc)
    return problem_response("internal_error", "an internal error occurred")


def install(app: FastAPI) -> None:
    @app.exception_handler(Problem)
    async def _problem(_: Request, exc: Problem) -> Response:
        return problem_response(exc.code, exc.detail, retry_after=exc.retry_after)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> Response:
        return problem_response("validation_error", _validation_detail(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> Response:
        code = _HTTP_CODES.get(exc.status_code, "not_found")
        detail = exc.detail if isinstance(exc.detail, str) else TITLES[code]
        headers: dict[str, Any] = dict(exc.headers or {})
        return problem_response(code, detail, status=exc.status_code, extra_headers=headers)

    @app.exception_handler(psycopg.Error)
    async def _pg(_: Request, exc: psycopg.Error) -> Response:
        log.warning("PostgreSQL error: %s", type(exc).__name__)
        return problem_response("unavailable", "the database is unavailable; retry shortly",
                                retry_after=2)

    @app.exception_handler(RedisClusterException)
    @app.exception_handler(RedisError)
    async def _redis(_: Request, exc: Exception) -> Response:
        log.warning("Redis error: %s", type(exc).__name__)
        return problem_response("unavailable", "the board store is unavailable; retry shortly",
                                retry_after=2)

    @app.exception_handler(Exception)
    async def _crash(_: Request, exc: Exception) -> Response:
        log.exception("unhandled error")
        return problem_response("internal_error", "an internal error occurred")
