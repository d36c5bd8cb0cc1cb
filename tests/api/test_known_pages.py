"""Known top pages (issue 30; api/caches.py `KnownPages`): the fast lane looks a
(path, query string) up before routing, and a top page it answered before is
sent from the board cache without routing or parsing, while the cache holds
it. A hint still makes the next read current; an alias such as `current`
is known only while its season runs."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from laurels.api import caches, fast
from laurels.api.caches import KnownPages
from laurels.api.state import ApiState
from laurels.core.seasons import parse_season
from tests.api.conftest import Api, ApiFactory
from tests.api.test_groups import post_all
from tests.helpers import INGEST, assert_problem, token_for

TOP = "/v1/leaderboards/current?limit=3"


def state(api: Api) -> ApiState:
    lane = api.transport.app
    assert isinstance(lane, fast.FastLane)
    return lane.state


async def known(api: Api, path: str = TOP) -> dict[str, Any]:
    """Read until the page is known and its body cached (on a cluster once
    the season's shard channel is subscribed)."""
    route, _, query = path.partition("?")
    st = state(api)
    async with asyncio.timeout(10):
        while True:
            resp = await api.get(path)
            assert resp.status_code == 200, resp.text
            page = st.top_pages.get(route, query.encode())
            if page is not None and st.board_cache.get(*page) is not None:
                body: dict[str, Any] = resp.json()
                return body


def scores(body: dict[str, Any]) -> list[tuple[Any, Any]]:
    return [(e["user_id"], e["score"]) for e in body["entries"]]


async def test_a_known_page_is_sent_without_routing_and_a_hint_makes_it_current(
        serve: ApiFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    api = await serve()
    await post_all(api.client(INGEST), {1: 10, 2: 20, 3: 30, 4: 40})
    first = await known(api)
    assert scores(first) == [(4, 40), (3, 30), (2, 20)]
    etag = (await api.get(TOP)).headers["etag"]

    def no_parsing(query: bytes) -> Any:
        raise AssertionError("a known page was parsed again")

    with monkeypatch.context() as patched:
        patched.setattr(fast, "_paging", no_parsing)
        again = await api.get(TOP)
        assert again.status_code == 200 and again.json() == first
        assert again.headers["etag"] == etag
        assert again.headers["content-type"] == "application/json"
        same = await api.get(TOP, headers={"If-None-Match": etag})
        assert same.status_code == 304 and same.content == b""
    # Another query string is another page; an unknown one is routed as before.
    assert scores((await api.get("/v1/leaderboards/current?limit=2")).json()) == [(4, 40),
                                                                               (3, 30)]
    bad = await api.get("/v1/leaderboards/current?limit=0")
    assert bad.status_code == 422
    # A change here: its hint drops the body, the next read is current.
    await post_all(api.client(INGEST), {2: 25})
    assert scores((await api.get(TOP)).json()) == [(2, 45), (4, 40), (3, 30)]


def test_an_alias_is_known_only_while_its_season_runs(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    pages = KnownPages()
    week = parse_season("2026-W49", zone="UTC")
    pages.keep("/v1/leaderboards/current", b"", week, True, 100)
    pages.keep("/v1/leaderboards/2026-W49", b"", week, False, 100)
    inside = (week.starts_at + timedelta(days=1)).timestamp()
    after = (week.ends_at + timedelta(seconds=1)).timestamp()
    monkeypatch.setattr(caches.time, "time", lambda: inside)
    assert pages.get("/v1/leaderboards/current", b"") == ("2026-W49", 100)
    monkeypatch.setattr(caches.time, "time", lambda: after)
    assert pages.get("/v1/leaderboards/current", b"") is None  # next week's, by the route
    assert pages.get("/v1/leaderboards/2026-W49", b"") == ("2026-W49", 100)
    assert pages.get("/v1/leaderboards/2026-W49", b"limit=5") is None


def test_known_pages_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(caches, "MAX_KNOWN_PAGES", 3)
    pages = KnownPages()
    week = parse_season("2026-W49", zone="UTC")
    pages.keep("/p", b"x" * (caches.MAX_KNOWN_QUERY + 1), week, False, 1)
    assert pages.pages == {}  # a long query string is parsed each time
    for limit in (1, 2, 3):
        pages.keep("/p", b"limit=%d" % limit, week, False, limit)
    assert len(pages.pages) == 3
    pages.keep("/p", b"limit=4", week, False, 4)  # full: the oldest is forgotten
    assert list(pages.pages) == [("/p", b"limit=2"), ("/p", b"limit=3"), ("/p", b"limit=4")]


async def test_a_known_neighbourhood_is_sent_without_routing_once_its_token_may(
        serve: ApiFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: a learner's neighbourhood answered before is sent from the
    neighbourhoods' cache without routing or parsing, but only after its
    token is checked; any other answer is the route's."""
    api = await serve()
    await post_all(api.client(INGEST), {1: 10, 2: 20, 3: 30})
    path, query = "/v1/leaderboards/current/users/2", b"radius=1"
    mine = api.client(token_for(api.env, 2))
    st = state(api)
    async with asyncio.timeout(10):
        while True:
            first = await mine.get(f"{path}?radius=1")
            assert first.status_code == 200, first.text
            page = st.around_pages.get(path, query)
            if page is not None and st.around_cache.get(*page) is not None:
                break

    def no_parsing(*_args: Any) -> Any:
        raise AssertionError("a known neighbourhood was routed again")

    with monkeypatch.context() as patched:
        patched.setattr(fast, "query_int", no_parsing)
        again = await mine.get(f"{path}?radius=1")
        assert again.status_code == 200 and again.json() == first.json()
        # Another learner's token, or none: refused (by the route, which
        # checks the token before it parses the query), never the body.
        assert_problem(await api.client(token_for(api.env, 3)).get(f"{path}?radius=1"), 403,
                       "forbidden")
        assert (await api.get(f"{path}?radius=1")).status_code == 401
    # A change: its hint drops the body, the next read is current.
    await post_all(api.client(INGEST), {1: 15})
    now = (await mine.get(f"{path}?radius=1")).json()
    assert [(e["user_id"], e["score"]) for e in now["neighbors"]] == [(1, 25), (2, 20)]
