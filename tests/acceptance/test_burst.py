"""A burst of viewers must queue, not fail.

The live page refetches the board on every hint, so one completion makes
every open page ask at once. With 10,000 learners on the board:
- 1,000 SSE clients hold the season's events; one completion is posted; each
  client refetches the top 100 on its `changed` hint: every refetch is 200
  and shows the new completion;
- 1,000 concurrent around-me requests: all 200;
- 50 concurrent batch posts: all 200, every item recorded.

aiohttp drives the load (httpx's pool slows down badly at thousands of
connections); everything goes to 127.0.0.1 and stops by itself.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import httpx
import jwt
import pytest

from tests.helpers import ADMIN_AUTH, INGEST, USER_SECRET

pytestmark = pytest.mark.slow

SEASON = "2026-W48"
LEARNERS = 10_000
VIEWERS = 1_000


def seed(url: str) -> None:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {INGEST}"},
                      timeout=60) as c:
        for b in range(LEARNERS // 1000):
            items = [{"completion_id": f"seed-{b}-{i}", "user_id": 1 + b * 1000 + i,
                      "points": 1 + (b * 1000 + i) % 50,
                      "completed_at": "2026-11-25T10:00:00Z"} for i in range(1000)]
            resp = c.post("/v1/completions/batch", json={"completions": items})
            assert resp.status_code == 200
            assert {r["status"] for r in resp.json()["results"]} == {"recorded"}


async def viewer(session: aiohttp.ClientSession, url: str, ready: asyncio.Event,
                 counter: list[int], newcomer: int) -> tuple[int, bool]:
    """One live page: wait for `ready`, then on the first `changed` refetch."""
    async with session.get(f"{url}/v1/leaderboards/{SEASON}/events") as resp:
        assert resp.status == 200
        event = ""
        async for raw in resp.content:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event == "ready":
                counter[0] += 1
                if counter[0] == VIEWERS:
                    ready.set()
            elif line.startswith("data:") and event == "changed":
                async with session.get(f"{url}/v1/leaderboards/{SEASON}",
                                       params={"limit": "100"}) as board:
                    body = await board.json()
                    seen = board.status == 200 and any(
                        e["user_id"] == newcomer for e in body.get("entries", []))
                    return board.status, seen
    raise AssertionError("the stream ended without a changed event")


async def burst_of_viewers(url: str) -> tuple[list[tuple[int, bool]], float]:
    newcomer = 999_999
    ready = asyncio.Event()
    counter = [0]
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        tasks = [asyncio.create_task(viewer(session, url, ready, counter, newcomer))
                 for _ in range(VIEWERS)]
        await asyncio.wait_for(ready.wait(), 60)
        started = time.monotonic()
        async with session.post(f"{url}/v1/completions",
                                headers={"Authorization": f"Bearer {INGEST}"},
                                json={"completion_id": "the-one", "user_id": newcomer,
                                      "points": 10_000,
                                      "completed_at": "2026-11-26T10:00:00Z"}) as resp:
            assert resp.status == 201
        results = await asyncio.wait_for(asyncio.gather(*tasks), 90)
        return results, time.monotonic() - started


async def burst_of_neighbourhoods(url: str) -> list[int]:
    exp = int(time.time()) + 600
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=120)) as session:

        async def one(uid: int) -> int:
            tok = jwt.encode({"sub": str(uid), "exp": exp}, USER_SECRET, algorithm="HS256")
            async with session.get(f"{url}/v1/leaderboards/{SEASON}/users/{uid}",
                                   params={"radius": "5"},
                                   headers={"Authorization": f"Bearer {tok}"}) as resp:
                await resp.read()
                return resp.status

        return list(await asyncio.gather(*(one(1 + (i * 7) % LEARNERS) for i in range(1000))))


async def burst_of_batches(url: str) -> list[tuple[int, set[str]]]:
    connector = aiohttp.TCPConnector(limit=0)
    headers = {"Authorization": f"Bearer {INGEST}"}
    async with aiohttp.ClientSession(connector=connector, headers=headers,
                                     timeout=aiohttp.ClientTimeout(total=120)) as session:

        async def one(k: int) -> tuple[int, set[str]]:
            items = [{"completion_id": f"burst-{k}-{i}", "user_id": 1 + (k * 100 + i) % 5000,
                      "points": 1, "completed_at": "2026-11-27T10:00:00Z"} for i in range(100)]
            async with session.post(f"{url}/v1/completions/batch",
                                    json={"completions": items}) as resp:
                body: dict[str, Any] = await resp.json()
                return resp.status, {r["status"] for r in body.get("results", [])}

        return list(await asyncio.gather(*(one(k) for k in range(50))))


def test_a_burst_of_viewers_queues_instead_of_failing(serve: Any) -> None:
    server = serve(LAURELS_CLOSE_SEASONS="false", LAURELS_WRITE_RATE_LIMIT="0")
    seed(server.url)
    results, seconds = asyncio.run(burst_of_viewers(server.url))
    statuses = [s for s, _ in results]
    assert statuses.count(200) == VIEWERS, {s: statuses.count(s) for s in set(statuses)}
    assert all(seen for _, seen in results), "a refetch did not show the new completion"
    print(f"\nBURST {VIEWERS} viewers refetched after one completion in {seconds:.2f} s")

    statuses = asyncio.run(burst_of_neighbourhoods(server.url))
    assert statuses.count(200) == 1000, {s: statuses.count(s) for s in set(statuses)}

    batches = asyncio.run(burst_of_batches(server.url))
    assert all(status == 200 and kinds == {"recorded"} for status, kinds in batches), batches
    metrics = httpx.get(f"{server.url}/metrics", headers=ADMIN_AUTH).text
    assert 'laurels_pool_wait_seconds_count{store="redis"}' in metrics
    assert 'laurels_pool_wait_seconds_count{store="postgresql"}' in metrics
