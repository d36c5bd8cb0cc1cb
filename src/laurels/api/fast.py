"""The fast lane: the hottest routes as plain ASGI, in front of FastAPI.

Every hint makes every open page refetch the top of its board, so the top-N
of a season is read far more often than it changes, and it is the same for
every viewer. `FastLane` serves, without FastAPI's per-request machinery:

- `GET /healthz`;
- `POST /v1/completions` (the platform's hook per completed tutorial);
- `GET /v1/leaderboards/{season}?limit=N` from `BoardCache`: the serialized
  body, kept per process and dropped by the very hints the process already
  receives (and by its own writes), with an `ETag`; a matching
  `If-None-Match` gets `304`;
- `GET /v1/leaderboards/{season}/users/{user_id}`, a learner's
  neighbourhood (one script call; the learner token's check is remembered);
- `GET /v1/leaderboards/{season}/events`, the live streams (api/sse.py);
- `GET /v1/groups/{group_id}/leaderboards/{season}?limit=N` from
  `GroupCache` when it holds the body and the caller may read it (public
  group; ingest or admin token; a member's token, by the per-process member
  index); anything else goes to the full route, which fills the cache.

Everything else, and every error, goes through FastAPI as before; the
documented FastAPI routes call the same functions, so both paths answer
alike. A cached body is never older than the newest hint this process has
seen: it is only used while the hint subscription of its season is
confirmed, a hint bumps the season's generation before any stream reacts to
it, and a body read while a hint arrived is not kept.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from laurels.api import problems
from laurels.api.auth import Auth
from laurels.api.bodies import check_headers, read_json
from laurels.api.caches import BoardCache, GroupCache, board_body
from laurels.api.params import int_in, path_season, path_user_id
from laurels.api.problems import Problem, outcome_status
from laurels.ingest import Ingestor
from laurels.ratelimit import RateLimiter
from laurels.reads import Reads

BOARD = re.compile(r"/v1/leaderboards/([^/]+)")
GROUP_BOARD = re.compile(r"/v1/groups/([^/]+)/leaderboards/([^/]+)")
EVENTS = re.compile(r"/v1/leaderboards/([^/]+)/events")
AROUND = re.compile(r"/v1/leaderboards/([^/]+)/users/([^/]+)")
HEALTH_BODY = b'{"status":"ok"}'
JSON_HEADERS = [(b"content-type", b"application/json")]


def not_modified(scope: Scope, etag: bytes) -> bool:
    for name, value in scope["headers"]:
        if name == b"if-none-match":
            return etag in [v.strip() for v in value.split(b",")] or value.strip() == b"*"
    return False


def query_int(query: bytes, name: str, default: int, low: int, high: int) -> int:
    if not query:
        return default
    # Blank values kept, as FastAPI's routes keep them: `limit=` is malformed.
    values = parse_qs(query.decode("latin-1"), keep_blank_values=True).get(name)
    if not values:
        return default
    return int_in(name, values[-1], low, high)


def bearer(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"authorization":
            text: str = bytes(value).decode("latin-1")
            scheme, _, credentials = text.partition(" ")
            if scheme.lower() == "bearer" and credentials.strip():
                return credentials.strip()
    raise Problem("unauthorized", "missing bearer token")


async def around_body(reads: Reads, auth: Auth, scope: Scope, season_text: str,
                      user_text: str) -> bytes:
    """A learner's neighbourhood, for the learner's token (or the admin's)."""
    user_id = path_user_id(user_text)
    auth.require_learner(bearer(scope), user_id)
    season = path_season(season_text, reads.settings.periods)
    radius = query_int(scope.get("query_string", b""), "radius", 5, 0, 50)
    return orjson.dumps(await reads.around(season, user_id, radius))


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


class FastLane:
    def __init__(self, app: ASGIApp, state: Any, stream: Any) -> None:
        """`state`: the FastAPI app's state (create_app in api/__init__.py)."""
        self.app = app
        rt = state.runtime
        self.reads: Reads = rt.reads
        self.ingestor: Ingestor = rt.ingestor
        self.auth: Auth = state.auth
        self.limiter: RateLimiter = state.limiter
        self.cache: BoardCache = state.board_cache
        self.group_cache: GroupCache = state.group_cache
        self.stream = stream  # season text -> the event stream's response

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "POST" and scope["path"] == "/v1/completions":
            await self._guard(self._post_completion, scope, receive, send)
            return
        if scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        if not await self._get(scope, receive, send):
            await self.app(scope, receive, send)

    async def _get(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Answer a GET here if it is one of the fast lane's; False if not."""
        path = scope["path"]
        if path == "/healthz":
            await _answer(send, 200, HEALTH_BODY)
            return True
        try:
            if (match := BOARD.fullmatch(path)) is not None:
                query: bytes = scope.get("query_string", b"")
                if b"after=" in query:  # cursor pages: the full route
                    return False
                cached = await board_body(self.reads, self.cache, match.group(1),
                                          query_int(query, "limit", 100, 1, 1000))
                if not_modified(scope, cached.etag):
                    await _answer(send, 304, b"", [(b"etag", cached.etag)])
                else:
                    await _answer(send, 200, cached.body,
                                  [*JSON_HEADERS, (b"etag", cached.etag)])
                return True
            if (match := AROUND.fullmatch(path)) is not None:
                body = await around_body(self.reads, self.auth, scope, match.group(1),
                                         match.group(2))
                await _answer(send, 200, body)
                return True
            if (match := EVENTS.fullmatch(path)) is not None:
                await self.stream(match.group(1))(scope, receive, send)
                return True
            if (match := GROUP_BOARD.fullmatch(path)) is not None:
                return await self._cached_group(scope, send, match)
        except Exception as exc:  # mapped exactly as FastAPI's handlers map them
            await problems.response_for(exc)(scope, receive, send)
            return True
        return False

    async def _cached_group(self, scope: Scope, send: Send, match: re.Match[str]) -> bool:
        """A group board's first page from the cache, if it holds it and the
        caller may read it; False leaves the request to the full route."""
        query: bytes = scope.get("query_string", b"")
        if b"after=" in query:
            return False
        try:
            season = path_season(match.group(2), self.reads.settings.periods)
            limit = query_int(query, "limit", 100, 1, 1000)
        except Problem:
            return False  # the full route answers the error
        hit = self.group_cache.get(match.group(1), season.name, limit)
        if hit is None or not may_read_group(self.auth, self.group_cache, scope,
                                             match.group(1), hit[1]):
            return False
        cached = hit[0]
        if not_modified(scope, cached.etag):
            await _answer(send, 304, b"", [(b"etag", cached.etag)])
        else:
            await _answer(send, 200, cached.body, [*JSON_HEADERS, (b"etag", cached.etag)])
        return True

    async def _guard(self, handler: Any, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await handler(scope, receive, send)
        except Exception as exc:  # mapped exactly as FastAPI's handlers map them
            await problems.response_for(exc)(scope, receive, send)

    async def _post_completion(self, scope: Scope, receive: Receive, send: Send) -> None:
        """`POST /v1/completions`, as the documented route (api/routes.py)."""
        self.limiter.check(self.auth.require_ingest(bearer(scope)))
        check_headers(_header(scope, b"content-type") or "",
                      _header(scope, b"content-length"))
        body = await read_json(_body(receive))
        [outcome] = await self.ingestor.record([body])
        if outcome.status == "rejected":
            raise Problem(outcome.code or "validation_error", outcome.detail or "rejected")
        await _answer(send, outcome_status(outcome), orjson.dumps(outcome.body()))


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
