"""Refresh hints: their shape, how one is read from a Pub/Sub message, and
the messages this process publishes to every process (hints, group
changes, new notifications, a season's final ranks). A hint is only a hint:
it says what changed, never a score (docs/design.md, invariant 4)."""

from __future__ import annotations

import logging
from typing import Any, Required, TypedDict

import orjson
from redis.exceptions import RedisClusterException, RedisError

from laurels.board.base import BoardBase
from laurels.core.seasons import Season

log = logging.getLogger("laurels.board")


class Hint(TypedDict, total=False):
    """A refresh hint (docs/contract.md, Live): which season changed, and
    who, when a single public learner did (None for an anonymous or hidden
    one, absent when several changes were coalesced); `kind` "rebuilt" after
    a rebuild switched the board. `routes`: the learners who changed, when
    all of them are public (live/group_index.py routes by them; never sent to a
    client); absent when the change may concern anyone. `quiet`: only
    hidden (or suspended) learners changed, so no public board shows
    anything new: caches drop the season, streams send nothing (a hidden
    learner's activity is nobody's to watch)."""

    season: Required[str]
    user_id: int | None
    kind: str
    routes: list[int]
    quiet: bool


def hint_of(message: dict[str, Any]) -> Hint | None:
    """The hint a Pub/Sub message carries (published by apply.lua or
    `Board.publish_hint`), or None if it is not one."""
    season = message.get("season")
    if not isinstance(season, str):
        return None
    hint: Hint = {"season": season}
    if "user_id" in message:
        uid = message["user_id"]
        hint["user_id"] = uid if isinstance(uid, int) else None
    if isinstance(message.get("kind"), str):
        hint["kind"] = message["kind"]
    if message.get("quiet") is True:
        hint["quiet"] = True
    routes = message.get("routes")
    if isinstance(routes, list) and all(isinstance(u, int) for u in routes):
        hint["routes"] = routes
    elif isinstance(hint.get("user_id"), int):
        hint["routes"] = [hint["user_id"]]  # type: ignore[list-item]
    return hint


class Publishing(BoardBase):
    """What this process tells every process (and itself first)."""

    async def publish_hint(self, hint: Hint) -> None:
        self.signals.hint_caches(hint)  # this process's caches hear of its own changes first
        try:
            if self.cluster:  # sharded Pub/Sub: the hint stays on the board's shard
                await self.redis.spublish(self.keys.shard_hint_channel(hint["season"]),
                                          orjson.dumps(hint))
            else:
                await self.redis.publish(self.keys.hint_channel(), orjson.dumps(hint))
        except (RedisError, RedisClusterException) as exc:  # a lost hint costs freshness
            log.warning("hint not published: %s", exc)

    async def publish_group_change(self, group_id: str) -> None:
        """Tell every process that a group's membership or access changed
        (their group caches and member indexes, live/group_index.py), this one first."""
        self.signals.group_changed(group_id)
        try:
            await self.redis.publish(self.keys.notification_channel(), orjson.dumps(
                {"group_changed": group_id, "origin": self.origin}))
        except (RedisError, RedisClusterException) as exc:  # caches expire; indexes reload
            log.warning("group change not published: %s", exc)

    async def publish_notification(self, user_id: int, notification_id: int) -> None:
        """Tell every process a learner has a new notification (their live
        streams fetch it from PostgreSQL)."""
        await self.redis.publish(self.keys.notification_channel(),
                                 orjson.dumps({"user_id": user_id, "id": notification_id}))

    async def announce_final(self, season: Season) -> None:
        """Tell every process a season's final ranks are written."""
        await self._announce("season_final", season)

    async def announce_league_result(self, season: Season) -> None:
        """Tell every process a week's league results are written."""
        await self._announce("league_result", season)

    async def announce_challenge_result(self, label: str) -> None:
        """Tell every process a challenge's results are written (`label`:
        the `challenge:<id>` its notifications carry)."""
        await self._announce("challenge_result", label)

    async def _announce(self, kind: str, season: Season | str) -> None:
        try:
            await self.redis.publish(self.keys.notification_channel(),
                                     orjson.dumps({kind: str(season)}))
        except RedisError as exc:
            log.warning("%s of %s not announced live: %s", kind, season, exc)
