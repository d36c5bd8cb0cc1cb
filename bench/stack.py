"""The HTTP stack against its server (issue 45): `GET /healthz` through a
`laurels serve` and through the bare ASGI app on the same uvicorn
(bench/bare_app.py), in alternating rounds, so the machine's drift falls on
both alike.

    .venv/bin/python bench/stack.py                 # 8 rounds of 3 s each side
    .venv/bin/python bench/stack.py --rounds 12 --py-spy /tmp/healthz.raw
    .venv/bin/python bench/stack.py --posts         # single POSTs against pgbench
    .venv/bin/python bench/stack.py --batches       # batch ingest against a raw insert

With --posts, the line is single `POST /v1/completions` (wrk, 32
connections, a new completion each) against pgbench's transactions of one
INSERT and its outbox row (32 clients, into tables of their own in the
same database): the rates, their ratio (issue 45 asks 0.5), and wrk's p99.

One scratch database (`laurels_bench_stack_<id>`, migrated by the serve)
on $LAURELS_BENCH_DATABASE_URL and a key prefix of its own on
$LAURELS_BENCH_REDIS_URL (both default to the machine's, loopback only);
wrk with one thread and 32 connections. Printed, per round and as the
median over rounds: requests a second on each side and their ratio, and
the server's CPU a request on each side (the steadier figure on a shared
machine: it does not move with the load generator's share of the cores).
With --batches, the line is durable batch ingest (`POST
/v1/completions/batch`, 1,000 new completions a batch from 4 clients,
each answered after its apply) against the same rows inserted raw (one
batched INSERT into a table and one into an outbox, a transaction a
batch, 4 connections): the rates, their ratio (issue 45 asks 0.3), and
each process's CPU a completion (laurels, PostgreSQL, Redis, this
client), whose sum is what two cores divide.

With --py-spy, a raw py-spy record of the laurels process during one more
run. Drops its database and deletes its keys at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
import psycopg  # noqa: E402
import redis  # noqa: E402
from psycopg import sql  # noqa: E402

from bench.phases import api_batches, batch_bodies, raw_insert  # noqa: E402
from bench.support import (  # noqa: E402
    DEFAULT_DATABASE_URL,
    DEFAULT_REDIS_URL,
    RAW_TABLES,
    BenchError,
    cpu_by_process,
    cpu_since,
    log,
    loopback_only,
    start_bare,
    start_service,
)


def run_wrk(url: str, pid: int, seconds: int) -> tuple[float, float]:
    """(requests a second, the server's CPU microseconds a request)."""
    server = psutil.Process(pid)
    before = sum(server.cpu_times()[:2])
    out = subprocess.run(["wrk", "-t1", "-c32", f"-d{seconds}s", url], capture_output=True,
                         text=True, timeout=seconds + 60).stdout
    used = sum(server.cpu_times()[:2]) - before
    rate = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    count = re.search(r"(\d+) requests in", out)
    if rate is None or count is None or "Non-2xx" in out:
        raise BenchError(f"wrk against {url}: {out[-300:]}")
    return float(rate.group(1)), 1e6 * used / int(count.group(1))


POST_LUA = """counter = 0
request = function()
  counter = counter + 1
  local body = string.format('{"completion_id":"s%s-%d","user_id":%d,"points":1,'
    .. '"completed_at":"%s"}', RUN, counter, 1 + counter % 20000, AT)
  return wrk.format("POST", "/v1/completions",
    {["Content-Type"]="application/json", ["Authorization"]="Bearer " .. TOKEN}, body)
end
"""
PGBENCH_SQL = """\\set n random(1, 9000000000000000000)
\\set uid random(1, 20000)
BEGIN;
INSERT INTO bench_raw (completion_id, user_id, points, completed_at)
  VALUES ('r' || :client_id || '-' || :n, :uid, 1, now())
  RETURNING seq \\gset
INSERT INTO bench_raw_outbox (seq) VALUES (:seq);
END;
"""


def run_posts(svc: Any, url: str, workdir: Path, seconds: int, wave: int) -> tuple[float, float]:
    """(single POSTs a second through laurels, wrk's p99 in ms)."""
    at = datetime.now(UTC).isoformat()
    script = workdir / f"posts-{wave}.lua"
    script.write_text(f'RUN, AT, TOKEN = "{wave}", "{at}", "{svc.ingest_token}"\n' + POST_LUA)
    out = subprocess.run(["wrk", "-t1", "-c32", f"-d{seconds}s", "--latency", "-s",
                          str(script), f"{svc.base_url}/v1/completions"], capture_output=True,
                         text=True, timeout=seconds + 60).stdout
    rate = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    p99 = re.search(r"^\s+99%\s+([0-9.]+)(us|ms|s)", out, re.MULTILINE)
    if rate is None or p99 is None or "Non-2xx" in out:
        raise BenchError(f"wrk posting to {svc.base_url}: {out[-300:]}")
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
    return float(rate.group(1)), float(p99.group(1)) * scale


def run_pgbench(url: str, workdir: Path, seconds: int) -> tuple[float, float]:
    """(pgbench's transactions a second, their p99 in ms is not printed:
    the mean latency instead)."""
    script = workdir / "insert.sql"
    script.write_text(PGBENCH_SQL)
    out = subprocess.run(["pgbench", "-n", "-M", "prepared", "-c32", "-j2", f"-T{seconds}",
                          "-f", str(script),
                          url], capture_output=True, text=True, timeout=seconds + 60)
    tps = re.search(r"tps = ([0-9.]+)", out.stdout)
    latency = re.search(r"latency average = ([0-9.]+) ms", out.stdout)
    if tps is None or latency is None:
        raise BenchError(f"pgbench: {out.stdout[-300:]} {out.stderr[-300:]}")
    return float(tps.group(1)), float(latency.group(1))


def posts(args: argparse.Namespace, svc: Any, url: str, workdir: Path) -> None:
    """Single POSTs through laurels against pgbench, alternating."""
    if shutil.which("pgbench") is None:
        raise BenchError("pgbench is not installed (Debian: apt install postgresql-client)")
    with psycopg.connect(url, autocommit=True) as conn:
        for ddl in RAW_TABLES:
            conn.execute(ddl)
    ours: list[float] = []
    raw: list[float] = []
    server = psutil.Process(svc.proc.pid)
    for r in range(args.rounds):
        before, served = cpu_by_process(), sum(server.cpu_times()[:2])
        rate, p99 = run_posts(svc, url, workdir, args.seconds, r)
        used, served = cpu_since(before), sum(server.cpu_times()[:2]) - served
        tps, mean = run_pgbench(url, workdir, args.seconds)
        ours.append(rate)
        raw.append(tps)
        posted = rate * args.seconds
        log(f"round {r + 1}: laurels {rate:,.0f} posts/s (p99 {p99:.1f} ms; CPU a post: "
            f"laurels {1e6 * served / posted:.0f} us, PostgreSQL "
            f"{1e6 * used['postgres'] / posted:.0f} us, Redis "
            f"{1e6 * used['redis'] / posted:.0f} us), pgbench "
            f"{tps:,.0f} transactions/s (mean {mean:.1f} ms): {rate / tps:.2f}")
    ratio = statistics.median(a / b for a, b in zip(ours, raw, strict=True))
    log(f"single POST / pgbench's INSERT + outbox row: {ratio:.2f} (median of {args.rounds} "
        "rounds; issue 45: >= 0.5)")


BATCH, CLIENTS, LEARNERS = 1000, 4, 50_000


def batches(args: argparse.Namespace, svc: Any, url: str) -> None:
    """Batch ingest through laurels against the raw batched insert, alternating."""
    with psycopg.connect(url, autocommit=True) as conn:
        for ddl in RAW_TABLES:
            conn.execute(ddl)
    count = BATCH * args.batches
    server = psutil.Process(svc.proc.pid)
    ours: list[float] = []
    raw: list[float] = []
    spent: dict[str, list[float]] = {"laurels": [], "postgres": [], "redis": [], "client": []}
    for r in range(-1, args.rounds):  # round -1 warms both sides up
        now, wave = datetime.now(UTC), secrets.token_hex(4)
        items = [(f"b{wave}-{i}", 1 + (i * 104729 + r) % LEARNERS, 1 + i % 10, now)
                 for i in range(count)]
        chunks = [items[i:i + BATCH] for i in range(0, count, BATCH)]
        bodies = batch_bodies(chunks)
        sides = ["laurels", "raw"] if r % 2 == 0 else ["raw", "laurels"]
        for side in sides:
            if side == "raw":
                seconds = asyncio.run(raw_insert(url, chunks, CLIENTS))
                raw.append(count / seconds)
                continue
            before, served = cpu_by_process(), sum(server.cpu_times()[:2])
            started = time.perf_counter()
            asyncio.run(api_batches(svc, bodies, CLIENTS))
            seconds = time.perf_counter() - started
            used, served = cpu_since(before), sum(server.cpu_times()[:2]) - served
            ours.append(count / seconds)
            for key, seconds_used in (("laurels", served), ("client", used["python"]),
                                      ("postgres", used["postgres"]), ("redis", used["redis"])):
                spent[key].append(1e6 * seconds_used / count)
        if r < 0:
            ours.clear()
            raw.clear()
            for v in spent.values():
                v.clear()
            continue
        log(f"round {r + 1}: laurels {ours[-1]:,.0f}/s, raw {raw[-1]:,.0f}/s: "
            f"{ours[-1] / raw[-1]:.2f}; CPU a completion, us: "
            + ", ".join(f"{k} {v[-1]:.1f}" for k, v in spent.items())
            + f" (sum {sum(v[-1] for v in spent.values()):.1f})")
    ratio = statistics.median(a / b for a, b in zip(ours, raw, strict=True))
    log(f"batch ingest / the raw batched INSERT + outbox: {ratio:.2f} (median of {args.rounds} "
        f"rounds; issue 45: >= 0.3); {statistics.median(ours):,.0f} against "
        f"{statistics.median(raw):,.0f} completions/s; CPU a completion, us (median): "
        + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in spent.items()))


def spied(args: argparse.Namespace, pid: int, load: Callable[[], object]) -> None:
    """A raw py-spy record of `pid` while `load` runs once more."""
    spy = subprocess.Popen(
        [shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy")),
         "record", "-r", "300", "-f", "raw", "-o", args.py_spy, "-d", str(args.seconds + 1),
         "-p", str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    load()
    spy.wait(timeout=60)
    log(f"py-spy record: {args.py_spy}")


def healthz(args: argparse.Namespace, svc: Any, procs: list[subprocess.Popen[bytes]],
            workdir: Path) -> None:
    """/healthz through laurels against the bare app, alternating."""
    bare, bare_url = start_bare(workdir)
    procs.append(bare)
    sides = {"bare": (f"{bare_url}/healthz", bare.pid),
             "laurels": (f"{svc.base_url}/healthz", svc.proc.pid)}
    for target, pid in sides.values():  # warm-up
        run_wrk(target, pid, 1)
    rates: dict[str, list[float]] = {side: [] for side in sides}
    cpu: dict[str, list[float]] = {side: [] for side in sides}
    for r in range(args.rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for side in order:
            rate, us = run_wrk(*sides[side], args.seconds)
            rates[side].append(rate)
            cpu[side].append(us)
        log(f"round {r + 1}: bare {rates['bare'][-1]:,.0f}/s ({cpu['bare'][-1]:.1f} us), "
            f"laurels {rates['laurels'][-1]:,.0f}/s ({cpu['laurels'][-1]:.1f} us): "
            f"{rates['laurels'][-1] / rates['bare'][-1]:.2f}")
    ratio = statistics.median(a / b for a, b in zip(rates["laurels"], rates["bare"],
                                                    strict=True))
    log(f"/healthz through laurels / the bare app: {ratio:.2f} (median of {args.rounds} "
        "rounds; issue 45: >= 0.9)")
    log(f"the server's CPU a request (median): bare {statistics.median(cpu['bare']):.1f} us, "
        f"laurels {statistics.median(cpu['laurels']):.1f} us")
    if args.py_spy:
        spied(args, svc.proc.pid, lambda: run_wrk(*sides["laurels"], args.seconds))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--posts", action="store_true",
                        help="single POSTs against pgbench instead of /healthz")
    parser.add_argument("--batches", type=int, nargs="?", const=40, metavar="N",
                        help="batch ingest (N batches of 1,000 a round, each side) against "
                             "a raw batched insert instead of /healthz")
    parser.add_argument("--py-spy", metavar="FILE", help="py-spy record (raw) of laurels")
    args = parser.parse_args(argv)
    if not args.batches and shutil.which("wrk") is None:
        raise BenchError("wrk is not installed (Debian: apt install wrk)")
    admin = os.environ.get("LAURELS_BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    redis_url = os.environ.get("LAURELS_BENCH_REDIS_URL", DEFAULT_REDIS_URL)
    loopback_only(admin, "LAURELS_BENCH_DATABASE_URL")
    loopback_only(redis_url, "LAURELS_BENCH_REDIS_URL")
    run_id = secrets.token_hex(4)
    name, prefix = f"laurels_bench_stack_{run_id}", f"benchstack{run_id}"
    url = admin.rsplit("/", 1)[0] + f"/{name}"
    workdir = Path(tempfile.mkdtemp(prefix="laurels-bench-stack-"))
    with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        svc = start_service(url, redis_url, prefix, workdir)
        procs.append(svc.proc)
        if args.batches:
            batches(args, svc, url)
            if args.py_spy:
                args.seconds = 10
                spied(args, svc.proc.pid, lambda: batches(
                    argparse.Namespace(rounds=1, batches=args.batches), svc, url))
            return 0
        if args.posts:
            posts(args, svc, url, workdir)
            if args.py_spy:
                spied(args, svc.proc.pid,
                      lambda: run_posts(svc, url, workdir, args.seconds, args.rounds))
            return 0
        healthz(args, svc, procs, workdir)
        return 0
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
        client = redis.Redis.from_url(redis_url)
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            client.unlink(key)
        with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                         .format(sql.Identifier(name)))
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
