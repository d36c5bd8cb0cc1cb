"""A group page the cache does not hold is computed from every member's
standing (338 ms of CPU on a 100,000-member group): one client has at most
two computed at once; the next is `429 rate_limited` with `Retry-After`,
while another client's is computed (issue 64, point 3); the same page asked
again while it is computed waits for that computation. Forced with a held
pause point, requests from two client addresses."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.api.conftest import BASE_URL, ApiFactory
from tests.helpers import INGEST, assert_problem

pytestmark = pytest.mark.once


async def test_one_client_computes_at_most_two_group_pages_at_once(
        serve: ApiFactory) -> None:
    from laurels.core import failpoints

    api = await serve()
    ingest = api.client(INGEST)
    assert (await ingest.put("/v1/groups/big", json={"name": "Big", "access": "public"})
            ).status_code in (200, 201)
    await ingest.post("/v1/groups/big/members", json={"add": [1, 2, 3], "remove": []})
    await ingest.post("/v1/completions/batch", json={"completions": [
        {"completion_id": f"g{u}", "user_id": u, "points": u} for u in (1, 2, 3)]})

    def client(address: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=BASE_URL, timeout=30, transport=httpx.ASGITransport(
            app=api.transport.app, client=(address, 40_000)))

    one, other = client("198.51.100.7"), client("2001:db8:1:2::5")
    page = "/v1/groups/big/leaderboards/current?limit={}".format
    with failpoints.hold("group_page_computed", times=None) as held, \
            failpoints.hold("group_page_awaited", times=None) as waiting:
        first = [asyncio.create_task(one.get(page(n))) for n in (2, 3)]
        for _ in range(200):
            if held.arrivals == 2:
                break
            await asyncio.sleep(0.01)
        assert held.arrivals == 2
        refused = await one.get(page(4))  # a third from the same client, at once
        assert_problem(refused, 429, "rate_limited")
        assert refused.headers["Retry-After"] == "1"
        # The same page again, from either client, waits for the computation
        # under way (it takes no turn: one client's many connections on a cold
        # page are not refused, and the page is computed once).
        same = [asyncio.create_task(c.get(page(2))) for c in (one, one, other)]
        theirs = asyncio.create_task(other.get(page(5)))  # another client's own: computed
        for _ in range(200):
            if held.arrivals == 3 and waiting.arrivals == 3:
                break
            await asyncio.sleep(0.01)
        # All three are waiting for the computation under way: none computes.
        assert (held.arrivals, waiting.arrivals) == (3, 3)
    for resp in [*await asyncio.gather(*first, *same), await theirs]:
        assert resp.status_code == 200, resp.text
        assert [e["user_id"] for e in resp.json()["entries"]][:2] == [3, 2]
    assert (await one.get(page(4))).status_code == 200  # its turns are back
    await one.aclose()
    await other.aclose()
