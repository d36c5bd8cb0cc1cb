"""The seed's exercise "rebuilds during traffic", end to end over HTTP."""

from __future__ import annotations

import random
import threading
from typing import Any

import httpx
import pytest

from tests.helpers import ADMIN, INGEST, wait_until

SEASON = "2026-W48"
CLIENTS = 4
PER_CLIENT = 750  # 3,000 completions, each posted twice
CHUNK = 25
TOTAL_CHUNKS = CLIENTS * PER_CLIENT // CHUNK


def make_items(client: int) -> list[dict[str, Any]]:
    rnd = random.Random(client)
    return [{"completion_id": f"c{client}-{i}", "user_id": rnd.randint(1, 150),
             "points": rnd.randint(1, 20),
             "completed_at": f"2026-11-{23 + rnd.randint(0, 6)}T{rnd.randint(0, 23):02d}:"
                             f"{rnd.randint(0, 59):02d}:{rnd.randint(0, 59):02d}Z"}
            for i in range(PER_CLIENT)]


@pytest.mark.slow
def test_thousands_of_retried_completions_during_two_rebuilds(serve: Any) -> None:
    server = serve(LAURELS_CLOSE_SEASONS="false")
    work = [make_items(k) for k in range(CLIENTS)]
    errors: list[str] = []
    chunks_sent = [0] * CLIENTS  # per client, so no two threads write one counter

    def client(k: int) -> None:
        with httpx.Client(base_url=server.url, timeout=30,
                          headers={"Authorization": f"Bearer {INGEST}"}) as c:
            items = work[k]
            for i in range(0, len(items), CHUNK):
                chunk = items[i:i + CHUNK]
                if i % 50 == 0:  # half as single posts, each sent twice
                    for it in chunk:
                        for _ in range(2):
                            r = c.post("/v1/completions", json=it)
                            if r.status_code not in (200, 201):
                                errors.append(r.text)
                else:  # half as batches, each sent twice
                    for _ in range(2):
                        r = c.post("/v1/completions/batch", json={"completions": chunk})
                        if r.status_code != 200 or any(
                                x["status"] == "rejected" for x in r.json()["results"]):
                            errors.append(r.text)
                chunks_sent[k] += 1

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    admin = server.client(ADMIN)
    rebuild_ids = []
    for round_ in range(2):
        # Each rebuild starts while traffic is flowing: a quarter of the work,
        # then half of it, has been sent.
        wait_until(lambda r=round_: sum(chunks_sent) >= (r + 1) * TOTAL_CHUNKS // 4, seconds=60)
        resp = admin.post(f"/v1/admin/leaderboards/{SEASON}/rebuild")
        assert resp.status_code == 202, resp.text
        body = resp.json()
        assert body["status"] == "running" and body["season"] == SEASON
        rebuild_ids.append(body["rebuild_id"])

        def ended(rid: str = body["rebuild_id"]) -> bool:
            return bool(admin.get(f"/v1/admin/rebuilds/{rid}").json()["status"] != "running")

        wait_until(ended, 240, "the rebuild to end")
    for t in threads:
        t.join(300)
    assert errors == []
    for rid in rebuild_ids:
        status = admin.get(f"/v1/admin/rebuilds/{rid}").json()
        assert status["status"] == "succeeded", status
        assert status["events"] > 0 and status["error"] is None

    expected: dict[int, int] = {}
    for items in work:
        for it in items:
            expected[it["user_id"]] = expected.get(it["user_id"], 0) + it["points"]

    def scores() -> dict[int, int]:
        top = httpx.get(f"{server.url}/v1/leaderboards/{SEASON}?limit=1000").json()
        return {e["user_id"]: e["score"] for e in top["entries"]}

    try:
        wait_until(lambda: scores() == expected, seconds=15)
    except AssertionError:
        assert scores() == expected  # shows the difference
        raise
    verify = admin.get(f"/v1/admin/leaderboards/{SEASON}/verify").json()
    assert verify == {"season": SEASON, "board": "global", "consistent": True,
                      "players_checked": len(expected), "mismatches": []}


def test_admin_endpoints_errors(serve: Any) -> None:
    server = serve()
    admin = server.client(ADMIN)
    assert server.client(INGEST).post(f"/v1/admin/leaderboards/{SEASON}/rebuild"
                                      ).status_code == 403
    assert httpx.post(f"{server.url}/v1/admin/leaderboards/{SEASON}/rebuild").status_code == 401
    assert admin.post("/v1/admin/leaderboards/2026-W99/rebuild").status_code == 422
    assert admin.get("/v1/admin/rebuilds/not-a-uuid").json()["code"] == "validation_error"
    assert admin.get("/v1/admin/rebuilds/00000000-0000-0000-0000-000000000000"
                     ).status_code == 404
    empty = admin.get("/v1/admin/leaderboards/2026-W40/verify").json()
    assert empty == {"season": "2026-W40", "board": "global", "consistent": True,
                     "players_checked": 0, "mismatches": []}
