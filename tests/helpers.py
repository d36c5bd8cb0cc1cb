"""Helpers shared by the test tiers and by `bench/`: the test's stores,
`laurels serve` as a subprocess, HTTP clients, learner tokens, events, and
polling (`wait_until`, `eventually`: tests/polling.py, re-exported here).

No fixtures here (they live in conftest.py); plain functions and classes
that any test module, or the bench, imports.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import redis
from hypothesis import Phase

from laurels.api.auth import mint
from laurels.process.settings import Settings
from tests.polling import eventually as eventually  # re-exported: the one way to poll
from tests.polling import wait_until as wait_until
from tests.webhook_receiver import Receiver as Receiver  # re-exported: the one receiver

# The third store setup of .ci/run: LAURELS_TEST_REDIS_URL names a node of a
# Redis Cluster (tests/cluster.py makes one from the machine's redis-server).
CLUSTER = os.environ.get("LAURELS_TEST_REDIS_CLUSTER", "").lower() == "true"


@contextlib.contextmanager
def sync_redis(url: str, **options: Any) -> Iterator[Any]:
    """A plain (blocking) client of the test's Redis, cluster-aware, whose
    connections are all closed afterwards (a cluster client's `close` leaves
    its nodes' pools open)."""
    client: Any = (redis.RedisCluster.from_url(url, **options) if CLUSTER
                   else redis.Redis.from_url(url, **options))
    try:
        yield client
    finally:
        if CLUSTER:
            for node in client.get_nodes():
                if node.redis_connection is not None:
                    node.redis_connection.connection_pool.disconnect()
        client.close()


INGEST = "test-ingest-token"
ADMIN = "test-admin-token"
ADMIN_AUTH = {"Authorization": f"Bearer {ADMIN}"}  # /metrics, admin calls
# Every viewer of the suite's load tests comes from 127.0.0.1: the per-client
# stream cap (16 by default) is lifted for them; tests of the cap set their own.
SUITE_STREAMS_PER_CLIENT = 100_000
USER_SECRET = "test-user-token-secret-0123456789abcdef"
WEBHOOK_SECRET = "test-webhook-secret"


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    env: dict[str, str]
    log: Path
    clients: list[httpx.Client] = field(default_factory=list)

    def client(self, token: str | None = None) -> httpx.Client:
        """A client of this server, closed when the server is stopped."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        client = httpx.Client(base_url=self.url, headers=headers, timeout=30)
        self.clients.append(client)
        return client

    def stop(self) -> None:
        for client in self.clients:
            client.close()
        stop_process(self.process)


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 20 s."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def server_env(database_url: str, redis_url: str, key_prefix: str, data_dir: Path,
               **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAURELS_")}
    env.update(LAURELS_DATABASE_URL=database_url, LAURELS_REDIS_URL=redis_url,
               LAURELS_KEY_PREFIX=key_prefix, LAURELS_DATA_DIR=str(data_dir),
               LAURELS_INGEST_TOKEN=INGEST, LAURELS_ADMIN_TOKEN=ADMIN,
               LAURELS_USER_TOKEN_SECRET=USER_SECRET,
               LAURELS_MAX_STREAMS_PER_CLIENT=str(SUITE_STREAMS_PER_CLIENT),
               # Every test's client is 127.0.0.1; the share has its own test.
               LAURELS_MAX_CONNECTIONS_PER_CLIENT="1000000")
    env.update(extra)
    if CLUSTER and env["LAURELS_REDIS_URL"] == os.environ.get("LAURELS_TEST_REDIS_URL"):
        env.setdefault("LAURELS_REDIS_CLUSTER", "true")  # own single nodes stay single
    return env


def laurels_bin() -> str:
    return str(Path(sys.executable).with_name("laurels"))


def start_server(env: dict[str, str], log: Path, *args: str) -> Server:
    port = free_port()
    env = {**env, "LAURELS_PORT": str(port)}
    with log.open("wb") as out:
        proc = subprocess.Popen([laurels_bin(), "serve", *args], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    server = Server(f"http://127.0.0.1:{port}", proc, env, log)

    def ready() -> bool:
        if proc.poll() is not None:  # fails at once: no point waiting for it
            raise RuntimeError(f"laurels serve exited: {log.read_text()[-2000:]}")
        try:
            return httpx.get(f"{server.url}/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_until(ready, 60, "laurels serve to be ready", every=0.1)
    except AssertionError:
        server.stop()
        raise RuntimeError(f"laurels serve did not become ready: {log.read_text()[-2000:]}"
                           ) from None
    return server


PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}


def token_for(env: dict[str, str], user_id: int, ttl: int = 600) -> str:
    """A learner token signed with the server's secret (what `laurels token`
    prints; that command has its own test). A negative `ttl` gives an
    expired one."""
    return mint(env["LAURELS_USER_TOKEN_SECRET"], user_id, ttl)


def assert_problem(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = resp.json()
    assert PROBLEM_KEYS <= body.keys() and body["code"] == code and body["status"] == status
    assert "Traceback" not in resp.text and "SELECT" not in resp.text
    return body


def completion(cid: str, uid: int, points: int, at: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"completion_id": cid, "user_id": uid, "points": points}
    if at:
        body["completed_at"] = at
    return body


class Events:
    """Collects server-sent events of one connection in a thread."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.events: list[tuple[str, str, float]] = []
        self.comments: list[float] = []
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.status = 0
        self.thread = threading.Thread(target=self._run, args=(url, headers or {}), daemon=True)
        self.thread.start()
        assert self.ready.wait(10), "no ready event"

    def _run(self, url: str, headers: dict[str, str]) -> None:
        try:
            self._read(url, headers)
        except httpx.HTTPError:
            pass  # the server went away (it is stopped at the end of each test)
        finally:
            self.ready.set()

    def _read(self, url: str, headers: dict[str, str]) -> None:
        with httpx.Client(timeout=None) as c, c.stream("GET", url, headers=headers) as resp:
            self.status = resp.status_code
            if resp.status_code != 200:
                self.ready.set()
                return
            event = ""
            for line in resp.iter_lines():
                if self.stop.is_set():
                    return
                if line.startswith(":"):
                    self.comments.append(time.monotonic())
                elif line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    self.events.append((event, line[5:].strip(), time.monotonic()))
                    if event == "ready":
                        self.ready.set()

    def named(self, name: str) -> list[dict[str, Any]]:
        return [json.loads(d) for e, d, _ in self.events if e == name]

    def close(self) -> None:
        self.stop.set()


def metric(base: str, name: str) -> float:
    text = httpx.get(f"{base}/metrics", headers=ADMIN_AUTH).text
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name):
            total += float(line.rsplit(" ", 1)[1])
    return total


def embedded_dir() -> Path:
    """A folder for embedded servers, outside pytest's basetemp: pytest resets
    /tmp/pytest-of-<user> to mode 0700, which the `embedded_postgres` system
    user (PostgreSQL run as root) cannot traverse; laurels never opens a
    folder it did not create, so the test opens its own to passage (0711)."""
    folder = Path(tempfile.mkdtemp(prefix="laurels-test-"))
    folder.chmod(0o711)
    return folder



JWT = re.compile(r"eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
ANNOUNCED = re.compile(r"^\s*LAURELS_[A-Z_]+=")  # the first start prints its secrets, once
NEVER = ("was never retrieved", "ASGI callable returned without completing response")


def leaks(lines: Iterable[str]) -> list[str]:
    """Log lines holding a token of the suite or any JWT, or a NEVER line."""
    found = []
    for line in lines:
        if ANNOUNCED.match(line):
            continue
        if (JWT.search(line) or any(t in line for t in (INGEST, ADMIN, USER_SECRET))
                or any(n in line for n in NEVER)):
            found.append(line[:300])
    return found


def make_settings(tmp_path: Path, database_url: str, redis_url: str, key_prefix: str,
                  **overrides: Any) -> Settings:
    values: dict[str, Any] = dict(
        database_url=database_url, redis_url=redis_url, key_prefix=key_prefix,
        redis_cluster=CLUSTER,
        data_dir=tmp_path / "data", ingest_token=INGEST, admin_token=ADMIN,
        user_token_secret=USER_SECRET, max_streams_per_client=SUITE_STREAMS_PER_CLIENT)
    values.update(overrides)
    return Settings(**values)


# The seed's exercise, in 2026-W45: users 30, 10 and 20 tie on 10 points;
# 30 reached it first, 10 and 20 at the same instant; 40 has 9.
SEED_TIES = [("t1", 30, 10, "2026-11-03T09:00:00Z"), ("t2", 20, 10, "2026-11-03T10:00:00+00:00"),
             ("t3", 10, 10, "2026-11-03T11:00:00+01:00"), ("t4", 40, 9, "2026-11-03T08:00:00Z")]
SEED_TIE_RANKS = {"shared": [(1, 10), (1, 20), (1, 30), (4, 40)],
                  "first": [(1, 30), (2, 10), (3, 20), (4, 40)]}



# The model machines skip hypothesis's explain phase: it traces every line of
# a failing example again, which on these machines (real stores, an event
# loop per step) runs for hours instead of printing the failure.
NO_EXPLAIN = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)


def model_examples(default: int) -> int:
    """Examples per model machine: `LAURELS_MODEL_EXAMPLES` (.ci/run lowers it
    on the setups after the first), else `default`."""
    return int(os.environ.get("LAURELS_MODEL_EXAMPLES", str(default)))


def receiving() -> Receiver:
    """A webhook receiver that takes every event (204) and keeps it
    (tests/webhook_receiver.py), for `async with` or `with`."""
    return Receiver()


def one_line_of(result: subprocess.CompletedProcess[str]) -> str:
    """The line a refusing `laurels` ends with on stderr (after any lines
    saying which stores it uses), with no traceback anywhere."""
    text = result.stderr.strip()
    assert "Traceback" not in text + result.stdout, text
    return text.splitlines()[-1] if text else ""
