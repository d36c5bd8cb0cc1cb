"""The per-process caches of board pages: the top of a season's board, a
learner's neighbourhood, and the first pages of group boards, serialized,
with an `ETag`.

Every hint makes every open page refetch the top of its board, so these are
read far more often than they change; the top is the same for every viewer,
and a learner's page reads their neighbourhood again on each reload and in
each tab. Each cache keeps its own invalidation: it hears every hint of this
process before any stream does (the board's `on_hint`: this process's own
changes at once, other processes' through the subscription), follows the
seasons it holds on the subscription (so, on a cluster, their shards are
subscribed), and uses a body only while that subscription is confirmed. A
body read while a hint arrived is not kept: a cached body is never older
than the newest hint this process has seen.
"""

from __future__ import annotations

import hashlib
import math
import random
import time
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

import orjson

from laurels.api.cursors import Cursors
from laurels.board import Hint, HintSubscription
from laurels.core.seasons import Season
from laurels.core.shapes import BoardPage
from laurels.live.group_index import GroupIndex
from laurels.reads.boards import Reads

CACHE_SECONDS = 5.0  # a group board's first page
# A season's top and neighbourhoods live at most this long: every hint drops
# them, so this only bounds what a hint missed while the subscription was
# confirmed could cost, and no body outlives its season's closing (its
# `status`). It was 5 s: with 10,000 boards read at random, most reads
# missed (issue 42).
BOARD_SECONDS = 60.0
# Each body lives a random part of BOARD_SECONDS, from this share of it up:
# bodies read together (a page's first reads after a start, a benchmark's
# warm-up) would otherwise all expire together, and again together each
# time after, every board of a kind read afresh in the same second.
BOARD_SECONDS_LEAST = 0.75
# Top pages kept: a kind may have 10,000 boards, each read (issue 42). When
# full, the oldest season's bodies make room (it did start afresh: with 500
# boards read at random, the top-100 ran at 0.14 of /healthz).
MAX_ENTRIES = 16_384
TOP_BYTES = 64 << 20
# Seasons a cache follows at once: any valid season name may be asked for (every
# ISO week of 9,999 years): past this the oldest is unfollowed, its bodies dropped.
MAX_SEASONS = 16_384
AROUND_BYTES = 32 << 20  # neighbourhoods' bodies kept, in all (1 KB at radius 5, up to 33 KB)
TEAM_BYTES = 16 << 20  # team boards' pages kept, in all (api/team_routes.py)


GROUP_MAX_SEASONS = 512  # a group cache's seasons followed (past them it starts afresh)
GROUP_MAX_ENTRIES = 256  # its bodies

MAX_KNOWN_PAGES = 32_768
MAX_KNOWN_QUERY = 256  # bytes: longer query strings are parsed each time


class KnownPages:
    """Each (path, query string) the lane answered with a body of a
    `BoardCache`, and the body it named: the season's name and its key in
    the season (a top page's limit; a neighbourhood's learner and radius),
    kept for good for a season's name, for an alias (`current`) while its
    season runs by the clock (as `path_season` keeps them). The lane sends a
    known body the cache holds without routing or parsing (issue 30; a
    neighbourhood once its token is checked, issue 42). Past
    `MAX_KNOWN_PAGES` the oldest known page is forgotten."""

    def __init__(self) -> None:
        self.pages: dict[tuple[str, bytes], tuple[str, Hashable, float, float]] = {}

    def keep(self, path: str, query: bytes, season: Season, alias: bool,
             limit: Hashable) -> None:
        if len(query) > MAX_KNOWN_QUERY:
            return
        if len(self.pages) >= MAX_KNOWN_PAGES:
            del self.pages[next(iter(self.pages))]
        since, until = ((season.starts_at.timestamp(), season.ends_at.timestamp()) if alias
                        else (-math.inf, math.inf))
        self.pages[(path, query)] = (season.name, limit, since, until)

    def get(self, path: str, query: bytes) -> tuple[str, Hashable] | None:
        page = self.pages.get((path, query))
        if page is None:
            return None
        name, limit, since, until = page
        if not since <= time.time() < until:
            return None
        return name, limit


@dataclass(frozen=True)
class Cached:
    body: bytes
    expires: float

    @cached_property
    def etag(self) -> bytes:
        """Computed when first sent (a neighbourhood's is never: it has none)."""
        return etag_of(self.body)


class BoardCache:
    """Bodies read from each season's board, per key within the season (the
    top's `limit`; a neighbourhood's learner and radius): at most
    `max_entries` bodies and `max_bytes` of them in all (when full, the
    oldest season's bodies make room), of at most `max_seasons` seasons
    followed (past them, the oldest is unfollowed)."""

    def __init__(self, subscription: HintSubscription, cursors: Cursors,
                 seconds: float = BOARD_SECONDS, max_entries: int = MAX_ENTRIES,
                 max_bytes: int | None = TOP_BYTES, max_seasons: int = MAX_SEASONS) -> None:
        self.subscription = subscription
        self.cursors = cursors
        self.seconds = seconds
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_seasons = max_seasons
        self.entries: dict[str, dict[Hashable, Cached]] = {}  # season -> key -> body
        self.size = 0
        self.bytes = 0
        # season -> its generation while followed: a new value at each hint
        # and at each follow, from one counter, so a body read before a
        # season was unfollowed never matches it followed again.
        self.generations: dict[str, int] = {}
        self.ticks = 0
        self.epoch = 0  # times it forgot every season

    def _tick(self) -> int:
        self.ticks += 1
        return self.ticks

    def hint(self, hint: Hint) -> None:
        season = hint["season"]
        if season in self.generations:
            self.generations[season] = self._tick()
            self.drop(season)

    def generation(self, season: str) -> tuple[int, int]:
        """The season's generation, in this epoch (following it from now on)."""
        if season not in self.generations:
            while len(self.generations) >= self.max_seasons:
                self.unfollow(next(iter(self.generations)))
            self.generations[season] = self._tick()
            self.subscription.follow(season)
        return self.epoch, self.generations[season]

    def unfollow(self, season: str) -> None:
        """One season unfollowed and its bodies dropped."""
        del self.generations[season]
        self.subscription.unfollow(season)
        self.drop(season)

    def forget(self) -> None:
        """Every season unfollowed and every body dropped; a body being read
        meanwhile is not kept (its generation is of the epoch before)."""
        for season in self.generations:
            self.subscription.unfollow(season)
        self.generations.clear()
        self.drop()
        self.epoch += 1

    def invalidate(self) -> None:
        """Every body dropped, and none being read meanwhile kept (a learner
        became hidden, anonymous or erased where this process may have
        missed the hint: reads/privacy.py); the seasons stay followed."""
        self.drop()
        self.epoch += 1

    def drop(self, season: str | None = None) -> None:
        if season is None:
            self.entries.clear()
            self.size = self.bytes = 0
        elif (held := self.entries.pop(season, None)) is not None:
            self.size -= len(held)
            self.bytes -= sum(len(e.body) for e in held.values())

    def get(self, season: str, key: Hashable) -> Cached | None:
        if not self.subscription.is_hinted(season):
            return None  # a hint could be missed: no cache
        entry = self.entries.get(season, {}).get(key)
        if entry is None or entry.expires < time.monotonic():
            return None
        return entry

    def put(self, season: str, key: Hashable, body: bytes, generation: tuple[int, int],
            lasts: float = math.inf) -> Cached:
        """Keep a body for at most `seconds`, and at most `lasts` seconds
        (until its season's status changes)."""
        seconds = self.seconds * random.uniform(BOARD_SECONDS_LEAST, 1.0)  # noqa: S311 (a lifetime)
        entry = Cached(body, time.monotonic() + min(seconds, lasts))
        if lasts > 0 and generation == self.generation(season) \
                and self.subscription.is_hinted(season):
            if (old := self.entries.get(season, {}).pop(key, None)) is not None:
                self.size -= 1
                self.bytes -= len(old.body)
            while self.entries and (self.size >= self.max_entries or (
                    self.max_bytes is not None and self.bytes + len(body) > self.max_bytes)):
                self.drop(next(iter(self.entries)))  # the oldest season's bodies
            held = self.entries.setdefault(season, {})
            held[key] = entry
            self.size += 1
            self.bytes += len(body)
        return entry


@dataclass
class _Fill:
    """A body being read: kept only if nothing it depends on changed meanwhile."""

    group_id: str
    season: str
    season_generation: int
    group_generation: int
    version: int
    epoch: int


class GroupCache:
    """The first pages of group boards, serialized, per process.

    A hint drops only the bodies of the groups it concerns (the member
    index, live/group_index.py; every group of the season when it names nobody);
    a membership or access change drops the group's (the board's
    `on_group_change`: from this process at once, from others through
    Redis). A body read while
    something it depends on changed is not kept. While it has a body, a group
    is watched in the index, so its members are loaded there too: the fast
    lane checks a member's token against them, with no query."""

    def __init__(self, subscription: HintSubscription, index: GroupIndex,
                 seconds: float = CACHE_SECONDS) -> None:
        self.subscription = subscription
        self.index = index
        self.seconds = seconds
        self.entries: dict[tuple[str, str, int], Cached] = {}  # (group, season, limit)
        self.access: dict[str, str] = {}  # group -> access, while it has bodies
        self.groups: dict[str, int] = {}  # group -> bodies held
        self.generations: dict[str, int] = {}  # group -> changes that concerned it
        self.season_generations: dict[str, int] = {}  # season -> changes of all groups
        self.filling: dict[str, int] = {}  # groups being read: concerned by every hint
        self.seasons: set[str] = set()
        self.epoch = 0  # times it forgot every season (GROUP_MAX_SEASONS)

    def hint(self, hint: Hint) -> None:
        season = hint["season"]
        if season not in self.seasons:
            return
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
        if not self.subscription.is_hinted(season):
            return None
        entry = self.entries.get((group_id, season, limit))
        if entry is None or entry.expires < time.monotonic():
            return None
        return entry, self.access[group_id]

    def begin(self, group_id: str, season: str) -> _Fill:
        if season not in self.seasons:
            if len(self.seasons) >= GROUP_MAX_SEASONS:
                self.forget()
            self.seasons.add(season)
            self.subscription.follow(season)
        self.filling[group_id] = self.filling.get(group_id, 0) + 1
        return _Fill(group_id, season, self.season_generations.get(season, 0),
                     self.generations.get(group_id, 0), self.index.version(group_id),
                     self.epoch)

    def forget(self) -> None:
        """As BoardCache.forget: every season unfollowed, every body dropped,
        and a body being read meanwhile not kept (its fill's epoch)."""
        self._drop(lambda g, s: True)
        for season in self.seasons:
            self.subscription.unfollow(season)
        self.seasons.clear()
        self.season_generations.clear()
        self.epoch += 1

    def put(self, fill: _Fill, limit: int, body: bytes, access: str,
            members: list[int]) -> Cached:
        """Keep the body (and the members it was read from, in the index)
        unless something it depends on changed since `begin`."""
        gid, season = fill.group_id, fill.season
        self.end(fill)
        entry = Cached(body, time.monotonic() + self.seconds)
        if (fill.season_generation, fill.group_generation, fill.version, fill.epoch) != (
                self.season_generations.get(season, 0), self.generations.get(gid, 0),
                self.index.version(gid), self.epoch) or season not in self.seasons \
                or not self.subscription.is_hinted(season):
            return entry
        if len(self.entries) >= GROUP_MAX_ENTRIES:
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


def not_modified(headers: Iterable[tuple[bytes, bytes]], etag: bytes) -> bool:
    """Whether the request's `If-None-Match` (in `headers`) names `etag` (or is `*`)."""
    for name, value in headers:
        if name == b"if-none-match":
            return etag in [v.strip() for v in value.split(b",")] or value.strip() == b"*"
    return False


async def board_body(reads: Reads, cache: BoardCache, season: Season, limit: int
                     ) -> Cached:
    """The top of a season's board, serialized, from the cache when it may be."""
    hit = cache.get(season.name, limit)
    if hit is not None:
        return hit
    generation = cache.generation(season.name)  # before reading: see put()
    changes = reads.status_changes(season)  # before reading, as the body's status
    body = await reads.top(season, limit)
    seal_next(body, cache.cursors, season)
    return cache.put(season.name, limit, orjson.dumps(body), generation, lasting(changes))


async def around_body(reads: Reads, cache: BoardCache, season: Season, user_id: int,
                      radius: int) -> Cached:
    """A learner's neighbourhood, serialized, from the cache when it may be
    (the caller has checked that the token may read it)."""
    key = (user_id, radius)
    hit = cache.get(season.name, key)
    if hit is not None:
        return hit
    generation = cache.generation(season.name)  # before reading: see put()
    changes = reads.status_changes(season)
    body = await reads.around(season, user_id, radius)
    return cache.put(season.name, key, orjson.dumps(body), generation, lasting(changes))


def lasting(changes: datetime | None) -> float:
    """Seconds a body may live given when its season's status changes."""
    return math.inf if changes is None else (changes - datetime.now(UTC)).total_seconds()


def board_cursor_owner(season: Season) -> str:
    return f"board:{season.name}"


def seal_next(body: BoardPage, cursors: Cursors, season: Season) -> None:
    """The page's `next` position, sealed into an opaque cursor (or null)."""
    if body["next"] is not None:
        body["next"] = cursors.encode(board_cursor_owner(season), body["next"])


