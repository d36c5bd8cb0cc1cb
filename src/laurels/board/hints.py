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
from laurels.board.values import Delta

ROUTES_MAX = 100  # learners a hint may route by (apply.lua has the same)
log = logging.getLogger("laurels.board")


class Hint(TypedDict, total=False):
    """A refresh hint (docs/contract.md, Live): which season changed, and
    who, when a single public learner did (None for an anonymous or hidden
    one, absent when several changes were coalesced); `kind` "rebuilt" after
    a rebuild switched the board. `routes`: the learners who changed, when
    all of them are public (group_index.py routes by them; never sent to a
    client); absent when the change may concern anyone."""

    season: Required[str]
    user_id: int | None
    kind: str
    routes: list[int]


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
    routes = message.get("routes")
    if isinstance(routes, list) and all(isinstance(u, int) for u in routes):
        hint["routes"] = routes
    elif isinstance(hint.get("user_id"), int):
        hint["routes"] = [hint["user_id"]]  # type: ignore[list-item]
    return hint


def hints_of(changed: list[tuple[Delta, str]]) -> list[Hint]:
    """One hint per season: with the user id when a single public learner
    changed, null for an anonymous or hidden one, absent when coalesced;
    `routes` when every learner who changed is public (apply.lua builds
    the same in Redis)."""
    by_season: dict[str, set[tuple[int, str]]] = {}
    for d, vis in changed:
        by_season.setdefault(d.season, set()).add((d.user_id, vis))
    hints = []
    for season, users in by_season.items():
        hint: Hint = {"season": season}
        if len({u for u, _ in users}) == 1:
            uid, vis = next(iter(users))
            hint["user_id"] = uid if vis == "public" else None
        if all(vis == "public" for _, vis in users) and len(users) <= ROUTES_MAX:
            hint["routes"] = sorted({u for u, _ in users})
        hints.append(hint)
    return hints


class Publishing(BoardBase):
    """What this process tells every process (and itself first)."""

    async def publish_hint(self, hint: Hint) -> None:
        for local in self.on_hint:  # this process's caches hear of its own changes first
            local(hint)
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
        (their group caches and member indexes, group_index.py), this one first."""
        for local in self.on_group_change:
            local(group_id)
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

    async def announce_final(self, season: str) -> None:
        """Tell every process a season's final ranks are written."""
        await self._announce("season_final", season)

    async def announce_league_result(self, season: str) -> None:
        """Tell every process a week's league results are written."""
        await self._announce("league_result", season)

    async def _announce(self, kind: str, season: str) -> None:
        try:
            await self.redis.publish(self.keys.notification_channel(),
                                     orjson.dumps({kind: season}))
        except RedisError as exc:
            log.warning("%s of %s not announced live: %s", kind, season, exc)
