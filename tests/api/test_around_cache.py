"""A learner's neighbourhood from the per-process cache (issue 30; api/caches.py
`around_body`): a second read of the same learner and radius is served
without a script call, the token is checked first every time, and every
change that can alter it (a completion, a name, a visibility, an erasure,
here or in another process) shows on the next read after its hint."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from laurels.api import caches
from laurels.api.caches import AROUND_BYTES, BoardCache
from tests.api.conftest import Api, ApiFactory
from tests.api.test_groups import post_all
from tests.helpers import ADMIN, INGEST, assert_problem, completion, eventually, token_for

AROUND = "/v1/leaderboards/current/users/{}?radius={}"


def board_cache(api: Api, max_bytes: int) -> BoardCache:
    """The process's BoardCache of that size (the top pages' or the
    neighbourhoods')."""
    [cache] = [hears.__self__ for hears in api.runtime.signals.caches
               if isinstance(getattr(hears, "__self__", None), BoardCache)
               and hears.__self__.max_bytes == max_bytes]
    assert isinstance(cache, BoardCache)
    return cache


def around_cache(api: Api) -> BoardCache:
    return board_cache(api, AROUND_BYTES)


def cached(api: Api) -> set[tuple[Any, ...]]:
    return {(season, *key) for season, held in around_cache(api).entries.items()
            for key in held}


def counting(api: Api, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The neighbourhoods read from the board (not from the cache)."""
    calls: list[tuple[int, int]] = []
    reads = api.runtime.reads
    real = reads.around

    async def around(season: Any, user_id: int, radius: int) -> Any:
        calls.append((user_id, radius))
        return await real(season, user_id, radius)

    monkeypatch.setattr(reads, "around", around)
    return calls


async def read(api: Api, user_id: int, radius: int = 1, token: str | None = None
               ) -> dict[str, Any]:
    resp = await api.client(token or token_for(api.env, user_id)).get(
        AROUND.format(user_id, radius))
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


async def fill(api: Api, user_id: int, radius: int = 1) -> dict[str, Any]:
    """Read until this process keeps the body (on a cluster once the
    season's shard channel is subscribed), once every write's hint came
    back (Api.echoed: a late one would drop the body just kept)."""
    await api.echoed((await read(api, user_id, radius))["season"])
    async with asyncio.timeout(10):
        while True:
            body = await read(api, user_id, radius)
            if any(key[1:] == (user_id, radius) for key in cached(api)):
                return body


def standing(body: dict[str, Any]) -> list[tuple[Any, Any, Any]]:
    return [(e["user_id"], e["display_name"], e["score"]) for e in body["neighbors"]]


async def test_a_second_read_comes_from_the_cache_and_the_token_is_checked_each_time(
        serve: ApiFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    api = await serve()
    await post_all(api.client(INGEST), {1: 10, 2: 20, 3: 30})
    first = await fill(api, 2)
    calls = counting(api, monkeypatch)
    assert await read(api, 2) == first and calls == []
    assert await read(api, 2, token=ADMIN) == first and calls == []  # the admin may, too
    # Another learner's token, or none, is refused before the cache is looked at.
    assert_problem(await api.client(token_for(api.env, 3)).get(AROUND.format(2, 1)), 403,
                   "forbidden")
    assert (await api.get(AROUND.format(2, 1))).status_code == 401
    # Another radius, another learner: read from the board.
    wider = await read(api, 2, radius=2)
    assert calls == [(2, 2)] and [e["user_id"] for e in wider["neighbors"]] == [3, 2, 1]
    await read(api, 3)
    assert calls == [(2, 2), (3, 1)]
    # Not ranked: answered, never kept.
    assert_problem(await api.client(token_for(api.env, 9)).get(AROUND.format(9, 1)), 404,
                   "not_ranked")
    assert not any(key[1] == 9 for key in cached(api))


async def test_each_change_shows_on_the_next_read(serve: ApiFactory) -> None:
    """A neighbour scores, is renamed, turns hidden, is erased: each is seen
    by the very next read of a cached neighbourhood (this process's own
    changes reach its caches before the answer)."""
    api = await serve()
    c = api.client(INGEST)
    await post_all(c, {1: 10, 2: 20, 3: 30})
    await fill(api, 2)
    assert (await c.post("/v1/completions", json=completion("x1", 1, 15))).status_code == 201
    assert standing(await read(api, 2)) == [(1, "Learner 1", 25), (2, "Learner 2", 20)]
    await fill(api, 2)
    assert (await c.put("/v1/users/1", json={"display_name": "Ada"})).status_code == 200
    assert standing(await read(api, 2))[0] == (1, "Ada", 25)
    await fill(api, 2)
    assert (await c.put("/v1/users/1", json={"visibility": "hidden"})).status_code == 200
    body = await read(api, 2)
    assert "Ada" not in str(body) and [e["user_id"] for e in body["neighbors"]] == [3, 2]
    assert (await c.put("/v1/users/1", json={"visibility": "public"})).status_code == 200
    await fill(api, 2)
    assert (await api.client(ADMIN).delete("/v1/users/1")).status_code == 204
    body = await read(api, 2)
    assert "Ada" not in str(body) and [e["user_id"] for e in body["neighbors"]] == [3, 2]


async def test_another_process_s_change_shows_once_its_hint_arrives(
        serve: ApiFactory) -> None:
    here, there = await serve(), await serve()
    await post_all(here.client(INGEST), {1: 10, 2: 20, 3: 30})
    await fill(here, 2)
    resp = await there.client(INGEST).post("/v1/completions", json=completion("x1", 1, 15))
    assert resp.status_code == 201
    await eventually(lambda: not cached(here), what="the hint to drop the neighbourhood")
    assert standing(await read(here, 2))[0] == (1, "Learner 1", 25)


class Subscription:
    """What a BoardCache asks of the hint subscription: following counted."""

    def __init__(self) -> None:
        self.followed: dict[str, int] = {}

    def follow(self, season: str) -> None:
        self.followed[season] = self.followed.get(season, 0) + 1

    def unfollow(self, season: str) -> None:
        self.followed[season] -= 1
        if not self.followed[season]:
            del self.followed[season]

    def is_hinted(self, season: str) -> bool:
        return True


def test_a_cache_asked_for_too_many_seasons_unfollows_the_oldest() -> None:
    """Any valid season may be asked for: past `max_seasons` followed, the
    oldest is unfollowed and its bodies dropped (the others kept: a kind's
    10,000 boards read at random must not start the cache afresh), and a
    body read before a season was unfollowed is not kept once it is
    followed again."""
    sub = Subscription()
    cache = BoardCache(sub, None, max_seasons=4)  # type: ignore[arg-type]
    names = [f"2026-W{i:02d}" for i in range(1, 10)]
    for name in names[:4]:
        cache.put(name, 100, b"{}", cache.generation(name))
    assert len(sub.followed) == 4 and cache.size == 4
    in_flight = cache.generation(names[1])
    cache.generation(names[4])  # one more: the oldest goes
    assert set(sub.followed) == set(names[1:5]) and cache.size == 3
    assert cache.get(names[0], 100) is None and cache.get(names[2], 100) is not None
    cache.generation(names[5])  # names[1] goes too, then comes back
    assert names[1] not in sub.followed
    cache.put(names[1], 100, b"{}", in_flight)  # read before it was unfollowed
    assert cache.get(names[1], 100) is None
    assert len(sub.followed) == 4


async def test_a_group_cache_asked_for_too_many_seasons_forgets_them_all(
        serve: ApiFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(caches, "GROUP_MAX_SEASONS", 2)
    api = await serve(periods=("week", "day", "month", "all"))
    c = api.client(INGEST)
    await post_all(c, {1: 10, 2: 20})
    await c.put("/v1/groups/g", json={"access": "public"})
    await c.post("/v1/groups/g/members", json={"add": [1, 2]})
    [cache] = [hears.__self__ for hears in api.runtime.signals.caches
               if isinstance(getattr(hears, "__self__", None), caches.GroupCache)]
    for season in ("current", "current-day", "current-month"):
        resp = await api.get(f"/v1/groups/g/leaderboards/{season}")
        assert resp.status_code == 200 and resp.json()["total"] == 2
    assert len(cache.seasons) == 1 and cache.epoch == 1
    assert {s for _, s, _ in cache.entries} <= cache.seasons


def test_a_full_cache_drops_its_oldest_season() -> None:
    cache = BoardCache(Subscription(), None, max_entries=3,  # type: ignore[arg-type]
                       max_bytes=100)
    for uid in range(3):
        cache.put("2026-W49", (uid, 5), b"{}", cache.generation("2026-W49"))
    # The same key again: counted once.
    cache.put("2026-W49", (2, 5), b"{ }", cache.generation("2026-W49"))
    assert (cache.size, cache.bytes) == (3, 7) and cache.get("2026-W49", (2, 5)) is not None
    cache.put("2026-W50", (7, 5), b"{}", cache.generation("2026-W50"))  # a fourth body: afresh
    assert (cache.size, cache.bytes) == (1, 2) and cache.get("2026-W49", (2, 5)) is None
    cache.put("2026-W50", (8, 5), b"x" * 99, cache.generation("2026-W50"))  # past 100 bytes: afresh
    assert (cache.size, cache.bytes) == (1, 99) and cache.get("2026-W50", (7, 5)) is None
    cache.hint({"season": "2026-W50"})
    assert (cache.size, cache.bytes) == (0, 0) and cache.get("2026-W50", (8, 5)) is None
    cache.put("2026-W51", (1, 5), b"{}", cache.generation("2026-W51"))
    cache.put("2026-W52", (1, 5), b"{}", cache.generation("2026-W52"))
    cache.put("2026-W52", (2, 5), b"{}", cache.generation("2026-W52"))
    cache.put("2026-W53", (1, 5), b"{}", cache.generation("2026-W53"))  # full: W51 goes
    assert cache.get("2026-W51", (1, 5)) is None and cache.size == 3
    assert cache.get("2026-W52", (2, 5)) is not None


async def test_a_neighbourhood_read_while_a_hint_arrives_is_not_kept(
        serve: ApiFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The body read before the hint may hold what the hint changed: it is
    answered (it was current when read), and the next read goes to the board."""
    api = await serve()
    await post_all(api.client(INGEST), {1: 10, 2: 20})
    await fill(api, 2)  # the season followed and hinted
    around_cache(api).drop()
    reads, real = api.runtime.reads, api.runtime.reads.around

    async def around(season: Any, user_id: int, radius: int) -> Any:
        body = await real(season, user_id, radius)
        around_cache(api).hint({"season": season.name})  # arrives during the read
        return body

    monkeypatch.setattr(reads, "around", around)
    await read(api, 2)
    assert cached(api) == set()
