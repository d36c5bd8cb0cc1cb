"""Hints and personal notifications.

- Hints: the apply path publishes "season S changed" on one Redis Pub/Sub
  channel (never a score). Each API process holds ONE subscription (`Hub`) and
  fans hints out to its SSE clients, coalescing per client, so a storm of
  completions does not become a storm of refetches. A hint is only a hint:
  clients refetch the canonical API.
- Notifications: the apply script appends rank events (entered the top 10,
  passed someone in the top 100) to the season's Redis stream atomically with
  the score change. The projector (`Notifier`, off the ingest hot path) turns
  them into durable PostgreSQL rows, idempotently, then tells the API
  processes, which push them to the learner's notification stream.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson
from psycopg.types.json import Jsonb
from redis.exceptions import RedisClusterException, RedisError, ResponseError

from laurels.board import Board, Hint, hint_of
from laurels.db import Database
from laurels.group_index import GroupIndex
from laurels.metrics import (
    HINTS_COALESCED,
    HINTS_RECEIVED,
    HINTS_SENT,
    NOTIFICATIONS_DROPPED,
    NOTIFICATIONS_WRITTEN,
    SSE_CONNECTIONS,
)
from laurels.seasons import period_of, season_of

log = logging.getLogger("laurels.notify")

GROUP = "laurels"
CHANGED_PER_SECOND = 4
USER_BUFFER = 50
STOP_POLL_SECONDS = 0.1  # how soon the hints loop notices a shutdown


class HintWatcher(Protocol):
    """A per-process cache of a season's board (api/fast.py), told of every hint."""

    def offer(self, hint: Hint) -> None: ...


class GroupWatcher(Protocol):
    """A per-process cache of group boards (api/fast.py), told of membership
    changes (it hears hints as a `HintWatcher` of each season it caches)."""

    def group_changed(self, group_id: str) -> None: ...


class BoardListener:
    """One SSE client of a season: O(1) state whatever the hint rate."""

    __slots__ = ("closed", "group", "pending", "rebuilt", "season", "wake")

    def __init__(self, season: str, group: str | None = None) -> None:
        self.season = season
        self.group = group  # a group board's stream: hints routed by member
        self.pending: dict[str, Any] | None = None
        self.rebuilt = False
        self.closed = False  # the server shuts down: end the stream cleanly
        self.wake = asyncio.Event()

    def offer(self, hint: Hint) -> None:
        if hint.get("kind") == "rebuilt":
            self.rebuilt = True
        elif self.pending is None:
            self.pending = {k: v for k, v in hint.items() if k in ("season", "user_id")}
        else:
            HINTS_COALESCED.inc()
            self.pending = {"season": self.season}  # several changes: no user id
        self.wake.set()

    def take(self) -> list[dict[str, str]]:
        out = []
        if self.rebuilt:
            out.append({"event": "rebuilt", "data": orjson.dumps(
                {"season": self.season}).decode()})
            self.rebuilt = False
        if self.pending is not None:
            out.append({"event": "changed", "data": orjson.dumps(self.pending).decode()})
            self.pending = None
        self.wake.clear()
        HINTS_SENT.inc(len(out))
        return out


class UserListener:
    """One SSE client of a learner's notifications: a bounded buffer of ids."""

    __slots__ = ("closed", "finals", "ids", "user_id", "wake")

    def __init__(self, user_id: int) -> None:
        self.user_id = user_id
        self.ids: deque[int] = deque(maxlen=USER_BUFFER)
        self.finals: list[str] = []
        self.closed = False
        self.wake = asyncio.Event()

    def offer(self, notification_id: int) -> None:
        if len(self.ids) == self.ids.maxlen:
            NOTIFICATIONS_DROPPED.inc()  # the oldest goes; it stays in PostgreSQL
        self.ids.append(notification_id)
        self.wake.set()

    def offer_final(self, season: str) -> None:
        self.finals.append(season)
        self.wake.set()


class Hub:
    """The one Pub/Sub subscription of an API process, fanned out to its clients."""

    def __init__(self, board: Board) -> None:
        self.board = board
        self.boards: dict[str, set[BoardListener]] = {}
        self.users: dict[int, set[UserListener]] = {}
        self.connected = asyncio.Event()  # the (global) subscriptions are confirmed
        self.shards: dict[str, asyncio.Event] = {}  # on a cluster: season -> confirmed
        # Per-process caches of a season's board, dropped by its hints (api/fast.py).
        self.watchers: dict[str, list[HintWatcher]] = {}
        # Group boards: their streams by season and group, the members of the
        # groups watched here by member (group_index.py), their body caches.
        self.group_boards: dict[str, dict[str, set[BoardListener]]] = {}
        self.index = GroupIndex()
        self.group_watchers: list[GroupWatcher] = []
        self._streams = 0
        self.loop: asyncio.AbstractEventLoop | None = None  # where the streams run

    def listen_board(self, season: str) -> BoardListener:
        listener = BoardListener(season)
        self.boards.setdefault(season, set()).add(listener)
        self._streams += 1
        SSE_CONNECTIONS.labels("board").inc()
        return listener

    def unlisten_board(self, listener: BoardListener) -> None:
        group = self.boards.get(listener.season)
        if group is not None and listener in group:
            group.discard(listener)
            self._streams -= 1
            SSE_CONNECTIONS.labels("board").dec()
            if not group:
                del self.boards[listener.season]

    def listen_group(self, group_id: str, season: str) -> BoardListener:
        listener = BoardListener(season, group_id)
        self.group_boards.setdefault(season, {}).setdefault(group_id, set()).add(listener)
        self.index.watch(group_id)
        self._streams += 1
        SSE_CONNECTIONS.labels("group").inc()
        return listener

    def unlisten_group(self, listener: BoardListener) -> None:
        groups = self.group_boards.get(listener.season, {})
        gid = listener.group or ""
        if listener in groups.get(gid, ()):
            groups[gid].discard(listener)
            self.index.unwatch(gid)
            self._streams -= 1
            SSE_CONNECTIONS.labels("group").dec()
            if not groups[gid]:
                del groups[gid]
            if not groups:
                del self.group_boards[listener.season]

    def listen_user(self, user_id: int) -> UserListener:
        listener = UserListener(user_id)
        self.users.setdefault(user_id, set()).add(listener)
        self._streams += 1
        SSE_CONNECTIONS.labels("notifications").inc()
        return listener

    def unlisten_user(self, listener: UserListener) -> None:
        group = self.users.get(listener.user_id)
        if group is not None and listener in group:
            group.discard(listener)
            self._streams -= 1
            SSE_CONNECTIONS.labels("notifications").dec()
            if not group:
                del self.users[listener.user_id]

    def _fan_out(self, hint: Hint) -> None:
        """A hint from Redis: to this process's caches first, then its streams."""
        for watcher in self.watchers.get(hint["season"], ()):
            watcher.offer(hint)
        for listener in list(self.boards.get(hint["season"], ())):
            listener.offer(hint)
        self._route_to_groups(hint)

    def _route_to_groups(self, hint: Hint) -> None:
        """A hint to the group streams and caches it concerns: by member
        through the index, not by asking every listener."""
        season = hint["season"]
        groups = self.group_boards.get(season)
        if groups:
            concerned = self.index.concerned(hint)
            for gid in list(groups) if concerned is None else concerned & groups.keys():
                for listener in list(groups.get(gid, ())):
                    listener.offer(hint)

    def group_changed(self, group_id: str) -> None:
        """A group's membership or access changed (here or in another
        process): its caches drop, its streams refetch, its members reload."""
        self.index.changed(group_id)
        for watcher in self.group_watchers:
            watcher.group_changed(group_id)
        for season, groups in list(self.group_boards.items()):
            for listener in list(groups.get(group_id, ())):
                listener.offer({"season": season})

    def dispatch(self, channel: str, data: bytes | str) -> None:
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        if not isinstance(message, dict):
            return
        if channel == self.board.keys.hint_channel() or channel.endswith("}:hints"):
            HINTS_RECEIVED.inc()
            hint = hint_of(message)
            if hint is not None:
                self._fan_out(hint)
        else:
            self._note(message)

    def _note(self, message: dict[str, Any]) -> None:
        """A message of the notification channel: a learner's notification,
        a season's final ranks, or a group's membership change."""
        if isinstance(message.get("group_changed"), str):
            if message.get("origin") != self.board.origin:  # ours was handled at once
                self.group_changed(message["group_changed"])
        elif "season_final" in message:
            for group in self.users.values():
                for user_listener in group:
                    user_listener.offer_final(str(message["season_final"]))
        else:
            uid, nid = message.get("user_id"), message.get("id")
            if isinstance(uid, int) and isinstance(nid, int):
                for user_listener in list(self.users.get(uid, ())):
                    user_listener.offer(nid)

    def watch_board(self, season: str, watcher: HintWatcher) -> None:
        """`watcher.offer(hint)` for every hint of `season`, before any stream
        hears of it (so a stream's refetch never meets a stale cache)."""
        self.watchers.setdefault(season, []).append(watcher)

    def local_hint(self, hint: Hint) -> None:
        """A hint this process publishes: its caches drop at once, before the
        writer's answer leaves (streams still hear it through Redis)."""
        for watcher in self.watchers.get(str(hint.get("season")), ()):
            watcher.offer(hint)

    def is_hinted(self, season: str) -> bool:
        """Whether every change of `season` reaches this process now."""
        if self.board.cluster:
            ready = self.shards.get(season)
            return ready is not None and ready.is_set()
        return self.connected.is_set()

    def stream_count(self) -> int:
        return self._streams

    def close_all(self) -> None:
        """End every stream of this process (server shutdown)."""
        listeners: list[BoardListener | UserListener] = []
        for boards in self.boards.values():
            listeners += boards
        for users in self.users.values():
            listeners += users
        for groups in self.group_boards.values():
            for group in groups.values():
                listeners += group
        for listener in listeners:
            listener.closed = True
            listener.wake.set()

    def close_all_soon(self) -> None:
        """From a signal handler (the server starts shutting down): end every
        stream cleanly on the event loop, none is cut off mid-response."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.close_all)

    def _refetch_all(self, seasons: set[str] | None = None) -> None:
        """Hints may have been lost while we were away: everyone refetches."""
        for season, watchers in self.watchers.items():
            if seasons is None or season in seasons:
                for watcher in watchers:
                    watcher.offer({"season": season})
        for season, group in list(self.boards.items()):
            if seasons is None or season in seasons:
                for listener in list(group):
                    listener.offer({"season": season})
        for season, groups in list(self.group_boards.items()):
            if seasons is None or season in seasons:
                for group in list(groups.values()):
                    for listener in list(group):
                        listener.offer({"season": season})

    async def hinted(self, season: str) -> None:
        """Return once every later change of `season` will be hinted to this
        process: Redis has confirmed the subscription that carries it. An SSE
        stream sends `ready` only then."""
        if self.board.cluster:
            await self.shards.setdefault(season, asyncio.Event()).wait()
        else:
            await self.connected.wait()

    async def _pause(self, stop: asyncio.Event, exc: BaseException) -> None:
        self.connected.clear()
        for ready in self.shards.values():
            ready.clear()
        log.warning("hint subscription lost (%s); resubscribing", exc)
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except TimeoutError:
            pass

    async def _run_cluster(self, stop: asyncio.Event) -> None:
        """Redis Cluster: sharded Pub/Sub, one SSUBSCRIBE per season that has
        listeners here (on that season's shard), plus the notification channel.
        A season counts as hinted once its SSUBSCRIBE is confirmed."""
        keys = self.board.keys
        missed: set[str] = set()  # seasons whose hints may have been lost meanwhile
        while not stop.is_set():
            pubsub: Any = self.board.redis.pubsub()
            sharded: dict[str, str] = {}  # channel -> season
            try:
                await pubsub.subscribe(keys.notification_channel())
                while not stop.is_set():
                    await self._follow_seasons(pubsub, sharded)
                    got = bool(sharded) and await self._sharded_message(pubsub, sharded, missed)
                    message = await pubsub.get_message(timeout=0.0 if got or sharded else 0.1)
                    if message and message.get("type") == "message":
                        self.dispatch(str(message["channel"]), message["data"])
                    elif message and message.get("type") == "subscribe":
                        self.connected.set()
            except (RedisError, RedisClusterException, OSError) as exc:
                missed |= {*self.boards, *self.group_boards}
                await self._pause(stop, exc)
            finally:
                try:
                    await pubsub.aclose()
                except (RedisError, RedisClusterException, OSError):
                    pass

    async def _follow_seasons(self, pubsub: Any, sharded: dict[str, str]) -> None:
        """SSUBSCRIBE to the shard channel of each season with listeners here,
        SUNSUBSCRIBE from those without (`sharded`: channel -> season)."""
        keys = self.board.keys
        wanted = {keys.shard_hint_channel(s): s
                  for s in [*self.boards, *self.watchers, *self.group_boards]}
        for channel in wanted.keys() - sharded.keys():
            sharded[channel] = wanted[channel]
            await pubsub.ssubscribe(channel)
        for channel in sharded.keys() - wanted.keys():
            await pubsub.sunsubscribe(channel)
            gone = sharded.pop(channel)
            if gone not in self.boards and gone not in self.watchers \
                    and gone not in self.group_boards:
                self.shards.pop(gone, None)

    async def _sharded_message(self, pubsub: Any, sharded: dict[str, str],
                               missed: set[str]) -> bool:
        """Handle one sharded message, if any; True if it was a hint. A
        confirmed SSUBSCRIBE marks its season hinted (and, after a lapse,
        makes its listeners refetch)."""
        message = await pubsub.get_sharded_message(timeout=0.1)
        if message and message.get("type") == "smessage":
            self.dispatch(str(message["channel"]), message["data"])
            return True
        if message and message.get("type") == "ssubscribe":
            season = sharded.get(str(message["channel"]))
            if season is not None:
                self.shards.setdefault(season, asyncio.Event()).set()
                if season in missed:
                    missed.discard(season)
                    self._refetch_all({season})
        return False

    async def run(self, stop: asyncio.Event) -> None:
        self.loop = asyncio.get_running_loop()
        await (self._run_cluster(stop) if self.board.cluster else self._run_single(stop))

    async def _run_single(self, stop: asyncio.Event) -> None:
        hints = self.board.keys.hint_channel()
        channels = [hints, self.board.keys.notification_channel()]
        while not stop.is_set():
            pubsub = self.board.redis.pubsub()
            try:
                await pubsub.subscribe(*channels)
                while not stop.is_set():
                    message = await pubsub.get_message(timeout=STOP_POLL_SECONDS)
                    if not message:
                        continue
                    if message.get("type") == "message":
                        self.dispatch(str(message["channel"]), message["data"])
                    elif message.get("type") == "subscribe" and message["channel"] == hints:
                        # Confirmed: from now on every hint reaches us. Whatever
                        # was published while we were away: everyone refetches.
                        self.connected.set()
                        self._refetch_all()
            except (RedisError, OSError) as exc:
                await self._pause(stop, exc)
            finally:
                try:
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
                except (RedisError, OSError):
                    pass


class Notifier:
    """Turns the seasons' rank-event streams into durable notifications."""

    def __init__(self, db: Database, board: Board) -> None:
        self.db = db
        self.board = board
        self.consumer = f"{os.uname().nodename}-{os.getpid()}"
        self._groups: set[str] = set()
        self._seasons: list[str] = []
        self._seasons_at = 0.0

    async def _open_seasons(self) -> list[str]:
        """The open weeks (rank events come from weekly boards only), re-read
        every 10 s (`consume` adds this week's, so the first notifications of
        a new week come at once)."""
        if time.monotonic() - self._seasons_at > 10:
            self._seasons = [r["season"] for r in await self.db.fetch("open_seasons")
                             if period_of(r["season"]) == "week"]
            self._seasons_at = time.monotonic()
        return self._seasons

    async def _group(self, stream: str, create: bool = True) -> bool:
        """Make sure the consumer group exists; False when the stream does not
        and `create` is off (this week before its first rank event: no key
        is made for a season that may never have a board)."""
        if stream in self._groups:
            return True
        try:
            await self.board.redis.xgroup_create(stream, GROUP, id="0", mkstream=create)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                if not create:
                    return False  # no such stream (yet)
                raise
        self._groups.add(stream)
        return True

    async def consume(self, count: int = 200) -> int:
        """Process what the streams hold (and what dead consumers left); returns entries."""
        handled = 0
        known = await self._open_seasons()
        this_week = season_of(datetime.now(UTC)).name
        for season in known if this_week in known else [*known, this_week]:
            stream = self.board.season_keys(season).notify_stream
            try:
                if not await self._group(stream, create=season in known):
                    continue
                claim: Any = await self.board.redis.xautoclaim(
                    stream, GROUP, self.consumer, min_idle_time=30_000, count=count)
                entries = list(claim[1])
                reply: Any = await self.board.redis.xreadgroup(
                    GROUP, self.consumer, {stream: ">"}, count=count)
                for _, items in reply or []:
                    entries += items
            except ResponseError as exc:
                if "NOGROUP" in str(exc):  # the stream vanished with a Redis restart
                    self._groups.discard(stream)
                    continue
                raise
            for entry_id, fields in entries:
                if fields:
                    await self._handle(season, fields)
                await self.board.redis.xack(stream, GROUP, entry_id)
                handled += 1
        return handled

    async def _handle(self, season: str, f: dict[str, str]) -> None:
        uid, seq = int(f["uid"]), f["seq"]
        passed_ids = [int(p) for p in filter(None, f.get("passed", "").split(","))]
        created: list[tuple[int, int]] = []
        async with self.db.transaction() as conn:
            # Share-lock everyone involved: an erasure (FOR UPDATE) either
            # committed before (we see it and write nothing about them) or
            # waits for us (and then deletes and scrubs what we wrote).
            users = await self.db.fetch("lock_users", conn, user_ids=sorted({uid, *passed_ids}))
            erased = {r["user_id"] for r in users if r["erased"]}
            if uid in erased:
                return
            if f.get("top10") == "1":
                row = await self.db.fetch_one(
                    "insert_notification", conn, user_id=uid, kind="top10", season=season,
                    data=Jsonb({"rank": int(f["rank"]), "score": int(f["score"])}),
                    dedup_key=f"top10:{season}:{seq}")
                if row:
                    created.append((uid, row["id"]))
                    NOTIFICATIONS_WRITTEN.labels("top10").inc()
            for target in passed_ids:
                if target in erased:
                    continue
                # Who passed them, by id only: the name is resolved when the
                # notification is read or sent (notifications.py), as the
                # mover is then (an anonymous one stays unnamed).
                data = Jsonb({"by_user_id": uid, "season": season})
                key = f"overtaken:{season}:{seq}"
                row = await self.db.fetch_one("refresh_overtaken", conn, user_id=target,
                                              season=season, data=data, dedup_key=key)
                if row is None:
                    row = await self.db.fetch_one(
                        "insert_notification", conn, user_id=target, kind="overtaken",
                        season=season, data=data, dedup_key=key)
                if row:
                    created.append((target, row["id"]))
                    NOTIFICATIONS_WRITTEN.labels("overtaken").inc()
        for target, nid in created:
            await self.board.redis.publish(self.board.keys.notification_channel(),
                                           orjson.dumps({"user_id": target, "id": nid}))

    async def season_final(self, season: str, conn: Any) -> None:
        """In the finalizing transaction: everyone's final rank, once (weeks
        only: the contract's `season_final` is weekly)."""
        if period_of(season) != "week":
            return
        written = await self.db.run("notify_season_final", conn, season=season)
        NOTIFICATIONS_WRITTEN.labels("season_final").inc(max(0, written))

    async def announce_final(self, season: str) -> None:
        if period_of(season) != "week":
            return
        try:
            await self.board.redis.publish(self.board.keys.notification_channel(),
                                           orjson.dumps({"season_final": season}))
        except RedisError as exc:
            log.warning("season_final not announced live: %s", exc)
