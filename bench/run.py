"""laurels benchmark: each figure is a ratio against a baseline measured in the same run.

Run from the project root:

    .venv/bin/python bench/run.py            # full: about 70 s
    .venv/bin/python bench/run.py --quick    # quick: about 20 s

It uses the PostgreSQL at $LAURELS_BENCH_DATABASE_URL and the Redis at
$LAURELS_BENCH_REDIS_URL (both must be on the loopback interface), creates its
own database `bench_<random>` and its own Redis key prefix `bench<random>`,
starts `laurels serve` on a free port of 127.0.0.1, measures, prints a table,
and removes everything it created: the server is stopped with SIGTERM, the
database dropped WITH (FORCE), and only the keys under its prefix unlinked.
Nothing is written into the repository. See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import orjson
import psutil
import psycopg
import redis
import redis.asyncio as aioredis
from psycopg import sql

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
BATCH = 500
LUA_ZINCRBY = "return redis.call('ZINCRBY', KEYS[1], ARGV[1], ARGV[2])"
BASELINE_TABLE = "bench_raw_completions"


@dataclass(frozen=True)
class Plan:
    mode: str
    completions: int  # N, per ingest path (API, PostgreSQL, Redis)
    users: int  # distinct user_ids
    ingest_clients: int  # concurrent clients for each ingest path
    ingest_rounds: int  # the three ingest paths alternate this many times
    reads: int  # requests per read endpoint (board and /healthz)
    read_clients: int
    read_rounds: int  # board and /healthz alternate this many times
    warmup_reads: int
    latency_samples: int  # single completions timed per apply path
    idle_viewers: int  # event streams held open for the memory figure
    budget_seconds: float  # hard limit of the measuring part; then it stops


PLANS = {
    "full": Plan("full", completions=50_000, users=5_000, ingest_clients=4, ingest_rounds=2,
                 reads=20_000, read_clients=8, read_rounds=4, warmup_reads=300,
                 latency_samples=400, idle_viewers=3_000, budget_seconds=300),
    "quick": Plan("quick", completions=10_000, users=5_000, ingest_clients=4, ingest_rounds=2,
                  reads=5_000, read_clients=8, read_rounds=2, warmup_reads=200,
                  latency_samples=100, idle_viewers=1_000, budget_seconds=120),
}


class BenchError(Exception):
    """The benchmark cannot go on (or a sanity check failed): one line, exit 1."""


# --------------------------------------------------------------------------- helpers


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return math.nan
    k = max(0, math.ceil(p / 100 * len(sorted_values)) - 1)
    return sorted_values[k]


def loopback_only(url: str, what: str) -> None:
    host = urlsplit(url).hostname
    if host not in LOOPBACK:
        raise BenchError(f"{what} must point at 127.0.0.1 (got host {host!r}); "
                         "this benchmark only talks to the loopback interface")


def with_database(url: str, dbname: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, parts.query, parts.fragment))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def batches(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def split_rounds(chunks: list[Any], rounds: int) -> list[list[Any]]:
    per = math.ceil(len(chunks) / rounds)
    return [chunks[i:i + per] for i in range(0, len(chunks), per)]


class CpuMeter:
    """CPU used by this process (the load generator) and by the server, per wall second."""

    def __init__(self, server_pid: int) -> None:
        self.server = psutil.Process(server_pid)

    def __enter__(self) -> CpuMeter:
        self.wall0 = time.perf_counter()
        self.client0 = time.process_time()
        t = self.server.cpu_times()
        self.server0 = t.user + t.system
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self.wall0
        t = self.server.cpu_times()
        self.client_cores = (time.process_time() - self.client0) / wall
        self.server_cores = (t.user + t.system - self.server0) / wall


async def run_workers(n: int, work: Callable[[int], Coroutine[Any, Any, None]]) -> None:
    """Run n workers concurrently; the first failure cancels the others."""
    async with asyncio.TaskGroup() as tg:
        for i in range(n):
            tg.create_task(work(i))


# --------------------------------------------------------------------------- the service


@dataclass
class Service:
    proc: subprocess.Popen[bytes]
    base_url: str
    ingest_token: str
    admin_token: str
    log_path: Path

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def start_service(database_url: str, redis_url: str, prefix: str, workdir: Path,
                  name: str = "server", **extra_env: str) -> Service:
    port = free_port()
    ingest_token = secrets.token_urlsafe(24)
    admin_token = secrets.token_urlsafe(24)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAURELS_")}
    env.update({
        "LAURELS_DATABASE_URL": database_url,
        "LAURELS_REDIS_URL": redis_url,
        "LAURELS_KEY_PREFIX": prefix,
        "LAURELS_DATA_DIR": str(workdir / f"data-{name}"),
        "LAURELS_HOST": "127.0.0.1",
        "LAURELS_PORT": str(port),
        "LAURELS_INGEST_TOKEN": ingest_token,
        "LAURELS_ADMIN_TOKEN": admin_token,
        "LAURELS_USER_TOKEN_SECRET": secrets.token_urlsafe(32),
        **extra_env,
    })
    exe = Path(sys.executable).with_name("laurels")
    if not exe.exists():
        found = shutil.which("laurels")
        if found is None:
            raise BenchError("cannot find the `laurels` console script next to this Python")
        exe = Path(found)
    log_path = workdir / f"{name}.log"
    with open(log_path, "wb") as out:
        proc = subprocess.Popen([str(exe), "serve"], env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # our Ctrl-C is ours; we stop it
    return Service(proc, f"http://127.0.0.1:{port}", ingest_token, admin_token, log_path)


def wait_ready(svc: Service, timeout: float = 60.0) -> float:
    t0 = time.perf_counter()
    with httpx.Client(base_url=svc.base_url, timeout=2.0, trust_env=False) as client:
        while time.perf_counter() - t0 < timeout:
            if svc.proc.poll() is not None:
                raise BenchError(f"laurels serve exited with {svc.proc.returncode} before "
                                 f"it was ready; its log:\n{svc.log_tail()}")
            try:
                if client.get("/readyz").status_code == 200:
                    return time.perf_counter() - t0
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
    raise BenchError(f"laurels serve not ready after {timeout:.0f} s; its log:\n{svc.log_tail()}")


def stop_service(svc: Service) -> None:
    if svc.proc.poll() is not None:
        return
    svc.proc.send_signal(signal.SIGTERM)
    try:
        svc.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        log("laurels serve ignored SIGTERM for 20 s: killing it")
        svc.proc.kill()
        svc.proc.wait(timeout=10)


# --------------------------------------------------------------------------- measurements


@dataclass
class Results:
    api_seconds: float = 0.0
    pg_seconds: float = 0.0
    redis_seconds: float = 0.0
    api_statuses: Counter[str] = field(default_factory=Counter)
    api_cpu: list[tuple[float, float]] = field(default_factory=list)
    durable_rows: int = 0
    catch_up_seconds: float = math.nan
    board_total: int = 0
    verify: dict[str, Any] = field(default_factory=dict)
    board_seconds: float = 0.0
    health_seconds: float = 0.0
    board_latencies: list[float] = field(default_factory=list)
    health_latencies: list[float] = field(default_factory=list)
    board_errors: int = 0
    health_errors: int = 0
    board_cpu: list[tuple[float, float]] = field(default_factory=list)
    health_cpu: list[tuple[float, float]] = field(default_factory=list)
    pg_settings: dict[str, str] = field(default_factory=dict)
    fast_apply_latencies: list[float] = field(default_factory=list)
    projector_apply_latencies: list[float] = field(default_factory=list)
    viewer_kib: float = math.nan
    bare_viewer_kib: float = math.nan


def make_items(plan: Plan, run_id: str, seed: int) -> list[tuple[str, int, int]]:
    """N completions: unique ids, every one of plan.users user_ids, points 1..10."""
    import random

    rng = random.Random(seed)
    user_ids = [1_000 + (i % plan.users) for i in range(plan.completions)]
    rng.shuffle(user_ids)
    return [(f"b{run_id}-{i}", uid, rng.randint(1, 10)) for i, uid in enumerate(user_ids)]


async def api_ingest(svc: Service, chunks: list[bytes], clients: list[httpx.AsyncClient],
                     out: list[bytes]) -> float:
    pending = iter(chunks)
    headers = {"content-type": "application/json"}

    async def work(i: int) -> None:
        client = clients[i]
        for body in pending:
            r = await client.post("/v1/completions/batch", content=body, headers=headers)
            if r.status_code != 200:
                raise BenchError(f"POST /v1/completions/batch answered {r.status_code}: "
                                 f"{r.text[:300]}")
            out.append(r.content)

    t0 = time.perf_counter()
    await run_workers(len(clients), work)
    return time.perf_counter() - t0


async def pg_ingest(conns: list[psycopg.AsyncConnection[Any]],
                    chunks: list[Sequence[tuple[str, int, int, datetime]]]) -> float:
    pending = iter(chunks)
    stmt = (f"INSERT INTO {BASELINE_TABLE} (completion_id, user_id, points, completed_at) "
            "VALUES (%s, %s, %s, %s)")

    async def work(i: int) -> None:
        conn = conns[i]
        for rows in pending:
            async with conn.transaction(), conn.cursor() as cur:  # one commit per batch
                await cur.executemany(stmt, rows)

    t0 = time.perf_counter()
    await run_workers(len(conns), work)
    return time.perf_counter() - t0


async def redis_ingest(r: aioredis.Redis, sha: str, key: str, clients: int,
                       chunks: list[Sequence[tuple[str, int, int]]]) -> float:
    pending = iter(chunks)

    async def work(i: int) -> None:
        for rows in pending:
            pipe = r.pipeline(transaction=False)
            for _cid, uid, pts in rows:
                pipe.evalsha(sha, 1, key, pts, uid)
            await pipe.execute()

    t0 = time.perf_counter()
    await run_workers(clients, work)
    return time.perf_counter() - t0


class RawHTTP:
    """A minimal HTTP/1.1 keep-alive GET client over one connection.

    httpx costs the load generator about 1.3 ms of CPU per request on these
    machines, so with it the bench client, not the server, was the bottleneck
    of the read test (the server idled at 0.2 cores during /healthz). This client
    costs a few tens of microseconds per request, so the read figures measure
    the server. Correctness of the answers is checked with httpx beforehand.
    """

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    def request(self, path: str) -> bytes:
        return (f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                "Accept: application/json\r\n\r\n").encode()

    async def get(self, request: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            await self._connect()
        assert self.reader is not None and self.writer is not None
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        headers: dict[bytes, bytes] = {}
        for line in lines[1:]:
            if line:
                k, _, v = line.partition(b":")
                headers[k.strip().lower()] = v.strip()
        if b"content-length" in headers:
            body = await self.reader.readexactly(int(headers[b"content-length"]))
        elif headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                parts.append(chunk[:-2])
            body = b"".join(parts)
        else:
            raise BenchError("an answer without Content-Length or chunked encoding")
        if headers.get(b"connection", b"").lower() == b"close":
            await self.aclose()
        return status, body

    async def aclose(self) -> None:
        if self.writer is not None:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except OSError:
                pass
        self.reader = self.writer = None


async def read_round(clients: list[RawHTTP], path: str, count: int,
                     latencies: list[float]) -> tuple[float, int]:
    pending = iter(range(count))
    errors = 0

    async def work(i: int) -> None:
        nonlocal errors
        client = clients[i]
        request = client.request(path)
        for _ in pending:
            t = time.perf_counter()
            status, _body = await client.get(request)
            latencies.append(time.perf_counter() - t)
            if status != 200:
                errors += 1

    t0 = time.perf_counter()
    await run_workers(len(clients), work)
    return time.perf_counter() - t0, errors


async def measure(plan: Plan, svc: Service, database_url: str, redis_url: str, prefix: str,
                  run_id: str, res: Results) -> None:
    items = make_items(plan, run_id, seed=int(run_id, 16))
    now = datetime.now(UTC)
    api_rounds = split_rounds(
        [orjson.dumps({"completions": [{"completion_id": c, "user_id": u, "points": p}
                                       for c, u, p in chunk]})
         for chunk in batches(items, BATCH)], plan.ingest_rounds)
    pg_rounds = split_rounds(batches([(c, u, p, now) for c, u, p in items], BATCH),
                             plan.ingest_rounds)
    redis_rounds = split_rounds(batches(items, BATCH), plan.ingest_rounds)
    auth = {"authorization": f"Bearer {svc.ingest_token}"}

    def http_clients(n: int, headers: dict[str, str] | None = None) -> list[httpx.AsyncClient]:
        return [httpx.AsyncClient(base_url=svc.base_url, headers=headers, timeout=60.0,
                                  trust_env=False, limits=httpx.Limits(max_connections=1))
                for _ in range(n)]

    # ---- setup of the baselines (outside the timed parts)
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as admin:
        for name in ("fsync", "synchronous_commit"):
            cur = await admin.execute(sql.SQL("SHOW {}").format(sql.Identifier(name)))
            row = await cur.fetchone()
            res.pg_settings[name] = str(row[0]) if row else "?"
        await admin.execute(
            f"CREATE TABLE {BASELINE_TABLE} (completion_id text NOT NULL UNIQUE, "
            "user_id bigint NOT NULL, points integer NOT NULL, "
            "completed_at timestamptz NOT NULL)")
    conns = [await psycopg.AsyncConnection.connect(database_url, autocommit=True)
             for _ in range(plan.ingest_clients)]
    r = aioredis.from_url(redis_url, socket_timeout=30)
    ingest_clients = http_clients(plan.ingest_clients, auth)
    try:
        sha = await r.script_load(LUA_ZINCRBY)
        zkey = f"{prefix}:bench:raw-zset"

        # ---- warm-up of all three paths: 100 items each, uncounted
        warm = [(f"w{run_id}-{i}", 1_000 + i, 1) for i in range(100)]
        body = orjson.dumps({"completions": [{"completion_id": c, "user_id": u, "points": p}
                                             for c, u, p in warm]})
        await api_ingest(svc, [body], ingest_clients[:1], [])
        await pg_ingest(conns[:1], [[(c, u, p, now) for c, u, p in warm]])
        await redis_ingest(r, sha, zkey, 1, [warm])

        # ---- a. ingest: the three paths alternate, round by round
        api_bodies: list[bytes] = []
        for k in range(len(api_rounds)):
            log(f"ingest round {k + 1}/{len(api_rounds)}: raw PostgreSQL insert")
            res.pg_seconds += await pg_ingest(conns, pg_rounds[k])
            log(f"ingest round {k + 1}/{len(api_rounds)}: raw Redis EVALSHA")
            res.redis_seconds += await redis_ingest(r, sha, zkey, plan.ingest_clients,
                                                    redis_rounds[k])
            log(f"ingest round {k + 1}/{len(api_rounds)}: POST /v1/completions/batch")
            with CpuMeter(svc.proc.pid) as cpu:
                res.api_seconds += await api_ingest(svc, api_rounds[k], ingest_clients,
                                                    api_bodies)
            res.api_cpu.append((cpu.client_cores, cpu.server_cores))
        t_last_post = time.perf_counter()

        for content in api_bodies:
            for result in orjson.loads(content)["results"]:
                res.api_statuses[result["status"]] += 1
        if res.api_statuses["recorded"] != plan.completions:
            raise BenchError(f"expected {plan.completions} recorded completions, got "
                             f"{dict(res.api_statuses)}")
        cur = await conns[0].execute("SELECT count(*) FROM completions WHERE completion_id "
                                     "LIKE %s", (f"b{run_id}-%",))
        row = await cur.fetchone()
        res.durable_rows = int(row[0]) if row else 0
        cur = await conns[0].execute(f"SELECT count(*) FROM {BASELINE_TABLE}")
        row = await cur.fetchone()
        if not row or row[0] != plan.completions + len(warm):
            raise BenchError(f"baseline table holds {row and row[0]} rows, expected "
                             f"{plan.completions + len(warm)}")
        pairs = await r.zrange(zkey, 0, -1, withscores=True)
        zsum = sum(float(pair[1]) for pair in pairs)
        want = sum(p for _c, _u, p in items) + len(warm)
        if int(zsum) != want:
            raise BenchError(f"Redis baseline zset sums to {zsum}, expected {want}")
    finally:
        for c in ingest_clients:
            await c.aclose()
        for conn in conns:
            await conn.close()
        await r.aclose()
    if res.durable_rows != plan.completions:
        raise BenchError(f"PostgreSQL holds {res.durable_rows} of the {plan.completions} "
                         "completions the API said it recorded")

    # ---- the board must show every learner before reads are measured
    async with httpx.AsyncClient(base_url=svc.base_url, timeout=10.0, trust_env=False) as c:
        deadline = time.perf_counter() + 60
        season = ""
        while True:
            resp = await c.get("/v1/leaderboards/current", params={"limit": 1})
            if resp.status_code == 200:
                board = resp.json()
                season, res.board_total = board["season"], board["total"]
                if res.board_total >= plan.users:
                    break
            if time.perf_counter() > deadline:
                raise BenchError(f"the board shows {res.board_total} of {plan.users} learners "
                                 f"60 s after ingest (last answer {resp.status_code})")
            await asyncio.sleep(0.1)
        res.catch_up_seconds = time.perf_counter() - t_last_post
        resp = await c.get(f"/v1/admin/leaderboards/{season}/verify",
                           headers={"authorization": f"Bearer {svc.admin_token}"}, timeout=60)
        res.verify = resp.json() if resp.status_code == 200 else {"status": resp.status_code}
        resp = await c.get("/v1/leaderboards/current", params={"limit": 100})
        if resp.status_code != 200 or len(resp.json()["entries"]) != 100:
            raise BenchError(f"GET /v1/leaderboards/current?limit=100 answered "
                             f"{resp.status_code} without 100 entries")

    # ---- b. reads: board and /healthz alternate, same clients, same counts
    board_path = "/v1/leaderboards/current?limit=100"
    read_clients = [RawHTTP(svc.base_url) for _ in range(plan.read_clients)]
    try:
        status, body = await read_clients[0].get(read_clients[0].request(board_path))
        if status != 200 or len(orjson.loads(body)["entries"]) != 100:
            raise BenchError(f"the raw client read {status} without 100 entries")
        await read_round(read_clients, "/healthz", plan.warmup_reads, [])
        await read_round(read_clients, board_path, plan.warmup_reads, [])
        per_round = [plan.reads // plan.read_rounds] * plan.read_rounds
        per_round[-1] += plan.reads - sum(per_round)
        for k, count in enumerate(per_round):
            log(f"read round {k + 1}/{plan.read_rounds}: {count} x GET /healthz, "
                f"{count} x GET {board_path}")
            with CpuMeter(svc.proc.pid) as cpu:
                sec, err = await read_round(read_clients, "/healthz", count,
                                            res.health_latencies)
            res.health_seconds += sec
            res.health_errors += err
            res.health_cpu.append((cpu.client_cores, cpu.server_cores))
            with CpuMeter(svc.proc.pid) as cpu:
                sec, err = await read_round(read_clients, board_path, count,
                                            res.board_latencies)
            res.board_seconds += sec
            res.board_errors += err
            res.board_cpu.append((cpu.client_cores, cpu.server_cores))
    finally:
        for raw in read_clients:
            await raw.aclose()
    if res.board_errors or res.health_errors:
        raise BenchError(f"non-200 answers: board {res.board_errors}, "
                         f"/healthz {res.health_errors}")


async def apply_latencies(svc: Service, redis_url: str, prefix: str, first_uid: int,
                          count: int, out: list[float]) -> None:
    """POST one completion at a time for a learner new on the board and time
    until the apply's refresh hint (published by the apply script's caller)
    arrives: the time from sending to applied in Redis."""
    r = aioredis.from_url(redis_url, socket_timeout=30)
    pubsub = r.pubsub()
    await pubsub.subscribe(f"{prefix}:hints")
    headers = {"authorization": f"Bearer {svc.ingest_token}"}
    try:
        async with httpx.AsyncClient(base_url=svc.base_url, headers=headers, timeout=30.0,
                                     trust_env=False) as client:
            for i in range(count):
                uid = first_uid + i
                t0 = time.perf_counter()
                resp = await client.post("/v1/completions", json={
                    "completion_id": f"lat{prefix}-{uid}", "user_id": uid, "points": 1})
                if resp.status_code != 201:
                    raise BenchError(f"POST /v1/completions answered {resp.status_code}")
                while True:
                    msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=10)
                    if msg is None:
                        if time.perf_counter() - t0 > 10:
                            raise BenchError(f"no hint for learner {uid} within 10 s")
                        continue
                    if orjson.loads(msg["data"]).get("user_id") == uid:
                        out.append(time.perf_counter() - t0)
                        break
    finally:
        await pubsub.aclose()
        await r.aclose()


async def idle_viewer_kib(url: str, pid: int, count: int) -> float:
    """Open `count` event streams that stay idle; the server's RSS growth per
    stream, in KiB, once every one has said `ready`."""
    import aiohttp

    process = psutil.Process(pid)
    ready = 0
    all_ready = asyncio.Event()

    async def viewer(session: aiohttp.ClientSession) -> None:
        nonlocal ready
        async with session.get(url) as resp:
            if resp.status != 200:
                raise BenchError(f"GET {url} answered {resp.status}")
            async for line in resp.content:
                if line.startswith(b"event: ready"):
                    ready += 1
                    if ready == count:
                        all_ready.set()

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=None)) as session:
        warm = [asyncio.create_task(viewer(session)) for _ in range(20)]  # uncounted
        while ready < 20:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        ready, before = 0, process.memory_info().rss
        tasks = [asyncio.create_task(viewer(session)) for _ in range(count)]
        try:
            await asyncio.wait_for(all_ready.wait(), 120)
            await asyncio.sleep(1.0)  # let the allocator settle
            after = process.memory_info().rss
        finally:
            for task in tasks + warm:
                task.cancel()
            await asyncio.gather(*tasks, *warm, return_exceptions=True)
    return (after - before) / count / 1024


def start_bare(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """bench/bare_app.py on the same uvicorn as laurels: the baseline server."""
    port = free_port()
    log_path = workdir / "bare.log"
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("uvicorn")), "bench.bare_app:app", "--host",
             "127.0.0.1", "--port", str(port), "--http", "httptools", "--loop", "uvloop",
             "--no-proxy-headers", "--log-level", "warning"],
            cwd=Path(__file__).resolve().parents[1], stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.perf_counter() + 30
    while time.perf_counter() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1, trust_env=False).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise BenchError("the bare baseline app did not start")


# --------------------------------------------------------------------------- report


def mean_cpu(samples: list[tuple[float, float]]) -> str:
    if not samples:
        return "n/a"
    client = sum(s[0] for s in samples) / len(samples)
    server = sum(s[1] for s in samples) / len(samples)
    return f"bench client {client:.2f} cores, laurels server {server:.2f} cores"


def report(plan: Plan, res: Results, total_seconds: float) -> None:
    n = plan.completions
    api_rate = n / res.api_seconds
    pg_rate = n / res.pg_seconds
    redis_rate = n / res.redis_seconds
    board_rps = plan.reads / res.board_seconds
    health_rps = plan.reads / res.health_seconds
    bl = sorted(res.board_latencies)
    hl = sorted(res.health_latencies)
    b50, b99 = percentile(bl, 50) * 1000, percentile(bl, 99) * 1000
    h50, h99 = percentile(hl, 50) * 1000, percentile(hl, 99) * 1000

    rows = [
        ("durable ingest, POST /v1/completions/batch (completions/s)",
         api_rate, pg_rate, "raw PostgreSQL executemany insert"),
        ("durable ingest, POST /v1/completions/batch (completions/s)",
         api_rate, redis_rate, "raw Redis EVALSHA ZINCRBY, pipelined"),
        ("top-100 reads, GET /v1/leaderboards/current?limit=100 (req/s)",
         board_rps, health_rps, "GET /healthz, same server and clients"),
        ("top-100 read latency p50 (ms)", b50, h50, "GET /healthz p50"),
        ("top-100 read latency p99 (ms)", b99, h99, "GET /healthz p99"),
    ]
    if not math.isnan(res.viewer_kib):
        rows.append(("memory per idle event stream (KiB)", res.viewer_kib, res.bare_viewer_kib,
                     "a held stream on bench/bare_app.py, same uvicorn"))
    fl = sorted(res.fast_apply_latencies)
    pl = sorted(res.projector_apply_latencies)
    if fl and pl:
        rows += [
            ("sent to applied, projector only, p50 (ms)", percentile(pl, 50) * 1000,
             percentile(fl, 50) * 1000, "the same with the fast path, p50"),
            ("sent to applied, projector only, p99 (ms)", percentile(pl, 99) * 1000,
             percentile(fl, 99) * 1000, "the same with the fast path, p99"),
        ]
    w_fig = max(len(r[0]) for r in rows)
    w_base = max(len(r[3]) for r in rows)
    print()
    print(f"laurels bench, {plan.mode} mode: N={n:,} completions per ingest path in batches of "
          f"{BATCH}, {plan.users:,} learners, {plan.ingest_clients} ingest clients; "
          f"{plan.reads:,} reads per endpoint, {plan.read_clients} read clients; "
          f"{os.cpu_count()} CPUs; total {total_seconds:.0f} s")
    print()
    header = f"{'figure':<{w_fig}}  {'value':>10}  {'baseline':>10}  {'ratio':>6}  baseline is"
    print(header)
    print("-" * (len(header) + w_base - len("baseline is")))
    for fig, value, base, what in rows:
        print(f"{fig:<{w_fig}}  {value:>10,.2f}  {base:>10,.2f}  {value / base:>6.2f}  {what}")
    print()
    print("ratio = value / baseline. Throughput: above 1 is faster than the baseline. "
          "Latency: above 1 is slower.")
    print()
    print("checks and context (not figures):")
    print(f"  API results: {dict(res.api_statuses)}; rows in PostgreSQL: {res.durable_rows:,}")
    print(f"  board showed all {res.board_total:,} learners "
          f"{res.catch_up_seconds * 1000:.0f} ms after the last batch returned")
    v = res.verify
    if "consistent" in v:
        print(f"  verify (Redis vs PostgreSQL): consistent={v['consistent']}, "
              f"players_checked={v.get('players_checked')}")
    else:
        print(f"  verify (Redis vs PostgreSQL): not available (HTTP {v.get('status')})")
    print(f"  PostgreSQL fsync={res.pg_settings.get('fsync')}, "
          f"synchronous_commit={res.pg_settings.get('synchronous_commit')}")
    print(f"  CPU during API ingest: {mean_cpu(res.api_cpu)}")
    print(f"  CPU during /healthz reads: {mean_cpu(res.health_cpu)}")
    print(f"  CPU during board reads: {mean_cpu(res.board_cpu)}")
    print(f"  raw timings: API {res.api_seconds:.2f} s, PostgreSQL {res.pg_seconds:.2f} s, "
          f"Redis {res.redis_seconds:.2f} s, board reads {res.board_seconds:.2f} s, "
          f"/healthz {res.health_seconds:.2f} s")


# --------------------------------------------------------------------------- main


def cleanup_redis(redis_url: str, prefix: str) -> int:
    removed = 0
    r = redis.Redis.from_url(redis_url, socket_timeout=10)
    try:
        batch: list[bytes] = []
        for key in r.scan_iter(match=f"{prefix}:*", count=1000):
            batch.append(key)
            if len(batch) >= 500:
                removed += int(r.unlink(*batch))
                batch.clear()
        if batch:
            removed += int(r.unlink(*batch))
    finally:
        r.close()
    return removed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="laurels benchmark (ratios against baselines "
                                     "measured in the same run)")
    parser.add_argument("--quick", action="store_true",
                        help="smaller counts: about 20 s instead of about 70 s")
    args = parser.parse_args(argv)
    plan = PLANS["quick" if args.quick else "full"]

    admin_url = os.environ.get("LAURELS_BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    redis_url = os.environ.get("LAURELS_BENCH_REDIS_URL", DEFAULT_REDIS_URL)
    run_id = secrets.token_hex(4)
    dbname = f"bench_{run_id}"
    prefix = f"bench{run_id}"  # letters and hex digits only: safe in a SCAN pattern
    database_url = with_database(admin_url, dbname)

    # SIGTERM to the bench: unwind through the finally blocks like Ctrl-C does.
    def on_term(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)

    t_start = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="laurels-bench-"))
    services: list[Service] = []
    bare_proc: list[subprocess.Popen[bytes]] = []
    created: list[str] = []
    # A second deployment (own database and prefix) with the fast path
    # switched off: the projector alone applies, woken by NOTIFY.
    dbname2, prefix2 = f"{dbname}_np", f"{prefix}np"
    res = Results()
    ok = False
    try:
        loopback_only(admin_url, "LAURELS_BENCH_DATABASE_URL")
        loopback_only(redis_url, "LAURELS_BENCH_REDIS_URL")
        log(f"{plan.mode} mode; databases {dbname}, {dbname2}; Redis key prefixes "
            f"{prefix}:, {prefix2}:")
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
            for name in (dbname, dbname2):
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
                created.append(name)
        svc = start_service(database_url, redis_url, prefix, workdir)
        services.append(svc)
        projector_only = start_service(with_database(admin_url, dbname2), redis_url, prefix2,
                                       workdir, name="projector-only",
                                       LAURELS_FAILPOINTS="skip:fast_path")
        services.append(projector_only)
        for one in services:
            log(f"laurels serve (pid {one.proc.pid}) on {one.base_url}: "
                f"ready after {wait_ready(one):.1f} s")

        async def everything() -> None:
            await measure(plan, svc, database_url, redis_url, prefix, run_id, res)
            per_round = plan.latency_samples // 2
            for k in range(2):  # the two paths take turns
                log(f"apply latency round {k + 1}/2: {per_round} completions each, "
                    "with the fast path, then projector only")
                await apply_latencies(svc, redis_url, prefix, 5_000_000 + k * per_round,
                                      per_round, res.fast_apply_latencies)
                await apply_latencies(projector_only, redis_url, prefix2,
                                      5_000_000 + k * per_round, per_round,
                                      res.projector_apply_latencies)

        bare, bare_url = start_bare(workdir)
        bare_proc.append(bare)

        async def memory() -> None:
            log(f"memory: {plan.idle_viewers} idle event streams on laurels, then on the "
                "bare app")
            res.viewer_kib = await idle_viewer_kib(
                f"{svc.base_url}/v1/leaderboards/current/events", svc.proc.pid,
                plan.idle_viewers)
            res.bare_viewer_kib = await idle_viewer_kib(f"{bare_url}/events", bare.pid,
                                                        plan.idle_viewers)

        async def all_phases() -> None:
            await everything()
            await memory()

        asyncio.run(asyncio.wait_for(all_phases(), plan.budget_seconds))
        ok = True
    except TimeoutError:
        log(f"ERROR: measuring took longer than its budget of {plan.budget_seconds:.0f} s; "
            "stopped")
    except BenchError as exc:
        log(f"ERROR: {exc}")
    except (psycopg.Error, redis.RedisError, httpx.HTTPError, OSError) as exc:
        log(f"ERROR: {type(exc).__name__}: {exc}")
        for one in services:
            log(f"server log tail:\n{one.log_tail()}")
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the cleanup finish
        for proc in bare_proc:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        for one in services:
            try:
                stop_service(one)
                log(f"laurels serve stopped (exit {one.proc.returncode})")
            except Exception as exc:
                log(f"WARNING: stopping laurels serve failed: {exc}")
        for name in created:
            try:
                with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                                 .format(sql.Identifier(name)))
                log(f"database {name} dropped")
            except Exception as exc:
                log(f"WARNING: could not drop database {name}: {exc}")
        for one_prefix in (prefix, prefix2):
            try:
                n = cleanup_redis(redis_url, one_prefix)
                log(f"{n} Redis keys under {one_prefix}: unlinked")
            except Exception as exc:
                log(f"WARNING: could not remove Redis keys {one_prefix}:*: {exc}")
        shutil.rmtree(workdir, ignore_errors=True)
    if not ok:
        return 1
    report(plan, res, time.perf_counter() - t_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
