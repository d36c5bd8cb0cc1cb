"""The seasons' rank-event streams (apply.lua appends "entered the top 10",
"passed these learners" atomically with the score, by learner id: never a
name), read by the notifier through one consumer group: what a dead
consumer left is claimed again; what is handled is deleted."""

from __future__ import annotations

from typing import Any

from redis.exceptions import ResponseError

from laurels.board.base import BoardBase
from laurels.core.seasons import Season

GROUP = "laurels"
RankEvent = tuple[str, dict[str, str]]  # (stream entry id, fields)


class RankStreams(BoardBase):
    async def _group(self, stream: str, create: bool) -> bool:
        """Make sure the consumer group exists; False when the stream does not
        and `create` is off (a season before its first rank event: no key is
        made for a season that may never have a board)."""
        if stream in self._stream_groups:
            return True
        try:
            await self.redis.xgroup_create(stream, GROUP, id="0", mkstream=create)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                if not create:
                    return False  # no such stream (yet)
                raise
        self._stream_groups.add(stream)
        return True

    async def rank_events(self, season: Season, consumer: str, count: int, create: bool = True,
                          idle_ms: int = 30_000) -> list[RankEvent]:
        """Up to `count` new rank events of a season for `consumer`, after
        those another consumer left unacknowledged for `idle_ms`."""
        stream = self.season_keys(season).notify_stream
        try:
            if not await self._group(stream, create):
                return []
            claim: Any = await self.redis.xautoclaim(stream, GROUP, consumer,
                                                     min_idle_time=idle_ms, count=count)
            entries: list[RankEvent] = list(claim[1])
            reply: Any = await self.redis.xreadgroup(GROUP, consumer, {stream: ">"}, count=count)
        except ResponseError as exc:
            if "NOGROUP" in str(exc):  # the stream vanished with a Redis restart
                self._stream_groups.discard(stream)
                return []
            raise
        for _, items in reply or []:
            entries += items
        return entries

    async def done_with(self, season: Season, entry_id: str) -> None:
        """Acknowledge a rank event and delete it: it is handled, and the
        stream keeps only what is not (an erasure scrubs that: erase.lua).
        One round trip (the stream's one key: one slot on a cluster)."""
        stream = self.season_keys(season).notify_stream
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xack(stream, GROUP, entry_id)
            pipe.xdel(stream, entry_id)
            await pipe.execute()
