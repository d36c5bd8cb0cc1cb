"""The challenges' lines (issue 67), each against a baseline measured in the
same run, on the machine's PostgreSQL and Redis (LAURELS_BENCH_DATABASE_URL,
LAURELS_BENCH_REDIS_URL; loopback only):

- **The decision** of a challenge of N participants (default 200,000; 3
  completions each in its window): `Decider.decide` (frozen results with
  rewards, a `challenge_result` notification each, the `challenge.decided`
  event) against the plain SQL a user would write: the window's sums ranked
  by `rank()` (no write).
- **The live board** of that challenge while it runs: its top 100 and a
  learner's neighbourhood, read as the API reads them, against the same plain
  `rank()` query.
- **Idle challenges**: 1,000 defined and running, none with a completion:
  what a tick of the `challenges` loop costs (statements and time) against a
  tick with none, and the Redis bytes they use (a challenge keeps nothing in
  Redis).
- **A tagged completion counting on a challenge**: batch ingest of tagged
  completions with a challenge on their tag against none, alternating rounds.

    .venv/bin/python bench/challenges.py                  # 200,000 participants
    .venv/bin/python bench/challenges.py --participants 20000
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import loopback_only
from laurels.db import migrate
from laurels.process.settings import Secrets, Settings
from laurels.runtime import Runtime
from tests.helpers import with_database

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_URL = "redis://127.0.0.1:6379/0"
START = datetime(2026, 11, 2, tzinfo=UTC)  # the challenge's window: two weeks
END = START + timedelta(days=14)
BASELINE = """
SELECT user_id, score, rank() OVER (ORDER BY score DESC) AS rank FROM (
    SELECT user_id, sum(points) AS score FROM completions
    WHERE completed_at >= %(s)s AND completed_at < %(e)s AND voided_at IS NULL
    GROUP BY user_id) t ORDER BY rank, user_id LIMIT %(n)s"""


def runtime(url: str, redis_url: str, prefix: str, now: datetime) -> Runtime:
    token = secrets.token_urlsafe(32)
    settings = Settings(database_url=url, redis_url=redis_url, key_prefix=prefix,
                        data_dir=Path("/tmp") / f"bench-{prefix}", ingest_token=token,
                        admin_token=token + "a", user_token_secret=token + token,
                        close_seasons=False, webhook_url=None)
    rt = Runtime(settings, Secrets(token, token + "a", token + token), url, redis_url)
    for svc in (rt.challenges, rt.decider):
        svc.clock = lambda: now  # type: ignore[method-assign]
    return rt


async def load(url: str, participants: int) -> None:
    """N learners, 3 completions each inside the window (the rows a
    recording writes to `completions` and `users`), in SQL."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("""
            INSERT INTO users (user_id, display_name)
            SELECT u, 'Learner ' || u FROM generate_series(1, %(n)s) u""", {"n": participants})
        await conn.execute("""
            INSERT INTO completions (completion_id, user_id, points, completed_at, received_at,
                                     season, tags)
            SELECT 'c' || u || '-' || k, u, 1 + (u * 7 + k * 13) %% 50,
                   %(s)s + make_interval(secs => (u * 3 + k * 100003) %% 1209600),
                   now(), '2026-W45', ARRAY['course:sql']
            FROM generate_series(1, %(n)s) u, generate_series(1, 3) k""",
                           {"n": participants, "s": START})
        await conn.execute("ANALYZE")


async def timed(work: Any, rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        await work()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


async def decision(url: str, redis_url: str, run: str, participants: int) -> None:
    await load(url, participants)
    rt = runtime(url, redis_url, f"bench{run}d", START + timedelta(days=1))
    await rt.open(run_migrations=False)
    try:
        rewards = [{"from": 1, "to": 1, "reward": "gold"}, {"from": 2, "to": 10,
                                                          "reward": "silver"},
                   {"from": 11, "to": 100, "reward": "bronze"}]
        await rt.challenges.define("big", {"title": "Big", "board": "course:sql",
                                           "starts_at": START.isoformat(),
                                           "ends_at": END.isoformat(), "rewards": rewards})
        params = {"s": START, "e": END, "n": 100}
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            async def plain() -> None:
                await (await conn.execute(BASELINE, params)).fetchall()
            base = await timed(plain)
        t = time.perf_counter()
        await rt.challenge_standings.board("big", 100, None)
        cold = time.perf_counter() - t
        top = await timed(lambda: rt.challenge_standings.board("big", 100, None))
        around = await timed(lambda: rt.challenge_standings.around("big", participants // 2, 5))
        print(f"live board of {participants:,}: read whole {cold * 1000:.0f} ms (ratio "
              f"{cold / base:.2f} to plain SQL rank()'s top 100, {base * 1000:.0f} ms); then, "
              f"while kept, top 100 {top * 1000:.2f} ms and a neighbourhood "
              f"{around * 1000:.2f} ms")
        for svc in (rt.challenges, rt.decider):
            svc.clock = lambda: END + timedelta(seconds=1)  # type: ignore[method-assign]
        t = time.perf_counter()
        assert await rt.decider.decide("big")
        took = time.perf_counter() - t
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            notes = (await (await conn.execute(
                "SELECT count(*) FROM notifications WHERE kind = 'challenge_result'"
            )).fetchone() or [0])[0]
        print(f"decision of {participants:,} participants: {took:.1f} s, {notes:,} "
              f"challenge_result notifications; plain SQL rank() of all {base * 1000:.0f} ms "
              f"for its top 100 (ratio {took / base:.1f})")
        decided = await timed(lambda: rt.challenge_standings.board("big", 100, None))
        print(f"decided board top 100: {decided * 1000:.1f} ms")
    finally:
        await rt.close()


async def idle(url: str, redis_url: str, run: str) -> None:
    now = START + timedelta(days=1)
    rt = runtime(url, redis_url, f"bench{run}i", now)
    await rt.open(run_migrations=False)
    names: list[str] = []
    rt.db.observer = lambda name, _conn: names.append(name)  # every statement the tick runs
    try:
        async def ticks() -> tuple[float, float]:
            await rt.decider.tick()  # the first sees the high-water mark
            names.clear()
            t = time.perf_counter()
            for _ in range(100):
                await rt.decider.tick()
            return (time.perf_counter() - t) / 100, len(names) / 100

        none_s, none_q = await ticks()
        info = await rt.redis.info("memory")
        before = int(info["used_memory"])
        for i in range(1000):
            await rt.challenges.define(f"idle-{i:04d}", {
                "title": f"Idle {i}", "board": f"course:idle-{i}",
                "starts_at": START.isoformat(), "ends_at": END.isoformat(),
                "join": "required" if i % 2 else "open", "notify": i % 3 == 0})
        keys = [k async for k in rt.redis.scan_iter(match=f"{rt.keys.prefix}:*")]
        after = int((await rt.redis.info("memory"))["used_memory"])
        some_s, some_q = await ticks()
        ran = ", ".join(sorted(set(names)))
        print(f"1,000 idle challenges: a loop tick {some_s * 1000:.2f} ms and {some_q:.1f} "
              f"statements ({ran}), against {none_s * 1000:.2f} ms and {none_q:.1f} with "
              f"none (ratio {some_s / none_s:.2f}); Redis keys of the deployment {len(keys)}, "
              f"used_memory {after - before:+,} bytes over the definitions (noise of a "
              "shared server)")
    finally:
        await rt.close()


async def tagged(url: str, redis_url: str, run: str, rounds: int = 6, batch: int = 500) -> None:
    now = datetime.now(UTC)
    rt = runtime(url, redis_url, f"bench{run}t", now)
    await rt.open(run_migrations=False)
    n = 0
    try:
        async def one_round() -> float:
            nonlocal n
            items = []
            for _ in range(batch):
                n += 1
                items.append({"completion_id": f"t{n}", "user_id": 1 + n % 5000, "points": 3,
                              "completed_at": (now - timedelta(hours=1)).isoformat(),
                              "tags": ["course:bench"]})
            t = time.perf_counter()
            await rt.ingestor.record(items)
            return time.perf_counter() - t

        sides: dict[bool, list[float]] = {False: [], True: []}
        for r in range(rounds * 2):
            on = r % 2 == 1
            if on:
                await rt.challenges.define("tagged", {
                    "title": "Tagged", "board": "course:bench",
                    "starts_at": (now - timedelta(days=1)).isoformat(),
                    "ends_at": (now + timedelta(days=1)).isoformat()})
            sides[on].append(await one_round())
            if on:
                await rt.challenges.delete("tagged")
        plain, with_ = statistics.median(sides[False]), statistics.median(sides[True])
        print(f"batch of {batch} tagged completions: {with_ * 1000:.0f} ms with a challenge on "
              f"their tag, {plain * 1000:.0f} ms without (ratio {with_ / plain:.2f})")
    finally:
        await rt.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--participants", type=int, default=200_000)
    args = parser.parse_args()
    import os
    admin = os.environ.get("LAURELS_BENCH_DATABASE_URL", ADMIN_URL)
    redis_url = os.environ.get("LAURELS_BENCH_REDIS_URL", REDIS_URL)
    loopback_only(admin, "LAURELS_BENCH_DATABASE_URL")
    loopback_only(redis_url, "LAURELS_BENCH_REDIS_URL")
    run = secrets.token_hex(4)
    names = [f"bench_ch_{run}_{s}" for s in ("d", "i", "t")]
    with psycopg.connect(admin, autocommit=True) as conn:
        for name in names:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        urls = [with_database(admin, name) for name in names]
        for url in urls:
            await migrate(url)
        await decision(urls[0], redis_url, run, args.participants)
        await idle(urls[1], redis_url, run)
        await tagged(urls[2], redis_url, run)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            for name in names:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(name)))
        import redis
        r = redis.Redis.from_url(redis_url)
        for key in r.scan_iter(match=f"bench{run}*"):
            r.unlink(key)


if __name__ == "__main__":
    asyncio.run(main())
