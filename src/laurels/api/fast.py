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

import hashlib
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from laurels.api import problems
from laurels.api.auth import Auth
from laurels.api.bodies import check_headers, read_json
from laurels.api.cursors import Cursors
from laurels.api.params import int_in, path_season, path_user_id
from laurels.api.problems import Problem, outcome_status
from laurels.board import Hint
from laurels.ingest import Ingestor
from laurels.notify import Hub
from laurels.ratelimit import RateLimiter
from laurels.reads import Reads
from laurels.seasons import Season

CACHE_SECONDS = 5.0  # also bounds how long a season's open/closed status may lag
MAX_ENTRIES = 256
BOARD = re.compile(r"/v1/leaderboards/([^/]+)")
GROUP_BOARD = re.compile(r"/v1/groups/([^/]+)/leaderboards/([^/]+)")
EVENTS = re.compile(r"/v1/leaderboards/([^/]+)/events")
AROUND = re.compile(r"/v1/leaderboards/([^/]+)/users/([^/]+)")
HEALTH_BODY = b'{"status":"ok"}'
JSON_HEADERS = [(b"content-type", b"application/json")]


@dataclass(frozen=True)
class Cached:
    body: bytes
    etag: bytes
    expires: float


class _Watch:
    """Registered with the hub like a stream: each hint of its season bumps
    the generation and drops the season's cached bodies."""

    __slots__ = ("cache", "closed", "generation", "season", "wake")

    def __init__(self, cache: BoardCache, season: str) -> None:
        self.cache = cache
        self.season = season
        self.generation = 0
        self.closed = False
        self.wake: Any = None

    def offer(self, hint: Hint) -> None:
        self.generation += 1
        self.cache.drop(self.season)


class BoardCache:
    def __init__(self, hub: Hub, cursors: Cursors, seconds: float = CACHE_SECONDS) -> None:
        self.hub = hub
        self.cursors = cursors
        self.seconds = seconds
        self.entries: dict[tuple[str, int], Cached] = {}
        self.watches: dict[str, _Watch] = {}

    def watch(self, season: str) -> _Watch:
        watch = self.watches.get(season)
        if watch is None:
            watch = self.watches[season] = _Watch(self, season)
            self.hub.watch_board(season, watch)
        return watch

    def drop(self, season: str | None = None) -> None:
        if season is None:
            self.entries.clear()
        else:
            for key in [k for k in self.entries if k[0] == season]:
                del self.entries[key]

    def get(self, season: str, limit: int) -> Cached | None:
        if not self.hub.is_hinted(season):
            return None  # a hint could be missed: no cache
        entry = self.entries.get((season, limit))
        if entry is None or entry.expires < time.monotonic():
            return None
        return entry

    def put(self, season: str, limit: int, body: bytes, generation: int) -> Cached:
        entry = Cached(body, etag_of(body), time.monotonic() + self.seconds)
        if generation == self.watch(season).generation and self.hub.is_hinted(season):
            if len(self.entries) >= MAX_ENTRIES:
                self.entries.clear()
            self.entries[(season, limit)] = entry
        return entry


class _GroupSeasonWatch:
    """Registered with the hub for a season (so, on a cluster, its shard is
    subscribed): each hint drops the group bodies it concerns."""

    __slots__ = ("cache", "closed", "season", "wake")

    def __init__(self, cache: GroupCache, season: str) -> None:
        self.cache = cache
        self.season = season
        self.closed = False
        self.wake: Any = None

    def offer(self, hint: Hint) -> None:
        self.cache.hint(self.season, hint)


@dataclass
class _Fill:
    """A body being read: kept only if nothing it depends on changed meanwhile."""

    group_id: str
    season: str
    season_generation: int
    group_generation: int
    version: int


class GroupCache:
    """The first pages of group boards, serialized, per process.

    A hint drops only the bodies of the groups it concerns (the hub's member
    index, group_index.py; every group of the season when it names nobody);
    a membership or access change drops the group's (`Hub.group_changed`,
    from this process at once, from others through Redis). A body read while
    something it depends on changed is not kept. While it has a body, a group
    is watched in the index, so its members are loaded there too: the fast
    lane checks a member's token against them, with no query."""

    def __init__(self, hub: Hub, seconds: float = CACHE_SECONDS) -> None:
        self.hub = hub
        self.index = hub.index
        self.seconds = seconds
        self.entries: dict[tuple[str, str, int], Cached] = {}  # (group, season, limit)
        self.access: dict[str, str] = {}  # group -> access, while it has bodies
        self.groups: dict[str, int] = {}  # group -> bodies held
        self.generations: dict[str, int] = {}  # group -> changes that concerned it
        self.season_generations: dict[str, int] = {}  # season -> changes of all groups
        self.filling: dict[str, int] = {}  # groups being read: concerned by every hint
        self.seasons: set[str] = set()
        hub.group_watchers.append(self)

    def hint(self, season: str, hint: Hint) -> None:
        concerned = self.index.concerned(hint)
        if concerned is None:
            self.season_generations[season] = self.season_generations.get(season, 0) + 1
            self._drop(lambda g, s: s == season)
            return
        concerned |= self.filling.keys()
        for gid in concerned:
            self.generations[gid] = self.generations.get(gid, 0) + 1
        self._drop(lambda g, s: s == season and g in concerned)

    def group_changed(self, group_id: str) -> None:
        self.generations[group_id] = self.generations.get(group_id, 0) + 1
        self._drop(lambda g, s: g == group_id)

    def get(self, group_id: str, season: str, limit: int) -> tuple[Cached, str] | None:
        if not self.hub.is_hinted(season):
            return None
        entry = self.entries.get((group_id, season, limit))
        if entry is None or entry.expires < time.monotonic():
            return None
        return entry, self.access[group_id]

    def begin(self, group_id: str, season: str) -> _Fill:
        if season not in self.seasons:
            self.seasons.add(season)
            self.hub.watch_board(season, _GroupSeasonWatch(self, season))
        self.filling[group_id] = self.filling.get(group_id, 0) + 1
        return _Fill(group_id, season, self.season_generations.get(season, 0),
                     self.generations.get(group_id, 0), self.index.version(group_id))

    def put(self, fill: _Fill, limit: int, body: bytes, access: str,
            members: list[int]) -> Cached:
        """Keep the body (and the members it was read from, in the index)
        unless something it depends on changed since `begin`."""
        gid, season = fill.group_id, fill.season
        self.end(fill)
        entry = Cached(body, etag_of(body), time.monotonic() + self.seconds)
        if (fill.season_generation, fill.group_generation, fill.version) != (
                self.season_generations.get(season, 0), self.generations.get(gid, 0),
                self.index.version(gid)) or not self.hub.is_hinted(season):
            return entry
        if len(self.entries) >= MAX_ENTRIES:
            self._drop(lambda g, s: True)
        if (gid, season, limit) not in self.entries:
            if gid not in self.groups:
                self.index.watch(gid)
            self.groups[gid] = self.groups.get(gid, 0) + 1
        self.entries[(gid, season, limit)] = entry
        self.access[gid] = access
        if not self.index.is_loaded(gid):
            self.index.load(gid, members, fill.version)
        return entry

    def end(self, fill: _Fill) -> None:
        """The read is over (kept by `put`, or failed)."""
        left = self.filling.get(fill.group_id, 0) - 1
        if left > 0:
            self.filling[fill.group_id] = left
        else:
            self.filling.pop(fill.group_id, None)

    def _drop(self, which: Any) -> None:
        for key in [k for k in self.entries if which(k[0], k[1])]:
            del self.entries[key]
            gid = key[0]
            left = self.groups[gid] - 1
            if left > 0:
                self.groups[gid] = left
            else:
                del self.groups[gid]
                self.access.pop(gid, None)
                self.index.unwatch(gid)


def etag_of(body: bytes) -> bytes:
    return b'"' + hashlib.blake2b(body, digest_size=12).hexdigest().encode() + b'"'


async def board_body(reads: Reads, cache: BoardCache, season_text: str, limit: int
                     ) -> Cached:
    """The top of a season's board, serialized, from the cache when it may be."""
    season = path_season(season_text, reads.settings.periods)
    hit = cache.get(season.name, limit)
    if hit is not None:
        return hit
    generation = cache.watch(season.name).generation  # before reading: see put()
    body = await reads.top(season, limit)
    seal_next(body, cache.cursors, season)
    return cache.put(season.name, limit, orjson.dumps(body), generation)


def board_cursor_owner(season: Season) -> str:
    return f"board:{season.name}"


def seal_next(body: dict[str, Any], cursors: Cursors, season: Season) -> None:
    """The page's `next` position, sealed into an opaque cursor (or null)."""
    if body["next"] is not None:
        body["next"] = cursors.encode(board_cursor_owner(season), body["next"])


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
