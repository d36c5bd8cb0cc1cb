"""Group boards' per-process cache and the routing of hints by member
(api/caches.py `GroupCache`, live/group_index.py, live/hub.py `Hub`), in process
against the real stores: a hint drops only the cached bodies (and wakes only
the streams) of the groups that hold a learner it names; a membership
change, here or in another process, shows on the next read."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from laurels.api.caches import GroupCache
from laurels.core.seasons import parse_season
from laurels.live.hub import SeasonListener
from tests.api.conftest import Api, ApiFactory
from tests.api.test_groups import board, post_all
from tests.helpers import INGEST, completion, eventually, token_for

BOARD = "/v1/groups/{}/leaderboards/current"


def group_cache(api: Api) -> GroupCache:
    [cache] = [hears.__self__ for hears in api.runtime.signals.group_changes
               if isinstance(getattr(hears, "__self__", None), GroupCache)]
    assert isinstance(cache, GroupCache)
    return cache


def cached_groups(api: Api) -> set[str]:
    return {gid for gid, _, _ in group_cache(api).entries}


async def fill(api: Api, *groups: str, token: str = INGEST) -> None:
    """Read the groups' boards until this process caches them (on a cluster
    a body is kept once the season's shard channel is subscribed)."""
    async with asyncio.timeout(10):
        while not set(groups) <= cached_groups(api):
            for gid in groups:
                await board(api, BOARD.format(gid), token)


async def two_groups(api: Api) -> None:
    c = api.client(INGEST)
    await c.put("/v1/users/5", json={"visibility": "anonymous"})
    await post_all(c, {1: 10, 2: 20, 3: 30, 4: 40, 5: 50, 9: 90})
    for gid, members in (("a", [1, 2, 5]), ("b", [3, 4])):
        await c.put(f"/v1/groups/{gid}", json={})
        await c.post(f"/v1/groups/{gid}/members", json={"add": members})


async def test_a_hint_drops_only_the_groups_of_the_learners_it_names(
        serve: ApiFactory) -> None:
    api = await serve()
    await two_groups(api)
    c = api.client(INGEST)
    season = (await board(api, BOARD.format("a")))["season"]
    await api.echoed(season)
    await fill(api, "a", "b")
    # Learner 3 (in b only) scores: a's body stays, b's is dropped and fresh.
    assert (await c.post("/v1/completions", json=completion("x3", 3, 5))).status_code == 201
    await api.echoed(season)
    assert cached_groups(api) == {"a"}
    body = await board(api, BOARD.format("b"))
    assert [(e["user_id"], e["score"]) for e in body["entries"]] == [(4, 40), (3, 35)]
    # A learner in no group: nothing dropped.
    assert (await c.post("/v1/completions", json=completion("x9", 9, 5))).status_code == 201
    await api.echoed(season)
    assert cached_groups(api) == {"a", "b"}
    # Several public learners in one batch: the groups of any of them.
    await post_all(c, {1: 1, 9: 1})
    await api.echoed(season)
    assert cached_groups(api) == {"b"}
    await fill(api, "a")
    # An anonymous learner is never named, not even to route: every group drops.
    assert (await c.post("/v1/completions", json=completion("x5", 5, 5))).status_code == 201
    await api.echoed(season)
    assert cached_groups(api) == set()
    body = await board(api, BOARD.format("a"))
    assert [(e["user_id"], e["score"]) for e in body["entries"]] == [
        (None, 55), (2, 20), (1, 11)]


async def test_a_cached_body_is_served_without_a_query_to_its_members(
        serve: ApiFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    api = await serve()
    await two_groups(api)
    member, outsider = token_for(api.env, 1), token_for(api.env, 3)
    season = (await board(api, BOARD.format("a")))["season"]
    await api.echoed(season)  # (the writes' echoes, before the fill)
    await fill(api, "a", token=member)
    first = await api.client(member).get(BOARD.format("a"))
    assert first.status_code == 200 and first.headers["etag"]
    queries: list[str] = []
    groups = api.runtime.groups
    for name in ("read_access", "member_ids"):
        real = getattr(groups, name)

        def counted(*args: Any, _real: Any = real, _name: str = name) -> Any:
            queries.append(_name)
            return _real(*args)

        monkeypatch.setattr(groups, name, counted)
    again = await api.client(member).get(BOARD.format("a"))
    assert again.content == first.content and queries == []
    same = await api.client(member).get(BOARD.format("a"),
                                        headers={"if-none-match": first.headers["etag"]})
    assert same.status_code == 304 and queries == []
    # Anyone the index cannot vouch for goes the full way, with its errors:
    # the same as for no group at all (test_group_oracle.py).
    refused = await api.client(outsider).get(BOARD.format("a"))
    nosuch = await api.client(outsider).get(BOARD.format("nosuch"))
    assert refused.status_code == nosuch.status_code == 404 and "read_access" in queries
    assert refused.json()["detail"] == "no group a"
    assert (await api.get(BOARD.format("a"))).status_code == 401
    # Leaving the group is seen at once, by the cache and by the index.
    await api.client(INGEST).post("/v1/groups/a/members", json={"remove": [1]})
    assert (await api.client(member).get(BOARD.format("a"))).status_code == 404


async def test_a_membership_change_in_another_process_shows_on_the_next_read(
        serve: ApiFactory) -> None:
    here, there = await serve(), await serve()
    await two_groups(here)
    assert [e["user_id"] for e in (await board(here, BOARD.format("b")))["entries"]] == [4, 3]
    await fill(here, "b")
    await there.client(INGEST).post("/v1/groups/b/members", json={"add": [9]})
    await eventually(lambda: "b" not in cached_groups(here), what="group b to leave the cache")
    body = await board(here, BOARD.format("b"))
    assert [e["user_id"] for e in body["entries"]] == [9, 4, 3]
    # Deleting the group (there) ends its boards here too.
    await there.client(INGEST).delete("/v1/groups/b")
    await eventually(lambda: "b" not in cached_groups(here), what="group b to leave the cache")
    assert (await here.client(INGEST).get(BOARD.format("b"))).status_code == 404


async def test_group_streams_hear_only_their_members(serve: ApiFactory) -> None:
    """The hub routes a hint to the streams of the groups holding a learner
    it names: a season stream, which hears every hint, is the sync point."""
    api = await serve()
    await two_groups(api)
    hub, c = api.runtime.hub, api.client(INGEST)
    season = (await board(api, BOARD.format("a")))["season"]
    shown = parse_season(season, zone=api.runtime.settings.time_zone)
    everything = hub.listen_board(shown)
    a, b = hub.listen_group("a", shown), hub.listen_group("b", shown)
    await hub.hinted(shown)  # on a cluster: the season's shard channel is subscribed
    members = api.runtime.groups.member_ids
    for listener in (a, b):
        gid = str(listener.group)
        hub.index.load(gid, await members(gid), hub.index.version(gid))

    async def after(*items: dict[str, Any]) -> tuple[bool, bool]:
        for listener in (everything, a, b):
            listener.take()
        resp = await c.post("/v1/completions/batch", json={"completions": list(items)})
        assert {r["status"] for r in resp.json()["results"]} == {"recorded"}
        await eventually(lambda: everything.pending is not None,
                         what="the season stream's hint")
        return a.pending is not None, b.pending is not None

    try:
        assert await after(completion("s1", 1, 1)) == (True, False)
        assert await after(completion("s3", 3, 1)) == (False, True)
        assert await after(completion("s9", 9, 1)) == (False, False)
        # Several public learners in one apply: apply.lua names them all.
        assert await after(completion("m1", 1, 1), completion("m9", 9, 1)) == (True, False)
        assert everything.pending == {"season": season}  # coalesced for clients
        assert await after(completion("s5", 5, 1)) == (True, True)  # anonymous: unrouted
        # A membership change wakes the group's streams, and 9 now routes to b.
        b.take()
        await c.post("/v1/groups/b/members", json={"add": [9]})
        assert b.pending == {"season": season}
        assert not hub.index.is_loaded("b")  # until its stream loads it again
        hub.index.load("b", await members("b"), hub.index.version("b"))
        assert await after(completion("s9b", 9, 1)) == (False, True)
        assert b.pending == {"season": season, "user_id": 9}  # never "routes"
    finally:
        for listener in (everything, a, b):
            (hub.unlisten_board if listener.group is None else hub.unlisten_group)(listener)
    assert "b" not in hub.index.watchers and "b" not in hub.index.members
    assert isinstance(everything, SeasonListener)


async def test_a_later_page_is_never_the_cached_first_one(serve: ApiFactory) -> None:
    """`after` counts however its name is written (`%61fter` is `after`):
    the lane's cached first page is not the answer to a later page, and a
    malformed cursor is 422 from the cache's lane too. Later pages carry
    an ETag of their own, and 304 for it."""
    api = await serve()
    await two_groups(api)
    c = api.client(INGEST)
    await fill(api, "a")
    first = (await c.get(BOARD.format("a"), params={"limit": 1})).json()
    assert first["next"] is not None
    for name in ("after", "%61fter", "%61%66ter"):
        resp = await c.get(f"{BOARD.format('a')}?limit=1&{name}={first['next']}")
        assert resp.status_code == 200, resp.text
        assert resp.json()["entries"] != first["entries"], name
        again = await c.get(f"{BOARD.format('a')}?limit=1&{name}={first['next']}",
                            headers={"if-none-match": resp.headers["etag"]})
        assert again.status_code == 304, name
    bad = await c.get(f"{BOARD.format('a')}?%61fter=garbage!")
    assert bad.status_code == 422 and bad.json()["code"] == "validation_error"
