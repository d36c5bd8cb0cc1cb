"""Defining a kind over completions already kept (issue 42): a week of N
completions, each tagged with one course of `--boards`; then, timed in the
same run on the same state:
- the whole board's week rebuilt from PostgreSQL (the baseline: what one
  board of those N completions costs);
- the kind `course` defined (weekly and all time) and every one of its
  open seasons made readable the way the service does on first read (the
  healer: `HEALS_AT_ONCE` rebuilds side by side), until every board is
  there.
The issue asks the second within 2 times the first. A private
redis-server (the machine's) in a temp dir; a scratch database.

    .venv/bin/python -m bench.define                         # 1,000,000 completions, 100 courses
    .venv/bin/python -m bench.define --completions 100000 --boards 20
"""

from __future__ import annotations

import argparse
import asyncio
import random
import secrets
import shutil
import tempfile
import time
from pathlib import Path

import psycopg

from bench.restart import NOW, SEASON, SPAN_SECONDS, redis_server
from bench.support import BenchError, cpu_by_process, cpu_since, log, loopback_only
from laurels.api.server import tune_collector
from laurels.core.seasons import parse_season
from laurels.db import migrate
from laurels.process.settings import Secrets, Settings
from laurels.runtime import Runtime
from tests.helpers import free_port

LEARNERS = 200_000


async def fill(url: str, completions: int, boards: int) -> None:
    """The week's completions, tagged, written straight into PostgreSQL."""
    start = parse_season(SEASON, zone="UTC").starts_at
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("INSERT INTO seasons (season) VALUES (%s) ON CONFLICT DO NOTHING",
                           (SEASON,))
        await conn.execute(
            "WITH c AS (INSERT INTO completions (completion_id, user_id, points, completed_at,"
            " received_at, season, tags) SELECT 'r' || g, 1 + g %% %s, 1 + g %% 7,"
            " %s::timestamptz + make_interval(secs => g %% %s), now(), %s,"
            " ARRAY['course:c' || (g::bigint * 7919 %% %s)]"
            " FROM generate_series(1, %s) g RETURNING completion_id, seq, completed_at)"
            " INSERT INTO completion_ids (completion_id, seq, completed_at)"
            " SELECT completion_id, seq, completed_at FROM c",
            (LEARNERS, start, SPAN_SECONDS, SEASON, boards, completions))
        await conn.execute("ANALYZE completions")


def log_cpu(what: str, before: dict[tuple[str, int], float]) -> None:
    log(f"CPU of {what}: " + ", ".join(
        f"{key} {used:.1f} s" for key, used in cpu_since(before).items()))


async def measure(args: argparse.Namespace) -> None:
    admin = args.database_url
    name = f"bench_define_{secrets.token_hex(4)}"
    async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
        await conn.execute(f"CREATE DATABASE {name}")
    url = admin.rsplit("/", 1)[0] + f"/{name}"
    folder = Path(tempfile.mkdtemp(prefix="bench-define-"))
    port = free_port()
    proc = redis_server(folder, port)
    redis_url = f"redis://127.0.0.1:{port}/0"
    try:
        await migrate(url)
        log(f"writing {args.completions:,} completions of {LEARNERS:,} learners, each tagged "
            f"with one of {args.boards:,} courses")
        await fill(url, args.completions, args.boards)
        settings = Settings(database_url=url, redis_url=redis_url, data_dir=folder / "data",
                            key_prefix="bench", close_seasons=False, periods=("week",))
        rt = Runtime(settings, Secrets("i" * 32, "a" * 32, "s" * 32), url, redis_url)
        await rt.open(run_migrations=False)
        try:
            svc = rt.derive(clock=lambda: NOW)
            started, cpu0 = time.perf_counter(), cpu_by_process()
            await svc.rebuilder.run(parse_season(SEASON, zone="UTC"))
            whole = time.perf_counter() - started
            log_cpu("the whole board's rebuild", cpu0)
            periods = args.periods.split(",")
            await svc.board_kinds.define("course", {"periods": periods})
            week, ever = parse_season(SEASON, zone="UTC"), parse_season("all", zone="UTC")
            seasons = {s.on(f"course:c{b}", "points") for b in range(args.boards)
                       for s in (week, ever) if s.period in periods}
            started, cpu0 = time.perf_counter(), cpu_by_process()
            if not await svc.healer.heal(seasons, 3600):
                raise BenchError("not every board was built")
            kind = time.perf_counter() - started
            log_cpu("the kind's boards built", cpu0)
            for season in random.Random(1).sample(sorted(seasons), 10):
                if not (await svc.verifier.verify(season)).consistent:
                    raise BenchError(f"{season} is not consistent")
        finally:
            await rt.close()
    finally:
        proc.kill()
        shutil.rmtree(folder, ignore_errors=True)
        async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
            await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    log(f"the whole board's week of {args.completions:,} completions rebuilt in {whole:.1f} s; "
        f"the kind defined over them: its {len(seasons):,} open seasons readable after "
        f"{kind:.1f} s: {kind / whole:.2f} of the whole board's rebuild (issue 42: <= 2)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--completions", type=int, default=1_000_000)
    parser.add_argument("--boards", type=int, default=100)
    parser.add_argument("--periods", default="week,all",
                        help="the kind's periods: week,all (twice the whole board's "
                             "completion entries) or week")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    loopback_only(args.database_url, "--database-url")
    if shutil.which("redis-server") is None:
        raise BenchError("needs redis-server (Debian: apt install redis-server)")
    tune_collector()  # as a serving process, whose healer builds the boards
    asyncio.run(measure(args))


if __name__ == "__main__":
    main()
