"""The one Pub/Sub subscription of a process: the hints of the seasons it
follows, and the notification channel (new notifications, a season's final
ranks, group changes).

Who follows a season: the per-process caches of its pages (api/caches.py)
and the hub's live streams (live/hub.py), each through `follow`. A hint goes to
the process's signals (board/signals.py): the caches first (a page read
after the hint is never the stale one), then the streams. On one
node every hint arrives on one channel; on Redis Cluster each followed
season's shard channel is subscribed (SSUBSCRIBE), and a season counts as
hinted once its subscription is confirmed. Whatever was published while the
subscription was away, every follower hears a plain `{"season": S}` for
each season it follows once the subscription is back: everyone refetches.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any

import orjson
from redis.exceptions import RedisClusterException, RedisError

from laurels.board.base import BoardBase
from laurels.board.hints import Hint, hint_of
from laurels.core.metrics import HINTS_RECEIVED

log = logging.getLogger("laurels.board")

STOP_POLL_SECONDS = 0.1  # how soon the loop notices a shutdown
RETRY_SECONDS = 1.0


class HintSubscription:
    def __init__(self, board: BoardBase) -> None:
        self.board = board
        self.connected = asyncio.Event()  # the (global) subscriptions are confirmed
        self.shards: dict[str, asyncio.Event] = {}  # on a cluster: season -> confirmed
        self.followed: Counter[str] = Counter()

    # -- who follows what ---------------------------------------------------------

    # Seasons are followed by name: the text form of the pub/sub edge, as
    # hints name them (a hint's "season"); the caches and streams key their
    # bodies and listeners by the same names.

    def follow(self, name: str) -> None:
        self.followed[name] += 1

    def unfollow(self, name: str) -> None:
        self.followed[name] -= 1
        if self.followed[name] <= 0:
            del self.followed[name]

    def is_hinted(self, name: str) -> bool:
        """Whether every change of season `name` reaches this process now."""
        if self.board.cluster:
            ready = self.shards.get(name)
            return ready is not None and ready.is_set()
        return self.connected.is_set()

    async def hinted(self, name: str) -> None:
        """Return once every later change of season `name` will be hinted to
        this process (Redis confirmed the subscription that carries it); the
        season must be followed."""
        if self.board.cluster:
            await self.shards.setdefault(name, asyncio.Event()).wait()
        else:
            await self.connected.wait()

    # -- what arrives -----------------------------------------------------------------

    def dispatch(self, channel: str, data: bytes | str) -> None:
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        if not isinstance(message, dict):
            return
        keys = self.board.keys
        if channel == keys.hint_channel() or channel.endswith("}:hints"):
            HINTS_RECEIVED.inc()
            hint = hint_of(message)
            if hint is not None:
                self._hint(hint)
        elif isinstance(message.get("group_changed"), str):
            if message.get("origin") != self.board.origin:  # ours was handled at once
                self.board.signals.group_changed(message["group_changed"])
        else:
            self.board.signals.note(message)

    def _hint(self, hint: Hint) -> None:
        self.board.signals.hint(hint)  # the caches first, then the streams

    def _refetch(self, seasons: set[str] | None = None) -> None:
        """Hints may have been lost while we were away: everyone refetches."""
        for season in list(self.followed):
            if seasons is None or season in seasons:
                self._hint({"season": season})

    # -- the loop -------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        await (self._run_cluster(stop) if self.board.cluster else self._run_single(stop))

    async def _pause(self, stop: asyncio.Event, exc: BaseException) -> None:
        self.connected.clear()
        for ready in self.shards.values():
            ready.clear()
        log.warning("hint subscription lost (%s); resubscribing", exc)
        try:
            await asyncio.wait_for(stop.wait(), RETRY_SECONDS)
        except TimeoutError:
            pass

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
                        self._refetch()
            except (RedisError, OSError) as exc:
                await self._pause(stop, exc)
            finally:
                try:
                    await pubsub.aclose()
                except (RedisError, OSError):
                    pass

    async def _run_cluster(self, stop: asyncio.Event) -> None:
        """Redis Cluster: sharded Pub/Sub, one SSUBSCRIBE per followed season
        (on that season's shard), plus the notification channel."""
        missed: set[str] = set()  # seasons whose hints may have been lost meanwhile
        while not stop.is_set():
            pubsub: Any = self.board.redis.pubsub()
            sharded: dict[str, str] = {}  # channel -> season
            try:
                await pubsub.subscribe(self.board.keys.notification_channel())
                while not stop.is_set():
                    await self._follow_shards(pubsub, sharded)
                    got = bool(sharded) and await self._sharded_message(pubsub, sharded, missed)
                    message = await pubsub.get_message(timeout=0.0 if got or sharded else 0.1)
                    if message and message.get("type") == "message":
                        self.dispatch(str(message["channel"]), message["data"])
                    elif message and message.get("type") == "subscribe":
                        self.connected.set()
            except (RedisError, RedisClusterException, OSError) as exc:
                missed |= set(self.followed)
                await self._pause(stop, exc)
            finally:
                try:
                    await pubsub.aclose()
                except (RedisError, RedisClusterException, OSError):
                    pass

    async def _follow_shards(self, pubsub: Any, sharded: dict[str, str]) -> None:
        """SSUBSCRIBE to the shard channel of each followed season, SUNSUBSCRIBE
        from those no longer followed (`sharded`: channel -> season)."""
        keys = self.board.keys
        wanted = {keys.shard_hint_channel(s): s for s in self.followed}
        for channel in wanted.keys() - sharded.keys():
            sharded[channel] = wanted[channel]
            await pubsub.ssubscribe(channel)
        for channel in sharded.keys() - wanted.keys():
            await pubsub.sunsubscribe(channel)
            gone = sharded.pop(channel)
            if gone not in self.followed:
                self.shards.pop(gone, None)

    async def _sharded_message(self, pubsub: Any, sharded: dict[str, str],
                               missed: set[str]) -> bool:
        """Handle one sharded message, if any; True if it was a hint. A
        confirmed SSUBSCRIBE marks its season hinted (and, after a lapse,
        makes its followers refetch)."""
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
                    self._refetch({season})
        return False
