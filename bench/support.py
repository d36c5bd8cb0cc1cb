"""What every phase of the bench needs: servers, wrk, CPU meters, timers."""

from __future__ import annotations

import math
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psutil
import psycopg

from tests.helpers import free_port, laurels_bin

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
ROOT = Path(__file__).resolve().parents[1]


class BenchError(Exception):
    """The benchmark cannot go on (or a sanity check failed): one line, exit 1."""


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def loopback_only(url: str, what: str) -> None:
    host = urlsplit(url).hostname
    if host not in LOOPBACK:
        raise BenchError(f"{what} must point at 127.0.0.1 (got host {host!r}); "
                         "this benchmark only talks to the loopback interface")


@dataclass
class Cpu:
    """CPU used per wall second by the load generator and by the server."""

    client: float = 0.0
    server: float = 0.0

    def __str__(self) -> str:
        return f"client {self.client:.2f} cores, server {self.server:.2f} cores"


class CpuMeter:
    def __init__(self, server_pid: int, client_pids: Sequence[int] = ()) -> None:
        self.server = psutil.Process(server_pid)
        self.client_pids = list(client_pids)
        self.cpu = Cpu()

    @staticmethod
    def _used(proc: psutil.Process) -> float:
        t = proc.cpu_times()
        return float(t.user + t.system + getattr(t, "children_user", 0)
                     + getattr(t, "children_system", 0))

    def __enter__(self) -> Cpu:
        self.wall0 = time.perf_counter()
        self.client0 = time.process_time()
        self.server0 = self._used(self.server)
        return self.cpu

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self.wall0
        self.cpu.client = (time.process_time() - self.client0) / wall
        self.cpu.server = (self._used(self.server) - self.server0) / wall


def cpu_by_process() -> dict[tuple[str, int], float]:
    """CPU seconds used so far by this process ("python"), every Redis or
    Valkey server ("redis") and every PostgreSQL process ("postgres") of the
    machine (a bench's own among them), each by its pid: `cpu_since` takes
    the difference to a later sample."""
    out = {("python", os.getpid()): time.process_time()}
    for proc in psutil.process_iter(["name", "cpu_times"]):
        name, t = proc.info["name"] or "", proc.info["cpu_times"]
        if t is None:
            continue
        if name.startswith(("valkey", "redis-server")):
            out["redis", proc.pid] = t.user + t.system
        elif name.startswith("postgres"):
            out["postgres", proc.pid] = t.user + t.system
    return out


def cpu_since(before: dict[tuple[str, int], float]) -> dict[str, float]:
    """CPU seconds used by each group of `cpu_by_process` since `before`, a
    process at a time: one that exited since (a PostgreSQL backend of a
    closed connection) counts for nothing rather than taking its whole past
    off the sum (a round once read -70 us a post), one started since for
    all it used."""
    used = {"python": 0.0, "redis": 0.0, "postgres": 0.0}
    for (group, pid), seconds in cpu_by_process().items():
        used[group] += seconds - before.get((group, pid), 0.0)
    return used


# The machine's stores, loopback only (each bench makes its own database,
# or key prefix, there): $LAURELS_BENCH_DATABASE_URL / $LAURELS_BENCH_REDIS_URL.
DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


# -- the raw insert (the ingest lines' baseline) ---------------------------------------

# Its tables, made in the bench's own database (each run's), once.
RAW_TABLES = (
    "CREATE TABLE IF NOT EXISTS bench_raw (completion_id text UNIQUE, user_id bigint, "
    "points int, completed_at timestamptz, seq bigserial)",
    "CREATE TABLE IF NOT EXISTS bench_raw_outbox (seq bigint PRIMARY KEY)")


async def raw_batch(conn: psycopg.AsyncConnection[Any],
                    rows: list[tuple[str, int, int, datetime]]) -> None:
    """One batch inserted raw: the rows and an outbox row each, one
    statement each, in one transaction."""
    async with conn.transaction():
        cur = await conn.execute(
            "INSERT INTO bench_raw (completion_id, user_id, points, completed_at) "
            "SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::timestamptz[]) "
            "RETURNING seq",
            ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
             [r[3] for r in rows]))
        seqs = [r[0] for r in await cur.fetchall()]
        await conn.execute("INSERT INTO bench_raw_outbox (seq) SELECT unnest(%s::bigint[])",
                           (seqs,))


# -- servers ------------------------------------------------------------------------


@dataclass
class Service:
    proc: subprocess.Popen[bytes]
    base_url: str
    ingest_token: str
    admin_token: str
    user_secret: str
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def start_service(database_url: str, redis_url: str, prefix: str, workdir: Path,
                  name: str = "server", **extra_env: str) -> Service:
    port = free_port()
    tokens = [secrets.token_urlsafe(24) for _ in range(3)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAURELS_")}
    env.update({
        "LAURELS_DATABASE_URL": database_url, "LAURELS_REDIS_URL": redis_url,
        "LAURELS_KEY_PREFIX": prefix, "LAURELS_DATA_DIR": str(workdir / f"data-{name}"),
        "LAURELS_HOST": "127.0.0.1", "LAURELS_PORT": str(port),
        "LAURELS_INGEST_TOKEN": tokens[0], "LAURELS_ADMIN_TOKEN": tokens[1],
        "LAURELS_USER_TOKEN_SECRET": tokens[2] + tokens[2],
        "LAURELS_WRITE_RATE_LIMIT": "0", "LAURELS_CLOSE_SEASONS": "false",
        # Every simulated viewer comes from 127.0.0.1, where a real audience
        # comes from many addresses: the per-client stream cap (16) and
        # connection share (1,000, issue 64) are lifted.
        "LAURELS_MAX_STREAMS_PER_CLIENT": "1000000",
        "LAURELS_MAX_CONNECTIONS_PER_CLIENT": "1000000",
        **extra_env,
    })
    log_path = workdir / f"{name}.log"
    with open(log_path, "wb") as out:
        proc = subprocess.Popen([laurels_bin(), "serve"], env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # our Ctrl-C is ours; we stop it
    svc = Service(proc, f"http://127.0.0.1:{port}", tokens[0], tokens[1], tokens[2] + tokens[2],
                  log_path, env)
    wait_ready(svc)
    return svc


def wait_ready(svc: Service, timeout: float = 60.0) -> None:
    deadline = time.perf_counter() + timeout
    with httpx.Client(base_url=svc.base_url, timeout=2.0, trust_env=False) as client:
        while time.perf_counter() < deadline:
            if svc.proc.poll() is not None:
                raise BenchError(f"laurels serve exited with {svc.proc.returncode}; its log:"
                                 f"\n{svc.log_tail()}")
            try:
                if client.get("/readyz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
    raise BenchError(f"laurels serve not ready after {timeout:.0f} s:\n{svc.log_tail()}")


def start_bare(workdir: Path, database_url: str | None = None, bodies: int = 0
               ) -> tuple[subprocess.Popen[bytes], str]:
    """bench/bare_app.py on the same uvicorn as laurels: the baseline server
    (with `database_url`, its single-post baseline writes there; with
    `bodies`, that many distinct bodies under /bodies/)."""
    port = free_port()
    env = {**os.environ, "BENCH_BARE_DATABASE_URL": database_url or "",
           "BENCH_BARE_BODIES": str(bodies)}
    with open(workdir / "bare.log", "wb") as out:
        proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("uvicorn")), "bench.bare_app:app", "--host",
             "127.0.0.1", "--port", str(port), "--http", "httptools", "--loop", "uvloop",
             "--no-proxy-headers", "--no-access-log", "--log-level", "warning"],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
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


# -- wrk ------------------------------------------------------------------------------


@dataclass
class Load:
    """One wrk run: requests per second, latency percentiles (ms), CPU split."""

    rps: float
    p50: float
    p99: float
    errors: int
    cpu: Cpu


def _ms(text: str) -> float:
    value, unit = float(re.sub(r"[a-z]+$", "", text)), re.sub(r"^[0-9.]+", "", text)
    return value * {"us": 0.001, "ms": 1.0, "s": 1000.0}.get(unit, 1.0)


def wrk(url: str, server_pid: int, seconds: float = 5.0, connections: int = 32,
        headers: Sequence[str] = (), script: str | None = None) -> Load:
    """Drive `url` with wrk, a compiled load generator, so the client is not
    what is measured (one thread: the other core is the server's)."""
    if shutil.which("wrk") is None:
        raise BenchError("wrk is not installed (Debian: apt install wrk)")
    args = ["wrk", "-t1", f"-c{connections}", f"-d{seconds:.0f}s", "--latency"]
    for header in headers:
        args += ["-H", header]
    if script is not None:
        args += ["-s", script]
    server = psutil.Process(server_pid)
    before, server0, wall0 = os.times(), CpuMeter._used(server), time.perf_counter()
    out = subprocess.run([*args, url], capture_output=True, text=True,
                         timeout=seconds + 60).stdout
    wall, after = time.perf_counter() - wall0, os.times()
    client = (after.children_user + after.children_system
              - before.children_user - before.children_system) / wall
    cpu = Cpu(client, (CpuMeter._used(server) - server0) / wall)
    found = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.MULTILINE)
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.MULTILINE)
    if not (found and p50 and p99):
        raise BenchError(f"wrk printed no figures for {url}: {out[-300:]}")
    errors = sum(int(n) for n in re.findall(r"Non-2xx or 3xx responses:\s+(\d+)", out))
    return Load(float(found.group(1)), _ms(p50.group(1)), _ms(p99.group(1)), errors, cpu)


def every_learner_lua(path: Path, season: str, learners: int, token: str) -> str:
    """A wrk script reading every learner's neighbourhood in turn (learners
    1 to `learners`, with the admin `token`, which may read anyone's), each
    pass over them with the next radius of 0..10 (5 on average): a (learner,
    radius) comes again only 11 passes later, past the per-process cache's
    5 s (api/caches.py around_body), so no read comes from it. Its path."""
    path.write_text(
        'local n, pass = 0, 0\n'
        'request = function()\n'
        f'  n = n + 1\n  if n > {learners} then n, pass = 1, pass + 1 end\n'
        f'  return wrk.format("GET", "/v1/leaderboards/{season}/users/" .. n .. '
        f'"?radius=" .. (pass % 11), {{["Authorization"]="Bearer {token}"}})\n'
        'end\n')
    return str(path)


def dump_json(path: Path, data: Any) -> None:
    import orjson

    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))


def scratch_run(kind: str, work: Callable[[str, str, str], Awaitable[None]]) -> bool:
    """Run `work(database_url, redis_url, key_prefix)` on a database and a
    key prefix of its own, on the stores LAURELS_BENCH_DATABASE_URL and
    LAURELS_BENCH_REDIS_URL name (loopback only), both made for it and
    dropped after, also after an error, SIGTERM or Ctrl-C; True when it
    finished (bench/teams.py, bench/windows.py)."""
    import asyncio
    import signal

    import redis
    from psycopg import sql

    from tests.helpers import with_database

    admin_url = os.environ.get("LAURELS_BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    redis_url = os.environ.get("LAURELS_BENCH_REDIS_URL", DEFAULT_REDIS_URL)
    run_id = secrets.token_hex(4)
    name, prefix = f"laurels_bench_{kind}_{run_id}", f"bench{run_id}"

    def on_term(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    created = ok = False
    try:
        loopback_only(admin_url, "LAURELS_BENCH_DATABASE_URL")
        loopback_only(redis_url, "LAURELS_BENCH_REDIS_URL")
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            created = True
        log(f"database {name}; Redis keys under {prefix}")
        asyncio.run(work(with_database(admin_url, name), redis_url, prefix))
        ok = True
    except BenchError as exc:
        log(f"ERROR: {exc}")
    except (psycopg.Error, redis.RedisError, OSError, ValueError) as exc:
        log(f"ERROR: {type(exc).__name__}: {exc}")
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if created:
            with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                             .format(sql.Identifier(name)))
        client = redis.Redis.from_url(redis_url)
        for key in client.scan_iter(match=f"{prefix}*", count=10_000):
            client.unlink(key)
        client.close()
        log(f"dropped {name}; unlinked the keys under {prefix}")
    return ok
