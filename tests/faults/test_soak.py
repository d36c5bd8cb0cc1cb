"""A bounded soak: steady writes, hundreds of SSE listeners, a rebuild midway.

Short form by default (CI); `LAURELS_SOAK_SECONDS=300` for the long form.
It shows flat memory, no errors, and a board equal to what was recorded.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from typing import Any

import httpx
import psutil
import pytest

from tests.helpers import ADMIN, INGEST

pytestmark = [pytest.mark.once, pytest.mark.slow]

SOAK_SECONDS = float(os.environ.get("LAURELS_SOAK_SECONDS", "25"))
LISTENERS = int(os.environ.get("LAURELS_SOAK_LISTENERS", "200"))
RATE = 100  # completions per second, in batches of 10
SEASON = "2026-W48"


async def listener(url: str, received: list[int], k: int, stop: asyncio.Event) -> None:
    async with httpx.AsyncClient(timeout=None) as c, c.stream("GET", url) as resp:
        assert resp.status_code == 200
        async for line in resp.aiter_lines():
            if line.startswith("event: changed") or line.startswith("event: rebuilt"):
                received[k] += 1
            if stop.is_set():
                return


async def test_soak_flat_memory_no_errors(serve: Any) -> None:
    server = serve(LAURELS_CLOSE_SEASONS="false", LAURELS_WRITE_RATE_LIMIT="0")
    proc = psutil.Process(server.process.pid)
    stop = asyncio.Event()
    received = [0] * LISTENERS
    tasks = [asyncio.create_task(listener(f"{server.url}/v1/leaderboards/{SEASON}/events",
                                          received, k, stop)) for k in range(LISTENERS)]
    rnd = random.Random(7)
    expected: dict[int, int] = {}
    errors: list[str] = []
    rss: list[float] = []
    rebuild_status = None
    n = 0
    async with httpx.AsyncClient(base_url=server.url, timeout=30,
                                 headers={"Authorization": f"Bearer {INGEST}"}) as c:
        start = time.monotonic()
        next_sample = start
        rebuilt = False
        while time.monotonic() - start < SOAK_SECONDS:
            batch = []
            for _ in range(10):
                n += 1
                uid, pts = rnd.randint(1, 2000), rnd.randint(1, 10)
                batch.append({"completion_id": f"soak{n}", "user_id": uid, "points": pts,
                              "completed_at": "2026-11-25T12:00:00Z"})
                expected[uid] = expected.get(uid, 0) + pts
            resp = await c.post("/v1/completions/batch", json={"completions": batch})
            if resp.status_code != 200 or any(r["status"] != "recorded"
                                               for r in resp.json()["results"]):
                errors.append(resp.text[:200])
            if not rebuilt and time.monotonic() - start > SOAK_SECONDS / 2:
                r = await c.post(f"/v1/admin/leaderboards/{SEASON}/rebuild",
                                 headers={"Authorization": f"Bearer {ADMIN}"})
                rebuild_status = r.status_code
                rebuilt = True
            if time.monotonic() >= next_sample:
                rss.append(proc.memory_info().rss / 2**20)
                next_sample += 1
            await asyncio.sleep(10 / RATE)
        await asyncio.sleep(2)
        top = (await c.get(f"/v1/leaderboards/{SEASON}?limit=1000")).json()
        verify = (await c.get(f"/v1/admin/leaderboards/{SEASON}/verify",
                              headers={"Authorization": f"Bearer {ADMIN}"})).json()
        metrics = (await c.get("/metrics", headers={"Authorization": f"Bearer {ADMIN}"})).text
    stop.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    third = max(1, len(rss) // 3)
    early, late = sum(rss[third:2 * third]) / third, sum(rss[-third:]) / third
    connections = next(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                       if line.startswith('laurels_sse_connections{stream="board"}'))
    figures = {"seconds": SOAK_SECONDS, "completions": n, "learners": len(expected),
               "sse_listeners": LISTENERS, "listeners_with_events": sum(1 for r in received if r),
               "events_per_listener_max": max(received), "rss_mib_first": round(rss[0], 1),
               "rss_mib_middle_third": round(early, 1), "rss_mib_last_third": round(late, 1),
               "errors": len(errors), "rebuild": rebuild_status,
               "verify_consistent": verify["consistent"], "sse_connections_seen": connections}
    print("\nSOAK FIGURES " + json.dumps(figures, sort_keys=True))
    assert errors == []
    assert rebuild_status == 202
    assert verify["consistent"] is True and verify["players_checked"] == len(expected)
    assert top["total"] == len(expected)
    assert all(r > 0 for r in received)
    assert max(received) <= 4 * (SOAK_SECONDS + 5)  # at most 4 changed a second each
    assert connections == LISTENERS
    assert late < early * 1.25 + 10  # flat: no growth with time
