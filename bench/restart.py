"""What a Redis restart costs (issue 40): a week of N completions on every
period's boards (the week, its days, its months, all time: 10 boards),
Redis restarted from a snapshot a few hundred completions old, then the
repair of every board timed two ways in the same run, on the same state:
- catching the boards up (today's epoch watch, projection/catchup.py: only the gap is
  applied again), until every board is served;
- rebuilding them (what every restart cost before: each board from
  PostgreSQL);
and the baseline both read from: `COPY` of the season's completions out of
PostgreSQL. A private redis-server (the machine's) in a temp dir.

    .venv/bin/python -m bench.restart                      # 1,000,000 completions
    .venv/bin/python -m bench.restart --completions 100000 --gap 200
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import shutil
import subprocess
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import redis

from bench.support import ROOT, BenchError, dump_json, log, loopback_only
from laurels.core.errors import StoreUnavailable
from laurels.core.seasons import Season, parse_season
from laurels.core.spans import seasons_of
from laurels.db import migrate
from laurels.process.settings import Secrets, Settings
from laurels.runtime import Runtime
from tests.helpers import free_port

SEASON = "2026-W49"
NOW = datetime(2026, 12, 3, 12, tzinfo=UTC)
LEARNERS = 200_000
SPAN_SECONDS = 500_000  # the completions' spread from the week's start (5.8 days)

# The calendar periods (its ten boards, as documented; windows are bench/windows.py's).
CALENDAR = ("week", "day", "month", "all")


def boards() -> list[Season]:
    """Every board the week's completions count on, the week first."""
    start = parse_season(SEASON, zone="UTC").starts_at
    found: list[Season] = []
    for hours in range(0, SPAN_SECONDS // 3600 + 1):
        for season in seasons_of(start + timedelta(hours=hours), CALENDAR, zone="UTC"):
            if season not in found:
                found.append(season)
    return found


def redis_server(folder: Path, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--dir", str(folder), "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 20
    while True:
        try:
            redis.Redis.from_url(url, socket_connect_timeout=1).ping()
            return proc
        except redis.RedisError:
            if time.monotonic() > deadline:
                raise BenchError("redis-server did not start") from None
            time.sleep(0.05)


async def fill(url: str, completions: int) -> None:
    """The season's completions, written straight into PostgreSQL (the
    bench measures the repair, not the ingest)."""
    start = parse_season(SEASON, zone="UTC").starts_at
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("INSERT INTO seasons (season) SELECT unnest(%s::text[])"
                           " ON CONFLICT DO NOTHING", ([b.name for b in boards()],))
        await conn.execute(
            "WITH c AS (INSERT INTO completions (completion_id, user_id, points, completed_at,"
            " received_at, season) SELECT 'r' || g, 1 + g %% %s, 1 + g %% 7,"
            " %s::timestamptz + make_interval(secs => g %% %s), now(), %s"
            " FROM generate_series(1, %s) g RETURNING completion_id, seq, completed_at)"
            " INSERT INTO completion_ids (completion_id, seq, completed_at)"
            " SELECT completion_id, seq, completed_at FROM c",
            (LEARNERS, start, SPAN_SECONDS, SEASON, completions))
        await conn.execute("ANALYZE completions")


async def copy_out(url: str) -> float:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        started = time.perf_counter()
        async with conn.cursor().copy(
                "COPY (SELECT seq, user_id, points, completed_at FROM completions"
                " WHERE season = %s) TO STDOUT", (SEASON,)) as copy:
            async for _ in copy:
                pass
        return time.perf_counter() - started


async def reconnect(rt: Runtime) -> None:
    for _ in range(500):
        try:
            await rt.board.ping()
            return
        except (redis.ConnectionError, StoreUnavailable):  # (the board wraps the first)
            continue
    raise BenchError("the client did not reconnect")


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    admin = args.database_url
    name = f"bench_{secrets.token_hex(4)}"
    async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
        await conn.execute(f"CREATE DATABASE {name}")
    url = admin.rsplit("/", 1)[0] + f"/{name}"
    folder = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    port = free_port()
    proc = redis_server(folder, port)
    redis_url = f"redis://127.0.0.1:{port}/0"
    try:
        await migrate(url)
        log(f"writing {args.completions:,} completions of {LEARNERS:,} learners")
        await fill(url, args.completions)
        settings = Settings(database_url=url, redis_url=redis_url, data_dir=folder / "data",
                            key_prefix="bench", close_seasons=False, periods=CALENDAR)
        rt = Runtime(settings, Secrets("i" * 32, "a" * 32, "s" * 32), url, redis_url)
        await rt.open(run_migrations=False)
        svc = rt.derive(clock=lambda: NOW)
        started = time.perf_counter()
        for board in boards():
            await svc.rebuilder.run(board)
        first = time.perf_counter() - started
        await svc.epoch.check()
        redis.Redis.from_url(redis_url).save()  # the snapshot Redis comes back from
        at = parse_season(SEASON, zone="UTC").starts_at + timedelta(days=2)
        gap = [{"completion_id": f"gap{i}", "user_id": 1 + i * 7 % LEARNERS, "points": 3,
                "completed_at": (at + timedelta(seconds=i)).isoformat()}
               for i in range(args.gap)]
        for i in range(0, len(gap), 1000):
            await svc.ingestor.record(gap[i:i + 1000])
        proc.kill()
        proc.wait()
        proc = redis_server(folder, port)  # back from the snapshot: the gap is lost
        await reconnect(rt)
        started = time.perf_counter()
        assert await svc.epoch.check()
        caught_up = time.perf_counter() - started
        for board in boards():
            if not (await svc.verifier.verify(board)).consistent:
                raise BenchError(f"the caught-up board {board} is not consistent")
        started = time.perf_counter()
        for board in boards():  # what a restart cost before
            await svc.rebuilder.run(board)
        rebuilt = time.perf_counter() - started
        copied = await copy_out(url)
        await rt.close()
    finally:
        proc.kill()
        shutil.rmtree(folder, ignore_errors=True)
        async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
            await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    return {"completions": args.completions, "gap": args.gap, "boards": len(boards()),
            "first_build_s": first,
            "catch_up_s": caught_up, "rebuild_s": rebuilt, "copy_out_s": copied,
            "catch_up_over_rebuild": caught_up / rebuilt,
            "catch_up_over_copy_out": caught_up / copied,
            "rebuild_over_copy_out": rebuilt / copied}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--completions", type=int, default=1_000_000)
    parser.add_argument("--gap", type=int, default=500, help="completions the snapshot lacks")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    loopback_only(args.database_url, "--database-url")
    if shutil.which("redis-server") is None:
        raise BenchError("needs redis-server (Debian: apt install redis-server)")
    result = asyncio.run(measure(args))
    log(f"restart after a snapshot {args.gap} completions old, {args.completions:,} on the "
        f"board: caught up in {result['catch_up_s']:.2f} s, rebuilt in "
        f"{result['rebuild_s']:.2f} s: {result['catch_up_over_rebuild']:.3f} of a rebuild "
        f"({result['catch_up_over_copy_out']:.2f} of COPY-out; a rebuild "
        f"{result['rebuild_over_copy_out']:.2f})")
    dump_json(ROOT / "bench" / "results-restart.json", result)


if __name__ == "__main__":
    main()
