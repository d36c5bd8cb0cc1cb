"""laurels benchmark: each figure is a ratio against a baseline measured in the same run.

Run from the project root:

    .venv/bin/python -m bench.run --quick   # one small board, about 1 minute
    .venv/bin/python -m bench.run           # 50,000 learners, about 3 minutes
    .venv/bin/python -m bench.run --full    # 10,000, 100,000 and 1,000,000 learners
    .venv/bin/python -m bench.run --leagues # the league lines alone (bench/leagues.py)

It uses the PostgreSQL at $LAURELS_BENCH_DATABASE_URL and the Redis at
$LAURELS_BENCH_REDIS_URL (both on the loopback interface), creates its own
databases and Redis key prefixes, starts `laurels serve` (twice: once with the
fast path switched off) and a bare ASGI app on free ports of 127.0.0.1, drives
HTTP load with wrk, prints a table, writes bench/results.json, and removes
everything it created. See bench/README.md and docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import redis
from psycopg import sql

from bench import leagues, phases
from bench.phases import Figure, Setup
from bench.support import (
    DEFAULT_DATABASE_URL,
    DEFAULT_REDIS_URL,
    BenchError,
    Service,
    dump_json,
    log,
    loopback_only,
    start_bare,
    start_service,
)
from tests.helpers import stop_process, with_database

RESULTS = Path(__file__).resolve().with_name("results.json")
LEAGUE_RESULTS = RESULTS.with_name("results-leagues.json")  # results.json keeps the scale curve


@dataclass(frozen=True)
class Plan:
    mode: str
    sizes: list[int]  # learners on the board; completions = 5 per learner
    ingest: int  # completions posted through the batch endpoint, per size
    read_seconds: float  # each wrk run
    viewers: int  # live viewers refetching on a hint
    idle_viewers: int  # held streams for the memory figure
    latency_samples: int  # single completions timed per apply path
    budget_seconds: float
    league_learners: int = 0  # the joins line: first completions of as many learners
    league_members: int = 0  # the decision line: members of one week
    explain: bool = False  # print the decision's EXPLAIN (ANALYZE, BUFFERS)
    league_analyze: bool = True  # ANALYZE before each timed run of the joins line


PLANS = {
    "quick": Plan("quick", [5_000], 20_000, 3, 500, 500, 50, 300),
    "default": Plan("default", [50_000], 50_000, 5, 1_000, 1_000, 100, 900),
    "full": Plan("full", [10_000, 100_000, 1_000_000], 100_000, 5, 5_000, 3_000, 200, 3600),
    "leagues": Plan("leagues", [], 0, 0, 0, 0, 0, 3600, league_learners=100_000,
                    league_members=100_000),
}


async def measure(plan: Plan, setups: list[Setup], projector_only: Service, prefix: str,
                  prefix2: str, once: list[Figure], periods: tuple[Service, Service]) -> None:
    first = setups[0]
    log(f"memory: {plan.idle_viewers:,} idle event streams on laurels, then on the bare app "
        "(first, on a fresh process)")
    await phases.idle_memory(first, plan.idle_viewers)
    once += first.figures
    first.figures.clear()
    for s in setups:
        log(f"{s.learners:,} learners, {s.completions:,} completions in {s.season}: loading")
        await phases.load_season(s)
        log("rebuild of the season, then COPY + ZINCRBY")
        await phases.rebuild(s)
        await phases.memory(s, prefix)
        await phases.sql_rank(s)
        best = await asyncio.to_thread(phases.reads, s, plan.read_seconds)
        await phases.groups(s, best["top"], plan.read_seconds)
        log(f"ingest: {plan.ingest:,} completions, raw and through the API; single POSTs")
        await phases.ingest(s, plan.ingest)
        log("ingest without groups, with every learner in 3 groups, without again; "
            "the materialized alternative")
        await phases.group_writes(s, plan.ingest)
        log(f"{plan.viewers:,} live viewers refetching on a hint")
        await phases.viewers(s, plan.viewers)
    last = setups[-1]
    log(f"ingest with four periods against one: {plan.ingest:,} completions each")
    await phases.periods(last, plan.ingest, *periods, f"{prefix}p4")
    log("sent to applied: with the fast path, and the projector alone")
    await phases.apply_latency(last, projector_only, prefix, prefix2, plan.latency_samples)
    once += last.figures[-2:]
    del last.figures[-2:]


def report(plan: Plan, setups: list[Setup], once: list[Figure], seconds: float) -> None:
    print()
    print(f"laurels bench, {plan.mode} mode, {os.cpu_count()} CPUs, {seconds:.0f} s; "
          "ratio = value / baseline (for throughput above 1 is better; for time, memory "
          "and latency below 1 is)")
    for title, figures in [*((f"{s.learners:,} learners, {s.completions:,} completions",
                              s.figures) for s in setups),
                           ("leagues" if plan.mode == "leagues" else "once", once)]:
        phases.print_table(title, figures)


def results(plan: Plan, setups: list[Setup], once: list[Figure], seconds: float) -> Any:
    return {"mode": plan.mode, "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "cpus": os.cpu_count(), "seconds": round(seconds),
            "sizes": [{"learners": s.learners, "completions": s.completions, "season": s.season,
                       "figures": [f.row() for f in s.figures]} for s in setups],
            "once": [f.row() for f in once]}


def cleanup_redis(redis_url: str, prefix: str) -> int:
    removed = 0
    r = redis.Redis.from_url(redis_url, socket_timeout=10)
    try:
        for key in r.scan_iter(match=f"{prefix}*", count=1000):
            removed += int(r.unlink(key))
    finally:
        r.close()
    return removed


def parse_plan(argv: list[str] | None) -> Plan:
    parser = argparse.ArgumentParser(description="laurels benchmark (ratios against "
                                     "baselines measured in the same run)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="one small board, about 1 minute")
    group.add_argument("--full", action="store_true",
                       help="the scale curve: 10,000, 100,000 and 1,000,000 learners")
    group.add_argument("--leagues", action="store_true",
                       help="the league lines alone: joins while ingesting, placement and "
                            "the decision (bench/leagues.py; writes bench/results-leagues.json)")
    parser.add_argument("--learners", type=int, metavar="N",
                        help="one board of N learners instead of the mode's sizes "
                             "(e.g. 100000 for the 100,000-member group line)")
    parser.add_argument("--league-learners", type=int, metavar="N",
                        help="--leagues: first completions of N learners, ingested with leagues "
                             "off and on (default 100000; 0 skips the line)")
    parser.add_argument("--league-members", type=int, metavar="M",
                        help="--leagues: the decision of a week of M members (default 100000; "
                             "0 skips the line)")
    parser.add_argument("--explain", action="store_true",
                        help="--leagues: print EXPLAIN (ANALYZE, BUFFERS) of the decision "
                             "(rolled back before the timed one)")
    parser.add_argument("--no-analyze", action="store_true",
                        help="--leagues: leave the statistics of the joins line to autovacuum "
                             "(a deployment's first league week) instead of ANALYZE before "
                             "each timed run")
    args = parser.parse_args(argv)
    mode = ("quick" if args.quick else "full" if args.full else "leagues" if args.leagues
            else "default")
    plan = PLANS[mode]
    if args.learners:
        plan = dataclasses.replace(plan, sizes=[args.learners])
    if mode == "leagues":
        plan = dataclasses.replace(
            plan, explain=args.explain, league_analyze=not args.no_analyze,
            league_learners=plan.league_learners if args.league_learners is None
            else args.league_learners,
            league_members=plan.league_members if args.league_members is None
            else args.league_members)
    elif (args.league_learners is not None or args.league_members is not None or args.explain
          or args.no_analyze):
        parser.error("--league-learners, --league-members, --explain and --no-analyze go "
                     "with --leagues")
    return plan


def create_databases(admin_url: str, names: list[str], created: list[str]) -> None:
    """Create each database, noting it in `created` (for the cleanup) at once."""
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        for name in names:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            created.append(name)


def cleanup(admin_url: str, redis_url: str, prefix: str, procs: list[Any],
            created: list[str], workdir: Path) -> None:
    """Stop the servers, drop the databases, unlink the keys under `prefix`
    (the projector-only service's prefix starts with it too), remove the
    work dir; whatever failed before."""
    for proc in procs:
        stop_process(proc)
    for name in created:
        try:
            with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                             .format(sql.Identifier(name)))
        except psycopg.Error as exc:
            log(f"WARNING: could not drop database {name}: {exc}")
    try:
        log(f"{cleanup_redis(redis_url, prefix)} Redis keys under {prefix}* unlinked")
    except redis.RedisError as exc:
        log(f"WARNING: could not remove Redis keys {prefix}*: {exc}")
    shutil.rmtree(workdir, ignore_errors=True)


def start_period_services(admin_url: str, redis_url: str, dbname: str, prefix: str,
                          workdir: Path, procs: list[Any]) -> tuple[Service, Service]:
    """Two fresh services of their own for the periods line: the week alone,
    and all four periods."""
    one = start_service(with_database(admin_url, f"{dbname}_p1"), redis_url, f"{prefix}p1",
                        workdir, name="week-only")
    procs.append(one.proc)
    four = start_service(with_database(admin_url, f"{dbname}_p4"), redis_url, f"{prefix}p4",
                         workdir, name="four-periods", LAURELS_PERIODS="week,day,month,all")
    procs.append(four.proc)
    return one, four


async def measure_leagues(plan: Plan, run: leagues.LeagueRun) -> None:
    if plan.league_learners:
        log(f"joins: {plan.league_learners:,} first completions with leagues off and on")
        await leagues.joins(run, plan.league_learners)
    if plan.league_members:
        plan_text = await leagues.decision(run, plan.league_members, plan.explain)
        if plan_text:
            print(plan_text, flush=True)


def start_services(plan: Plan, admin_url: str, redis_url: str, run_id: str, workdir: Path,
                   procs: list[Any], created: list[str]) -> tuple[list[Setup], Service]:
    """The bench's databases and servers: the main service, the one without
    a fast path, the two of the periods line and the bare app."""
    dbname, dbname2 = f"bench_{run_id}", f"bench_{run_id}_np"
    prefix, prefix2 = f"bench{run_id}", f"bench{run_id}np"
    create_databases(admin_url, [dbname, dbname2, f"{dbname}_p1", f"{dbname}_p4"], created)
    database_url = with_database(admin_url, dbname)
    svc = start_service(database_url, redis_url, prefix, workdir)
    procs.append(svc.proc)
    projector_only = start_service(with_database(admin_url, dbname2), redis_url, prefix2,
                                   workdir, name="projector-only",
                                   LAURELS_FAILPOINTS="skip:fast_path")
    procs.append(projector_only.proc)
    bare, bare_url = start_bare(workdir, database_url)
    procs.append(bare)
    setups = [Setup(admin_url, database_url, redis_url, svc, bare_url, bare.pid, n, 5 * n,
                    f"2026-W{40 + k}", run_id) for k, n in enumerate(plan.sizes)]
    return setups, projector_only


def main(argv: list[str] | None = None) -> int:
    plan = parse_plan(argv)
    admin_url = os.environ.get("LAURELS_BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    redis_url = os.environ.get("LAURELS_BENCH_REDIS_URL", DEFAULT_REDIS_URL)
    run_id = secrets.token_hex(4)
    dbname, dbname2 = f"bench_{run_id}", f"bench_{run_id}_np"
    prefix, prefix2 = f"bench{run_id}", f"bench{run_id}np"  # safe in a SCAN pattern

    def on_term(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt  # unwind through the cleanup like Ctrl-C

    signal.signal(signal.SIGTERM, on_term)
    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="laurels-bench-"))
    procs: list[Any] = []
    created: list[str] = []
    setups: list[Setup] = []
    once: list[Figure] = []
    ok = False
    try:
        loopback_only(admin_url, "LAURELS_BENCH_DATABASE_URL")
        loopback_only(redis_url, "LAURELS_BENCH_REDIS_URL")
        if plan.mode == "leagues":
            log(f"leagues mode; databases laurels_bench_leagues_{run_id}_*; Redis prefixes "
                f"{prefix}*")
            run = leagues.LeagueRun(admin_url, redis_url, run_id, workdir, procs, created,
                                    create_databases, once, plan.league_analyze)
            asyncio.run(asyncio.wait_for(measure_leagues(plan, run), plan.budget_seconds))
        else:
            log(f"{plan.mode} mode; databases {dbname}, {dbname2}; Redis prefixes {prefix}*")
            setups, projector_only = start_services(plan, admin_url, redis_url, run_id, workdir,
                                                    procs, created)
            one, four = start_period_services(admin_url, redis_url, dbname, prefix, workdir,
                                              procs)
            asyncio.run(asyncio.wait_for(
                measure(plan, setups, projector_only, prefix, prefix2, once, (one, four)),
                plan.budget_seconds))
        ok = True
    except TimeoutError:
        log(f"ERROR: measuring took longer than its budget of {plan.budget_seconds:.0f} s")
    except BenchError as exc:
        log(f"ERROR: {exc}")
    except (psycopg.Error, redis.RedisError, httpx.HTTPError, OSError, ValueError) as exc:
        log(f"ERROR: {type(exc).__name__}: {exc}")
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the cleanup finish
        cleanup(admin_url, redis_url, prefix, procs, created, workdir)
    if not ok:
        return 1
    seconds = time.perf_counter() - started
    report(plan, setups, once, seconds)
    path = LEAGUE_RESULTS if plan.mode == "leagues" else RESULTS
    dump_json(path, results(plan, setups, once, seconds))
    log(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
