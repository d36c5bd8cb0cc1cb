"""The live streams' responses (api/sse.py sends them): a season's hints, a
group board's or a league cohort's hints, a learner's notifications. Each
checks the process's stream budget, listens on the hub, and names the
frames it sends."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import orjson

from laurels.api.params import path_season
from laurels.api.problems import Problem
from laurels.api.sse import EventStream, frame
from laurels.errors import DomainError
from laurels.hub import CHANGED_PER_SECOND, Hub
from laurels.league_rules import Cohort
from laurels.leagues import cohort_stream_id
from laurels.metrics import STREAMS_REFUSED
from laurels.runtime import Services

log = logging.getLogger("laurels.api")


def stream_budget(hub: Hub, max_streams: int) -> None:
    """Streams have a budget of their own (LAURELS_MAX_STREAMS per process), so
    live viewers never take every connection from ordinary requests."""
    if hub.stream_count() >= max_streams:
        STREAMS_REFUSED.inc()
        raise Problem("unavailable", "too many live streams on this server; retry shortly",
                      retry_after=5)


def board_stream(svc: Services, season: str) -> EventStream:
    """A season's hints: `ready`, then `changed` and `rebuilt` (or a Problem)."""
    hub = svc.hub
    name = path_season(season, svc.settings.periods).name
    stream_budget(hub, svc.settings.max_streams)
    listener = hub.listen_board(name)

    async def ready() -> bytes:
        await hub.hinted(name)  # `ready` means: every later change is hinted here
        return frame("ready", orjson.dumps({"season": name}))

    async def due() -> list[bytes]:
        return [frame(e["event"], e["data"]) for e in listener.take()]

    return EventStream(listener, ready, due, lambda: hub.unlisten_board(listener),
                       min_gap_seconds=1 / CHANGED_PER_SECOND)


def group_stream(svc: Services, gid: str, season: str) -> EventStream:
    """A group board's hints: the hub routes them by member (group_index.py)."""
    name = path_season(season, svc.settings.periods).name

    async def members() -> list[int]:
        return await svc.groups.member_ids(gid)

    return _member_stream(svc, gid, name, members, {"season": name, "group_id": gid})


def cohort_stream(svc: Services, cohort: Cohort) -> EventStream:
    """A league cohort's hints: a group stream of its own id (`league:` and
    the cohort's, leagues.cohort_stream_id), whose members are the cohort's;
    the placer announces a group change of that id when the cohort gains
    members, so they are loaded again."""

    async def members() -> list[int]:
        return await svc.leagues.members(cohort)

    return _member_stream(svc, cohort_stream_id(cohort), cohort.season, members,
                          {"season": cohort.season, "cohort_id": cohort.id})


def _member_stream(svc: Services, gid: str, name: str,
                   members: Callable[[], Awaitable[list[int]]],
                   hello: dict[str, str]) -> EventStream:
    """The hints of the season `name` routed to a set of learners (a group's
    or a cohort's, under the id `gid` in the hub's index): the members are
    (re)loaded into the index whenever they are not loaded, before it says
    `ready` (with `hello`) and after each change."""
    hub = svc.hub
    stream_budget(hub, svc.settings.max_streams)
    listener = hub.listen_group(gid, name)

    async def load() -> None:
        """Load the members if they are not; an unloaded group gets every hint."""
        if hub.index.is_loaded(gid):
            return
        version = hub.index.version(gid)
        try:
            hub.index.load(gid, await members(), version)
        except DomainError:  # the group was deleted: its boards are gone
            listener.closed = True
            listener.wake.set()
        except Exception as exc:  # a store error: try again on the next wake
            log.warning("members of group %s not loaded: %s", gid, exc)

    async def ready() -> bytes:
        await hub.hinted(name)
        await load()
        return frame("ready", orjson.dumps(hello))

    async def due() -> list[bytes]:
        out = [frame(e["event"], e["data"]) for e in listener.take()]
        await load()
        return out

    return EventStream(listener, ready, due, lambda: hub.unlisten_group(listener),
                       min_gap_seconds=1 / CHANGED_PER_SECOND)


def notification_stream(svc: Services, uid: int) -> EventStream:
    """A learner's new notifications, one `notification` frame each."""
    hub = svc.hub
    stream_budget(hub, svc.settings.max_streams)
    listener = hub.listen_learner(uid)

    async def ready() -> bytes:
        await hub.connected.wait()  # the notification channel is subscribed
        return frame("ready", orjson.dumps({"user_id": uid}))

    async def due() -> list[bytes]:
        ids = list(listener.ids)
        listener.ids.clear()
        finals, listener.finals = listener.finals, []
        return [frame("notification", orjson.dumps(body))
                for body in await svc.notifications.by_id(uid, ids, finals)]

    return EventStream(listener, ready, due, lambda: hub.unlisten_learner(listener))
