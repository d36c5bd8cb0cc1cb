"""What the FastAPI routes take from a request: the caller (bearer tokens,
checked by api/auth.py; writes also take from the write limit), the JSON
body, the configured periods. The services and the HTTP layer's own objects
come from api/state.py."""

from __future__ import annotations

from typing import Any

from fastapi import Depends, Query, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from laurels.api.auth import Auth, Writer
from laurels.api.bodies import MAX_BODY_BYTES, SMALL_BODY_BYTES, check_headers, read_json
from laurels.api.params import path_user_id
from laurels.api.problems import Problem
from laurels.api.state import api_state, services
from laurels.core.seasons import Period

bearer_scheme = HTTPBearer(auto_error=False, description="ingest, admin or learner token")


async def auth(request: Request) -> Auth:
    # Every dependency is async: FastAPI runs a plain `def` dependency in a
    # thread pool, which cost more than the whole request (measured).
    return api_state(request).auth


async def token(credentials: HTTPAuthorizationCredentials | None = Security(bearer_scheme)
                ) -> str:
    if credentials is None or not credentials.credentials:
        raise Problem("unauthorized", "missing bearer token")
    return credentials.credentials


def _limit_writes(request: Request, writer: Writer) -> None:
    if request.method in ("POST", "PUT", "DELETE", "PATCH"):
        api_state(request).limiter.check(writer)


async def ingest_token(request: Request, tok: str = Depends(token),
                       a: Auth = Depends(auth)) -> None:
    _limit_writes(request, a.require_ingest(tok))


async def admin_token(request: Request, tok: str = Depends(token), a: Auth = Depends(auth)) -> None:
    _limit_writes(request, a.require_admin(tok))


async def learner_token(request: Request, tok: str = Depends(token),
                        a: Auth = Depends(auth)) -> int:
    user_id = path_user_id(request.path_params["user_id"])
    a.require_learner(tok, user_id)
    return user_id


async def learner_or_platform_token(request: Request, tok: str = Depends(token),
                                    a: Auth = Depends(auth)) -> int:
    """A learner's own reads that the platform's servers make too (their
    league and its history): that learner's token, admin, or ingest."""
    user_id = path_user_id(request.path_params["user_id"])
    if not a.is_ingest(tok):
        a.require_learner(tok, user_id)
    return user_id


async def learner_token_or_query(request: Request,
                           credentials: HTTPAuthorizationCredentials | None = Security(
                               bearer_scheme),
                           access_token: str | None = Query(
                               None, description="the learner token, for EventSource")
                           ) -> int:
    """Browsers' EventSource cannot send headers: this endpoint alone takes
    the token as ?access_token= too."""
    tok = credentials.credentials if credentials and credentials.credentials else access_token
    if not tok:
        raise Problem("unauthorized", "missing bearer token")
    user_id = path_user_id(request.path_params["user_id"])
    (await auth(request)).require_learner(tok, user_id)
    return user_id


def periods(request: Request) -> tuple[Period, ...]:
    return services(request).settings.periods


def time_zone(request: Request) -> str:
    """The calendar of the seasons a URL names (LAURELS_TIME_ZONE)."""
    return services(request).settings.time_zone


async def json_body(request: Request, limit: int = MAX_BODY_BYTES) -> Any:
    """The JSON body: 415 unless JSON, 413 over `limit` (1 MiB; 64 KiB for
    a body whose largest valid form is small: `small_json_body`), 422 if
    malformed."""
    check_headers(request.headers.get("content-type", ""),
                  request.headers.get("content-length"), limit)
    return await read_json(request.stream(), limit)


async def small_json_body(request: Request) -> Any:
    """A body whose largest valid form is small (the friends board, profile
    writes, a group's settings, marking notifications read, admin actions):
    over 64 KiB it is 413 at once, never read whole."""
    return await json_body(request, SMALL_BODY_BYTES)
