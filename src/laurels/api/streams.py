"""The live streams' responses (api/sse.py sends them): a season's hints, a
group board's or a league cohort's hints, a learner's notifications. Each
checks the process's stream budget and the client's (its address:
api/clients.py), listens on the hub, and names the frames it sends."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Literal

import orjson

from laurels.api.problems import Problem
from laurels.api.sse import EventStream, frame
from laurels.api.state import RouteServices
from laurels.challenges.rules import Challenge
from laurels.core.errors import DomainError
from laurels.core.metrics import STREAMS_REFUSED
from laurels.core.seasons import GLOBAL, Season, season_named, season_of
from laurels.leagues.rules import Cohort
from laurels.live.hub import CHANGED_PER_SECOND

log = logging.getLogger("laurels.api")


def stream_budget(svc: RouteServices, client: str) -> Callable[[], None]:
    """Streams have a budget of their own (LAURELS_MAX_STREAMS per process), so
    live viewers never take every connection from ordinary requests; and one
    client holds at most LAURELS_MAX_STREAMS_PER_CLIENT of them (429), so no
    client takes the budget from the others. Returns the release of the
    client's share, for when the stream closes."""
    hub, settings = svc.hub, svc.settings
    if hub.holders.get(client, 0) >= settings.max_streams_per_client:
        STREAMS_REFUSED.inc()
        raise Problem("rate_limited", f"this client holds {settings.max_streams_per_client} "
                      "event streams already (LAURELS_MAX_STREAMS_PER_CLIENT); close one, or "
                      "retry later", retry_after=5)
    if hub.stream_count() >= settings.max_streams:
        STREAMS_REFUSED.inc()
        raise Problem("unavailable", "too many live streams on this server; retry shortly",
                      retry_after=5)
    hub.holders[client] = hub.holders.get(client, 0) + 1

    def release() -> None:
        left = hub.holders.get(client, 0) - 1
        if left > 0:
            hub.holders[client] = left
        else:
            hub.holders.pop(client, None)

    return release


def _closing(*steps: Callable[[], None]) -> Callable[[], None]:
    def close() -> None:
        for step in steps:
            step()
    return close


def board_stream(svc: RouteServices, season: Season, client: str) -> EventStream:
    """A season's hints: `ready`, then `changed` and `rebuilt` (or a Problem)."""
    hub = svc.hub
    release = stream_budget(svc, client)
    listener = hub.listen_board(season)

    async def ready() -> bytes:
        await hub.hinted(season)  # `ready` means: every later change is hinted here
        return frame("ready", orjson.dumps({"season": season.label, "board": season.board}))

    async def due() -> list[bytes]:
        return [frame(e["event"], e["data"]) for e in listener.take()]

    return EventStream(listener, ready, due,
                       _closing(lambda: hub.unlisten_board(listener), release),
                       min_gap_seconds=1 / CHANGED_PER_SECOND)


def challenge_stream(svc: RouteServices, challenge: Challenge, client: str) -> EventStream:
    """A challenge's hints: the whole board's hints of the week that holds
    the clock (every completion hints it), each told as `changed` with the
    challenge's id and no learner (a hint, never who: the client refetches
    the challenge's board); while the challenge runs past that week, the
    stream ends at the week's end, and a client's reconnect follows the next
    week (an ended challenge's stream stays open, quiet)."""
    hub = svc.hub
    zone = svc.settings.time_zone
    now = svc.challenges.clock()
    # (an ended one's: the week of its end, where its decision is hinted)
    week = season_of(min(max(now, challenge.starts_at), challenge.ends_at), "week", zone=zone)
    release = stream_budget(svc, client)
    listener = hub.listen_board(week)
    changed = frame("changed", orjson.dumps({"challenge_id": challenge.challenge_id}))

    async def ready() -> bytes:
        await hub.hinted(week)
        return frame("ready", orjson.dumps({"challenge_id": challenge.challenge_id}))

    async def due() -> list[bytes]:
        events = listener.take()
        now = svc.challenges.clock()
        if week.ends_at <= now and week.ends_at <= challenge.ends_at:
            listener.closed = True  # the client reconnects to the next week's (or its end's)
        return [changed] if events else []

    return EventStream(listener, ready, due,
                       _closing(lambda: hub.unlisten_board(listener), release),
                       min_gap_seconds=1 / CHANGED_PER_SECOND)


MayRead = Callable[[], Awaitable[bool]]
Reader = int | Literal["writer"] | None  # a learner, the ingest or admin token, nobody


def group_stream(svc: RouteServices, gid: str, season: Season, client: str,
                 reader: Reader) -> EventStream:
    """A group board's hints: the hub routes them by member (live/group_index.py).
    `reader` is who reads it; their access is checked again whenever the
    group changes (a member removed, the group turned members-only)."""

    async def members() -> list[int]:
        return await svc.groups.member_ids(gid)

    async def may_read() -> bool:
        found = await svc.groups.read_access(gid, reader if isinstance(reader, int) else None)
        return found is not None and (found[0] == "public" or reader == "writer" or found[1])

    ready = {"season": season.label, "group_id": gid,
             **({"board": season.board} if season.board != GLOBAL else {})}
    return _member_stream(svc, gid, season, members, ready, client, may_read)


def cohort_stream(svc: RouteServices, cohort: Cohort, client: str,
                  reader: int | None) -> EventStream:
    """A league cohort's hints: a group stream of its own id (`league:` and
    the cohort's, Cohort.stream_id), whose members are the cohort's;
    the placer announces a group change of that id when the cohort gains
    members, so they are loaded again."""

    async def members() -> list[int]:
        return await svc.leagues.members(cohort)

    async def may_read() -> bool:  # a member still (an erasure takes them out)
        return reader is None or reader in await svc.leagues.members(cohort)

    week = season_named(cohort.season, svc.settings.time_zone)
    return _member_stream(svc, cohort.stream_id, week, members,
                          {"season": cohort.season, "cohort_id": cohort.id}, client, may_read)


def _member_stream(svc: RouteServices, gid: str, season: Season,
                   members: Callable[[], Awaitable[list[int]]],
                   hello: dict[str, str], client: str, may_read: MayRead) -> EventStream:
    """The hints of `season` routed to a set of learners (a group's
    or a cohort's, under the id `gid` in the hub's index): the members are
    (re)loaded into the index whenever they are not loaded, before it says
    `ready` (with `hello`) and after each change."""
    hub = svc.hub
    release = stream_budget(svc, client)
    listener = hub.listen_group(gid, season)

    def end() -> None:
        listener.closed = True
        listener.wake.set()

    async def load() -> None:
        """Load the members if they are not (an unloaded group gets every
        hint): at the start and after each change of the group, when the
        reader's access is checked again too: a stream that may no longer
        be read ends."""
        if hub.index.is_loaded(gid):
            return
        version = hub.index.version(gid)
        try:
            if not await may_read():
                end()
                return
            hub.index.load(gid, await members(), version)
        except DomainError:  # the group was deleted: its boards are gone
            end()
        except Exception as exc:  # a store error: try again on the next wake
            log.warning("members of group %s not loaded: %s", gid, exc)

    async def ready() -> bytes:
        await hub.hinted(season)
        await load()
        return frame("ready", orjson.dumps(hello))

    async def due() -> list[bytes]:
        await load()  # first: a reader who may no longer read gets nothing more
        return [] if listener.closed else [frame(e["event"], e["data"])
                                            for e in listener.take()]

    return EventStream(listener, ready, due,
                       _closing(lambda: hub.unlisten_group(listener), release),
                       min_gap_seconds=1 / CHANGED_PER_SECOND)


def notification_stream(svc: RouteServices, uid: int, client: str) -> EventStream:
    """A learner's new notifications, one `notification` frame each."""
    hub = svc.hub
    release = stream_budget(svc, client)
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

    return EventStream(listener, ready, due,
                       _closing(lambda: hub.unlisten_learner(listener), release))
