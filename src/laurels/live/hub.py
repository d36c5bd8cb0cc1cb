"""The live streams of an API process: hints fanned out to its SSE clients.

The apply path publishes "season S changed" (never a score); the process's
one subscription (board/subscribe.py) hands each hint to the hub, which
offers it to every stream of that season, and, through the member index
(live/group_index.py), to the group boards' streams it concerns. Each stream
coalesces per client, so a storm of completions does not become a storm of
refetches. A hint is only a hint: clients refetch the canonical API. A
learner's notification stream is told the ids of their new notifications.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

import orjson

from laurels.board import Hint, HintSubscription
from laurels.core.metrics import HINTS_COALESCED, HINTS_SENT, NOTIFICATIONS_DROPPED, SSE_CONNECTIONS
from laurels.core.registry import FOR_EVERYONE
from laurels.core.seasons import Season
from laurels.live.group_index import GroupIndex

log = logging.getLogger("laurels.hub")

CHANGED_PER_SECOND = 4
LEARNER_BUFFER = 50  # notification ids a learner's stream keeps before it is read


class SeasonListener:
    """One SSE client of a season's hints (the whole board's, or a group
    board's: then `group` is set and hints are routed by member): O(1)
    state whatever the hint rate."""

    __slots__ = ("closed", "group", "pending", "rebuilt", "season", "wake")

    def __init__(self, season: Season, group: str | None = None) -> None:
        self.season = season.name  # (hints name their season)
        self.group = group
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
                shown_season({"season": self.season})).decode()})
            self.rebuilt = False
        if self.pending is not None:
            out.append({"event": "changed",
                        "data": orjson.dumps(shown_season(self.pending)).decode()})
            self.pending = None
        self.wake.clear()
        HINTS_SENT.inc(len(out))
        return out


def shown_season(data: dict[str, Any]) -> dict[str, Any]:
    """A hint as a stream shows it: a board of a kind's season by its
    period's name and its board (`course:python-101`), never by the name
    it is stored under (seasons.Season.name)."""
    qualifier, _, label = str(data["season"]).rpartition("/")
    if not qualifier:
        return data
    return {**data, "season": label, "board": qualifier.split("/", 1)[0]}


class LearnerListener:
    """One SSE client of a learner's notifications: a bounded buffer of ids."""

    __slots__ = ("closed", "finals", "ids", "user_id", "wake")

    def __init__(self, user_id: int) -> None:
        self.user_id = user_id
        self.ids: deque[int] = deque(maxlen=LEARNER_BUFFER)
        self.finals: list[tuple[str, str]] = []  # (kind, season) written for everyone
        self.closed = False
        self.wake = asyncio.Event()

    def offer(self, notification_id: int) -> None:
        if len(self.ids) == self.ids.maxlen:
            NOTIFICATIONS_DROPPED.inc()  # the oldest goes; it stays in PostgreSQL
        self.ids.append(notification_id)
        self.wake.set()

    def offer_final(self, kind: str, name: str) -> None:  # (a hint's season name)
        self.finals.append((kind, name))
        self.wake.set()


class Hub:
    """The streams of one API process, fed by its one subscription."""

    def __init__(self, subscription: HintSubscription) -> None:
        self.subscription = subscription
        self.boards: dict[str, set[SeasonListener]] = {}
        self.learners: dict[int, set[LearnerListener]] = {}
        # Group boards' streams by season and group; the members of the
        # groups watched here, by member (live/group_index.py).
        self.group_boards: dict[str, dict[str, set[SeasonListener]]] = {}
        self.index = GroupIndex()
        self._streams = 0
        self.holders: dict[str, int] = {}  # open streams by client (api/streams.py)
        # It hears hints, notes and group changes as wire() connects it
        # (board/signals.py): fan_out, note, group_changed.

    @property
    def connected(self) -> asyncio.Event:
        """Set while the process's subscription is confirmed."""
        return self.subscription.connected

    async def hinted(self, season: Season) -> None:
        """Return once every later change of `season` will be hinted here."""
        await self.subscription.hinted(season.name)

    # -- streams ---------------------------------------------------------------

    def _opened(self, kind: str) -> None:
        self._streams += 1
        SSE_CONNECTIONS.labels(kind).inc()

    def _closed(self, kind: str) -> None:
        self._streams -= 1
        SSE_CONNECTIONS.labels(kind).dec()

    def listen_board(self, season: Season) -> SeasonListener:
        listener = SeasonListener(season)
        self.boards.setdefault(listener.season, set()).add(listener)
        self.subscription.follow(listener.season)
        self._opened("board")
        return listener

    def unlisten_board(self, listener: SeasonListener) -> None:
        listeners = self.boards.get(listener.season)
        if listeners is not None and listener in listeners:
            listeners.discard(listener)
            self.subscription.unfollow(listener.season)
            self._closed("board")
            if not listeners:
                del self.boards[listener.season]

    def listen_group(self, group_id: str, season: Season) -> SeasonListener:
        listener = SeasonListener(season, group_id)
        self.group_boards.setdefault(listener.season, {}).setdefault(group_id, set()).add(
            listener)
        self.index.watch(group_id)
        self.subscription.follow(listener.season)
        self._opened("group")
        return listener

    def unlisten_group(self, listener: SeasonListener) -> None:
        groups = self.group_boards.get(listener.season, {})
        gid = listener.group or ""
        if listener in groups.get(gid, ()):
            groups[gid].discard(listener)
            self.index.unwatch(gid)
            self.subscription.unfollow(listener.season)
            self._closed("group")
            if not groups[gid]:
                del groups[gid]
            if not groups:
                del self.group_boards[listener.season]

    def listen_learner(self, user_id: int) -> LearnerListener:
        listener = LearnerListener(user_id)
        self.learners.setdefault(user_id, set()).add(listener)
        self._opened("notifications")
        return listener

    def unlisten_learner(self, listener: LearnerListener) -> None:
        listeners = self.learners.get(listener.user_id)
        if listeners is not None and listener in listeners:
            listeners.discard(listener)
            self._closed("notifications")
            if not listeners:
                del self.learners[listener.user_id]

    def stream_count(self) -> int:
        return self._streams

    # -- what arrives ----------------------------------------------------------

    def fan_out(self, hint: Hint) -> None:
        """A hint to the streams of its season, and to the group streams it
        concerns: by member through the index, not by asking every listener.
        A quiet hint (only hidden learners changed) goes to no stream: no
        board a stream follows shows anything new."""
        if hint.get("quiet"):
            return
        season = hint["season"]
        for listener in list(self.boards.get(season, ())):
            listener.offer(hint)
        groups = self.group_boards.get(season)
        if groups:
            concerned = self.index.concerned(hint)
            for gid in list(groups) if concerned is None else concerned & groups.keys():
                for listener in list(groups.get(gid, ())):
                    listener.offer(hint)

    def group_changed(self, group_id: str) -> None:
        """A group's membership or access changed (here or in another
        process): its streams refetch, its members reload."""
        self.index.changed(group_id)
        for season, groups in list(self.group_boards.items()):
            for listener in list(groups.get(group_id, ())):
                listener.offer({"season": season})

    def note(self, message: dict[str, Any]) -> None:
        """A message of the notification channel: a learner's notification,
        or a season's final ranks."""
        for kind in FOR_EVERYONE:
            if kind in message:
                for listeners in self.learners.values():
                    for listener in listeners:
                        listener.offer_final(kind, str(message[kind]))
                return
        uid, nid = message.get("user_id"), message.get("id")
        if isinstance(uid, int) and isinstance(nid, int):
            for listener in list(self.learners.get(uid, ())):
                listener.offer(nid)
