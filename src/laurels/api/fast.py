"""The fast lane: the hottest operations as plain ASGI, in front of FastAPI.

Every hint makes every open page refetch the top of its board, so the top-N
of a season is read far more often than it changes, and it is the same for
every viewer. The lane serves these operations (`OPERATIONS`), without
FastAPI's per-request machinery; each is written once, here:

- `GET /healthz`;
- `POST /v1/completions` (the platform's hook per completed tutorial);
- `GET /v1/leaderboards/{season}`: its first pages from `BoardCache` (the
  serialized body, kept per process and dropped by the very hints the
  process already receives, and by its own writes), with an `ETag`; a
  matching `If-None-Match` gets `304`; later pages (`after`) are read (and
  etagged alike). A
  (path, query string) answered before is looked up first (`KnownPages`),
  and sent from the cache without routing or parsing while it holds it
  (by the connection itself, before any ASGI, when it may: api/early.py);
- `GET /v1/leaderboards/{season}/users/{user_id}`, a learner's
  neighbourhood: the token checked (its check remembered), then the body
  from `around_cache` (per learner and radius, dropped by the same hints as
  the top's), or one script call;
- `GET /v1/leaderboards/{season}/events`, the live streams (api/sse.py).

The FastAPI router holds the same handlers (`routes`), so a wrong method is
`405` and a trailing slash redirects as on every other path, and the app
serves them without the lane too; /openapi.json describes them from this
table (api/openapi.py). In front of one FastAPI route the lane is a cache:
`GET /v1/groups/{group_id}/leaderboards/{season}` is answered from
`GroupCache` when it holds the body and the caller may read it (a public
group; the ingest or admin token; a member's token, by the per-process
member index); anything else goes to that route, which fills the cache.

Every error is mapped as FastAPI's handlers map it (problems.response_for).
A cached body is never older than the newest hint this process has seen: it
is only used while the hint subscription of its season is confirmed, a hint
bumps the season's generation before any stream reacts to it, and a body
read while a hint arrived is not kept.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

import orjson
from starlette.routing import Route, compile_path
from starlette.types import ASGIApp, Receive, Scope, Send

from laurels.api import problems
from laurels.api import schemas as s
from laurels.api.auth import Auth
from laurels.api.boards import BoardQuery, query_board_season
from laurels.api.bodies import check_headers, read_json
from laurels.api.caches import (
    Cached,
    GroupCache,
    around_body,
    board_body,
    board_cursor_owner,
    not_modified,
    seal_next,
)
from laurels.api.clients import client_of
from laurels.api.early import JSON_HEADERS, Early, known_top
from laurels.api.params import (
    Cursor,
    Limit,
    Radius,
    SeasonPath,
    UserIdPath,
    path_user_id,
    query_cursor,
    query_int,
)
from laurels.api.problems import Problem, outcome_status
from laurels.api.state import ApiState
from laurels.api.streams import board_stream
from laurels.core.seasons import ALIASES
from laurels.core.validation import CompletionIn

GROUP_BOARD = re.compile(r"/v1/groups/([^/]+)/leaderboards/([^/]+)")
HEALTH_BODY = b'{"status":"ok"}'

Handler = Callable[[ApiState, Scope, Receive, Send], Awaitable[None]]


def bearer(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"authorization":
            text: str = bytes(value).decode("latin-1")
            scheme, _, credentials = text.partition(" ")
            if scheme.lower() == "bearer" and credentials.strip():
                return credentials.strip()
    raise Problem("unauthorized", "missing bearer token")


# -- the operations -----------------------------------------------------------------------
# Each docstring is the operation's description in /openapi.json.

async def healthz(state: ApiState, scope: Scope, receive: Receive, send: Send) -> None:
    """200 while the process is up."""
    await _answer(send, 200, HEALTH_BODY)


async def post_completion(state: ApiState, scope: Scope, receive: Receive, send: Send) -> None:
    """Record one completion (idempotent on `completion_id`)."""
    state.limiter.check(state.auth.require_ingest(bearer(scope)))
    check_headers(_header(scope, b"content-type") or "", _header(scope, b"content-length"))
    body = await read_json(_body(receive))
    outcome = await state.group_commit.submit(body)  # one commit for a moment's posts
    if outcome.status == "rejected":
        raise Problem(outcome.code or "validation_error", outcome.detail or "rejected")
    await _answer(send, outcome_status(outcome), orjson.dumps(outcome.body()))


async def get_board(state: ApiState, scope: Scope, receive: Receive, send: Send) -> None:
    """A season's public board (`current` = this week), from the top or after
    a cursor; `next` pages on (null after the last page). The answer carries
    an `ETag`; `If-None-Match` with it gets `304` while the board is
    unchanged."""
    query = scope.get("query_string", b"")
    limit, after = _paging(query)
    svc, season_text = state.services, scope["path_params"]["season"]
    season = await query_board_season(svc, season_text, query)
    if after is None:
        await _cached(scope, send, await board_body(svc.reads, state.board_cache, season, limit))
        state.top_pages.keep(scope["path"], scope.get("query_string", b""), season,
                             season_text in ALIASES, limit)
        return
    position = state.cursors.decode(board_cursor_owner(season), after)
    body = await svc.reads.top(season, limit, position)
    seal_next(body, state.cursors, season)
    # Not cached, but etagged like the first page: its ETag changes only
    # when the page does (the cursors are deterministic: cursors.py).
    await _cached(scope, send, Cached(orjson.dumps(body), 0.0))


async def get_around(state: ApiState, scope: Scope, receive: Receive, send: Send) -> None:
    """A learner's rank and neighbourhood (learner token of that user, or admin)."""
    params = scope["path_params"]
    user_id = path_user_id(params["user_id"])
    state.auth.require_learner(bearer(scope), user_id)
    query = scope.get("query_string", b"")
    season = await query_board_season(state.services, params["season"], query)
    radius = query_int(query, "radius", 5, 0, 50)
    cached = await around_body(state.services.reads, state.around_cache, season, user_id,
                               radius)
    await _answer(send, 200, cached.body)
    state.around_pages.keep(scope["path"], query, season, params["season"] in ALIASES,
                            (user_id, radius))


async def board_events(state: ApiState, scope: Scope, receive: Receive, send: Send) -> None:
    """Refresh hints as server-sent events: `ready`, then `changed` (at most 4 a
    second) and `rebuilt`; a comment line at least every 15 s. Refetch on each."""
    svc = state.services
    client = client_of(scope, svc.settings.trusted_proxies, svc.settings.client_ipv6_prefix)
    season = await query_board_season(svc, scope["path_params"]["season"],
                                      scope.get("query_string", b""))
    await board_stream(svc, season, client)(scope, receive, send)


class Param(NamedTuple):
    """A path or query parameter, as /openapi.json documents it."""

    name: str
    annotation: Any
    default: Any = inspect.Parameter.empty


@dataclass(frozen=True)
class Operation:
    """One operation of the lane: its handler, and what /openapi.json says of
    it (api/openapi.py: the description is the handler's docstring)."""

    method: str
    path: str  # as FastAPI writes it: /v1/leaderboards/{season}
    handler: Handler
    tags: tuple[str, ...]
    params: tuple[Param, ...] = ()
    responses: dict[int | str, dict[str, Any]] = field(default_factory=dict)
    status_code: int | None = None
    request_body: dict[str, Any] | None = None  # the operation's `requestBody`
    token: bool = False  # takes a bearer token
    stream: bool = False  # answers server-sent events

    @property
    def name(self) -> str:
        return self.handler.__name__

    @property
    def description(self) -> str:
        return inspect.cleandoc(self.handler.__doc__ or "")


SEASON = Param("season", SeasonPath)
BOARD = Param("board", BoardQuery, "global")
OPERATIONS = (
    Operation("GET", "/healthz", healthz, tags=("operations",)),
    Operation("POST", "/v1/completions", post_completion, tags=("writes",), status_code=201,
              request_body=s.body_schema(CompletionIn), token=True,
              responses={200: {"model": s.CompletionOut}, 201: {"model": s.CompletionOut},
                         **s.problems(401, 403, 409, 410, 413, 415, 422, 503)}),
    Operation("GET", "/v1/leaderboards/{season}", get_board, tags=("reads",),
              params=(SEASON, BOARD, Param("limit", Limit, 100), Param("after", Cursor, None)),
              responses={200: {"model": s.BoardOut}, **s.problems(404, 422, 503)}),
    Operation("GET", "/v1/leaderboards/{season}/users/{user_id}", get_around, tags=("reads",),
              params=(SEASON, Param("user_id", UserIdPath), BOARD, Param("radius", Radius, 5)),
              token=True,
              responses={200: {"model": s.AroundOut}, **s.problems(401, 403, 404, 422, 503)}),
    Operation("GET", "/v1/leaderboards/{season}/events", board_events, tags=("reads",),
              params=(SEASON, BOARD), stream=True,
              responses={200: {"content": {"text/event-stream": {}}},
                         **s.problems(404, 422, 503)}),
)


# -- dispatch -------------------------------------------------------------------------------

class FastLane:
    def __init__(self, app: ASGIApp, state: ApiState,
                 operations: tuple[Operation, ...] = OPERATIONS) -> None:
        """`app`: the FastAPI app (create_app in api/__init__.py); `state`: its state."""
        self.app = app
        self.state = state
        self.answer_early: Early = partial(known_top, state)  # api/early.py
        self.exact = {(op.method, op.path): op for op in operations if "{" not in op.path}
        self.patterns: dict[str, list[tuple[re.Pattern[str], Operation]]] = {}
        for op in operations:
            if "{" in op.path:
                self.patterns.setdefault(op.method, []).append((compile_path(op.path)[0], op))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            method, path = scope["method"], scope["path"]
            op = self.exact.get((method, path))
            if op is not None:
                await self._serve(op, {}, scope, receive, send)
                return
            if method == "GET" and (await self._known_page(scope, send, path)
                                    or await self._known_around(scope, send, path)):
                return
            for pattern, op in self.patterns.get(method, ()):
                if (match := pattern.match(path)) is not None:
                    await self._serve(op, match.groupdict(), scope, receive, send)
                    return
            if method == "GET" and (match := GROUP_BOARD.fullmatch(path)) is not None \
                    and await self._cached_group(scope, send, match[1], match[2]):
                return
        await self.app(scope, receive, send)

    async def _serve(self, op: Operation, params: dict[str, str], scope: Scope,
                     receive: Receive, send: Send) -> None:
        scope["path_params"] = params
        try:
            await op.handler(self.state, scope, receive, send)
        except Exception as exc:  # mapped exactly as FastAPI's handlers map them
            await problems.response_for(exc)(scope, receive, send)

    async def _known_page(self, scope: Scope, send: Send, path: str) -> bool:
        """A top page this process answered before (path, query string), from
        the cache while it holds it (as the connection answers it earlier)."""
        answer = known_top(self.state, path, scope.get("query_string", b""), scope["headers"])
        if answer is not None:
            await _answer(send, answer[0], answer[2], answer[1])
        return answer is not None

    async def _known_around(self, scope: Scope, send: Send, path: str) -> bool:
        """A neighbourhood answered before (path, query string), from the
        cache once the token may read it; any other answer is the route's."""
        page = self.state.around_pages.get(path, scope.get("query_string", b""))
        if page is None:
            return False
        try:
            self.state.auth.require_learner(bearer(scope), page[1][0])  # type: ignore[index]
        except Problem:  # the route answers it
            return False
        hit = self.state.around_cache.get(*page)
        if hit is None:
            return False
        await _answer(send, 200, hit.body)
        return True

    async def _cached_group(self, scope: Scope, send: Send, group_id: str,
                            season_text: str) -> bool:
        """A group board's first page from the cache, if it holds it and the
        caller may read it; False leaves the request to the full route."""
        query: bytes = scope.get("query_string", b"")
        cache = self.state.group_cache
        try:
            # Later pages are not cached: `after` read as the route reads it
            # (its name may come percent-encoded: `%61fter`).
            if query_cursor(query) is not None:
                return False
            season = await query_board_season(self.state.services, season_text, query)
            limit = query_int(query, "limit", 100, 1, 1000)
        except Problem:
            return False  # the full route answers the error
        hit = cache.get(group_id, season.name, limit)
        if hit is None or not may_read_group(self.state.auth, cache, scope, group_id, hit[1]):
            return False
        await _cached(scope, send, hit[0])
        return True


def may_read_group(auth: Auth, cache: GroupCache, scope: Scope, group_id: str,
                   access: str) -> bool:
    """Whether the fast lane may answer: a public group, the ingest or admin
    token, or a member's token by the loaded member index. Anything else
    (including every error) is left to the full route."""
    if access == "public":
        return True
    try:
        token = bearer(scope)
    except Problem:
        return False
    if auth.is_ingest(token) or auth.is_admin(token):
        return True
    sub = auth.learner_sub(token)
    return sub is not None and cache.index.is_member(group_id, sub) is True


class Endpoint:
    """An operation of the lane as an ASGI app, for the FastAPI router."""

    def __init__(self, operation: Operation, state: ApiState) -> None:
        self.operation = operation
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.operation.handler(self.state, scope, receive, send)


def routes(state: ApiState, operations: tuple[Operation, ...] = OPERATIONS) -> list[Route]:
    """The lane's operations as routes of the FastAPI router (left out of its
    OpenAPI document: api/openapi.py describes them)."""
    out = []
    for op in operations:
        route = Route(op.path, Endpoint(op, state), methods=[op.method], name=op.name,
                      include_in_schema=False)
        route.methods = {op.method}  # no implicit HEAD, as on FastAPI's own routes
        out.append(route)
    return out


# -- helpers ------------------------------------------------------------------------------

def _paging(query: bytes) -> tuple[int, str | None]:
    """`limit` and `after`, both checked: a request with both malformed is
    told of both, as FastAPI's routes tell it."""
    errors: list[str] = []
    limit, after = 100, None
    try:
        limit = query_int(query, "limit", 100, 1, 1000)
    except Problem as exc:
        errors.append(exc.detail)
    try:
        after = query_cursor(query)
    except Problem as exc:
        errors.append(exc.detail)
    if errors:
        raise Problem("validation_error", "; ".join(errors))
    return limit, after


async def _cached(scope: Scope, send: Send, cached: Cached) -> None:
    if not_modified(scope["headers"], cached.etag):
        await _answer(send, 304, b"", [(b"etag", cached.etag)])
    else:
        await _answer(send, 200, cached.body, [*JSON_HEADERS, (b"etag", cached.etag)])


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        yield message.get("body", b"")
        if not message.get("more_body"):
            return


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value).decode("latin-1")
    return None


async def _answer(send: Send, status: int, body: bytes,
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    base = headers if headers is not None else JSON_HEADERS
    await send({"type": "http.response.start", "status": status,
                "headers": [*base, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
