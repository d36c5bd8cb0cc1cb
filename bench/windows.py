"""A rolling window moved at midnight (CONTRACT.md, "Rolling windows";
lifecycle/windows.py): what the move of a 30-day window (`last-30d`) of N
learners costs, as a function of the day leaving it, each figure against a
baseline measured in the same run, on the machine's PostgreSQL and Redis
(LAURELS_BENCH_DATABASE_URL, LAURELS_BENCH_REDIS_URL; loopback only).

    .venv/bin/python bench/windows.py                       # 200,000 learners: about 75 s
    .venv/bin/python bench/windows.py --learners 1000000    # 1,000,000 learners: about 6 minutes
    .venv/bin/python bench/windows.py --learners 20000      # a quick run: about 20 s

1. **Load** (straight into PostgreSQL, in a scratch database
   `laurels_bench_windows_<id>` migrated by `laurels.db.migrate`; nothing
   here ingests, so no id records): N learners, `--per-learner` completions
   each (learner `1 + g * STEP % C % N` for completion g of C: every
   learner the same number, in days drawn at random, so some learners
   have all theirs in days that leave), spread over the 30 local days
   (UTC) the window holds at
   the fixed clock (2026-12-09 12:00): the first three days hold
   `--shares` (default 1%, 5% and 20%) of them, the other 27 days the rest
   evenly. Then the window's board is built by the service's own
   `Rebuilder.run` (the clock fixed: `Runtime.derive(clock=...)`), timed
   against COPY of the window's rows out of PostgreSQL plus a pipelined
   `ZINCRBY` per row (bench.run's rebuild baseline).
2. **Three midnights.** The clock moves to 00:00:01 of each of the next
   three days, and `Windows.tick` (what the `windows` loop runs every
   second) moves the window: the first, then the second, then the third
   day leaves it (1%, 5%, 20% of what it held). Each move is timed
   (advance, the completions taken out, the marks dropped), against the
   floor of the same work done by hand just before, on the same rows:
   COPY of the leaving day's rows out of PostgreSQL plus a pipelined
   `ZINCRBY` of each row's points taken off a scratch sorted set, 1,000 a
   round trip (no idempotency, no exactness). The time per completion
   leaving is compared across the three days: the same figure for a day
   of 1% and a day of 20% is a move in proportion to the day leaving, not
   to the window.
3. **Reads throughout.** A second process (as an API process beside the
   projector) reads the window's top 100 (`Reads.top`, the read behind
   `GET /v1/leaderboards/last-30d`) at `--read-rate` a second while each
   move runs, and for as long with nothing moving (the baseline): how many,
   their latency (p50, p99, max), and how many failed (any exception: the
   run fails if one did).
4. **Checks**: after each move the marker stands on the new first day with
   nothing left to take out, the board holds as many learners as
   PostgreSQL has with a completion from that day on, and the corrections
   hash of the window is as small as before the move; at the end `verify`
   of the window is consistent.
5. **An idle tick**: a `windows` loop tick with nothing to move (every
   second, in every projector process), with the bench's few seasons and
   then with `--idle-seasons` more rows in `seasons` (boards of kinds'
   weeks, as a deployment with many kinds holds), against the loop's
   interval.

Prints a table; `--json PATH` writes the figures there. Drops its database
and unlinks its keys at the end (also after an error or Ctrl-C).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import multiprocessing
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: bench/ and tests/ from the root
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
import redis.asyncio as aioredis  # noqa: E402

from bench.phases import Figure, print_table  # noqa: E402
from bench.support import (  # noqa: E402
    BenchError,
    dump_json,
    log,
    percentile,
    scratch_run,
)
from laurels.core.seasons import parse_season  # noqa: E402
from laurels.db import migrate  # noqa: E402
from laurels.process.settings import Secrets, Settings  # noqa: E402
from laurels.runtime import Runtime, Services  # noqa: E402

NOW = datetime(2026, 12, 9, 12, tzinfo=UTC)  # the clock: a Wednesday, noon (UTC)
WINDOW = parse_season("last-30d", zone="UTC")
DAYS = 30
FIRST_DAY = NOW.date() - timedelta(days=DAYS - 1)  # the window's first day at NOW
# Learner of completion g (of C): 1 + g * STEP % C % N. STEP is prime (and
# prime to C), so g * STEP % C deals C slots at random over the days, and
# each learner holds `per_learner` of them, in days drawn at random: some
# learners have every completion in days that leave, and leave the board.
STEP = 7919
ROUND_TRIP = 1_000  # ZINCRBYs a round trip (the baseline)
TOP = 100


@dataclass(frozen=True)
class Plan:
    learners: int
    per_learner: int
    shares: tuple[float, ...]  # of the window's completions, its first days (leaving in turn)
    read_rate: float
    idle_seconds: float
    idle_seasons: int
    verify: bool
    json: Path | None

    @property
    def completions(self) -> int:
        return self.learners * self.per_learner


@dataclass(frozen=True)
class Day:
    day: date
    first: int  # g of its first completion
    count: int

    @property
    def starts(self) -> datetime:
        return datetime(self.day.year, self.day.month, self.day.day, tzinfo=UTC)

    @property
    def ends(self) -> datetime:
        return self.starts + timedelta(days=1)


@dataclass
class Clock:
    now: datetime = NOW

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Reads:
    """A reading phase's answers, as the reader process counts them."""

    latencies: list[float] = field(default_factory=list)  # seconds
    failed: dict[str, int] = field(default_factory=dict)  # exception name -> how many
    short: int = 0  # answers without the page they should hold

    @property
    def count(self) -> int:
        return len(self.latencies)

    def ms(self, p: float) -> float:
        return percentile(self.latencies, p) * 1000

    @property
    def max_ms(self) -> float:
        return max(self.latencies, default=math.nan) * 1000

    def __str__(self) -> str:
        return (f"{self.count} reads, p50 {self.ms(50):.2f} ms, p99 {self.ms(99):.2f} ms, "
                f"max {self.max_ms:.1f} ms, {sum(self.failed.values())} failed"
                + (f" {self.failed}" if self.failed else "") + f", {self.short} short")


# -- the calendar and the load ----------------------------------------------------------


def calendar(plan: Plan) -> list[Day]:
    """The window's 30 days at NOW, oldest first: the first ones hold
    `shares` of its completions, the others the rest evenly."""
    total = plan.completions
    counts = [round(total * s) for s in plan.shares]
    rest_days = DAYS - len(counts)
    per, extra = divmod(total - sum(counts), rest_days)
    counts += [per + (1 if i < extra else 0) for i in range(rest_days)]
    days, g = [], 1
    for i, count in enumerate(counts):
        days.append(Day(FIRST_DAY + timedelta(days=i), g, count))
        g += count
    return days


COMPLETIONS = """
INSERT INTO completions (seq, completion_id, user_id, points, completed_at, received_at, season)
SELECT g, 'w' || g, 1 + g * %(step)s %% %(completions)s %% %(learners)s, 1 + g %% 10, at, at,
       to_char(at AT TIME ZONE 'UTC', 'IYYY"-W"IW')
FROM (SELECT g, %(start)s::timestamptz + (g - %(first)s) * %(gap)s::interval AS at
      FROM generate_series(%(first)s::bigint, %(last)s::bigint) g) t"""


async def load(url: str, plan: Plan, days: list[Day]) -> float:
    """Learners, the months' partitions, each day's completions; ANALYZE."""
    started = time.perf_counter()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("INSERT INTO users (user_id) SELECT g FROM generate_series(1, %s) g",
                           (plan.learners,))
        month = date(FIRST_DAY.year, FIRST_DAY.month, 1)
        while month <= NOW.date() + timedelta(days=len(plan.shares) + 1):
            await conn.execute("SELECT laurels_completions_partition_v1(%s)", (month,))
            month = date(month.year + month.month // 12, month.month % 12 + 1, 1)
        for n, day in enumerate(days):
            if not day.count:
                continue
            until = min(day.ends, NOW) if day.day == NOW.date() else day.ends
            await conn.execute(COMPLETIONS, {
                "step": STEP, "completions": plan.completions, "learners": plan.learners,
                "start": day.starts,
                "first": day.first, "last": day.first + day.count - 1,
                "gap": (until - day.starts) / day.count})
            if n % 10 == 9:
                done = day.first + day.count - 1
                log(f"  loaded {day.day}: {done:,} completions, "
                    f"{time.perf_counter() - started:.0f} s")
        await conn.execute("SELECT setval('completion_seq', %s)", (plan.completions + 1,))
        await conn.execute("ANALYZE")
    return time.perf_counter() - started


def runtime(url: str, redis_url: str, prefix: str) -> Runtime:
    token = "b" * 32  # (never served: no HTTP here)
    settings = Settings(database_url=url, redis_url=redis_url, key_prefix=prefix,
                        data_dir=Path(tempfile.gettempdir()) / f"laurels-bench-{prefix}",
                        ingest_token=token, admin_token=token + "a",
                        user_token_secret=token + token, periods=("week", "30d"),
                        close_seasons=False, webhook_url=None, write_rate_limit=0)
    return Runtime(settings, Secrets(token, token + "a", token + token), url, redis_url)


# -- the baselines --------------------------------------------------------------------


ROWS = ("COPY (SELECT seq, user_id, points, completed_at FROM completions "
        "WHERE completed_at >= %s AND completed_at < %s ORDER BY seq) TO STDOUT")


async def copy_and_zincrby(url: str, redis_url: str, key: str, since: datetime,
                           until: datetime) -> tuple[float, float, int]:
    """The floor of taking [since, until)'s completions out of a board: its
    rows COPYed out of PostgreSQL (what the move reads), each row's points
    taken off a scratch sorted set by a pipelined ZINCRBY (1,000 a round
    trip). (seconds of COPY alone, seconds of both, rows)."""
    r = aioredis.from_url(redis_url, socket_timeout=120)
    rows = 0
    async with await psycopg.AsyncConnection.connect(url) as conn:
        started = time.perf_counter()
        async with conn.cursor().copy(ROWS, (since, until)) as copy:
            async for _ in copy:
                pass
        copy_only = time.perf_counter() - started
        started = time.perf_counter()
        pipe, pending = r.pipeline(transaction=False), 0
        async with conn.cursor().copy(ROWS, (since, until)) as copy:
            async for row in copy.rows():
                pipe.zincrby(key, -int(row[2]), row[1])
                pending += 1
                rows += 1
                if pending == ROUND_TRIP:
                    await pipe.execute()
                    pending = 0
        if pending:
            await pipe.execute()
        both = time.perf_counter() - started
    await r.unlink(key)
    await r.aclose()
    return copy_only, both, rows


# -- the reader: a second process reading the top 100 ----------------------------------


def reader_main(conn: Connection, url: str, redis_url: str, prefix: str, rate: float) -> None:
    """The reader process: reads the window's top 100 at `rate` a second
    from "go" until "stop", then sends what it saw; "quit" ends it."""
    asyncio.run(_reader(conn, url, redis_url, prefix, rate))


async def _reader(conn: Connection, url: str, redis_url: str, prefix: str,
                  rate: float) -> None:
    rt = runtime(url, redis_url, prefix)
    await rt.open(run_migrations=False)
    svc = rt.derive(clock=lambda: NOW)
    try:
        for _ in range(50):  # connections made, scripts loaded
            await svc.reads.top(WINDOW, TOP)
        conn.send("ready")
        while (command := conn.recv()) == "go":
            seen = Reads()
            conn.send("reading")
            gap, due = 1 / rate, time.perf_counter()
            while not conn.poll():
                started = time.perf_counter()
                try:
                    body = await svc.reads.top(WINDOW, TOP)
                    if len(body["entries"]) != min(TOP, body["total"]) or not body["total"]:
                        seen.short += 1
                except Exception as exc:  # every failure is counted, by its name
                    seen.failed[type(exc).__name__] = seen.failed.get(type(exc).__name__,
                                                                      0) + 1
                seen.latencies.append(time.perf_counter() - started)
                due += gap
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
            conn.recv()  # "stop"
            conn.send({"latencies": seen.latencies, "failed": seen.failed,
                       "short": seen.short})
        assert command == "quit", command
    finally:
        await rt.close()


class Reader:
    def __init__(self, url: str, redis_url: str, prefix: str, rate: float) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=reader_main, args=(child, url, redis_url, prefix, rate),
                                daemon=True)
        self.proc.start()
        self._expect("ready", 120)

    def _expect(self, what: str, timeout: float) -> None:
        if not self.conn.poll(timeout):
            raise BenchError(f"the reader process did not answer {what!r}")
        got = self.conn.recv()
        if got != what:
            raise BenchError(f"the reader process answered {got!r}, not {what!r}")

    async def during(self, work: Callable[[], Awaitable[Any]]) -> tuple[Any, Reads]:
        """`work` awaited while the reader reads; its result and the reads."""
        self.conn.send("go")
        self._expect("reading", 30)
        await asyncio.sleep(0.05)  # a few reads before the work starts
        try:
            result = await work()
        finally:
            await asyncio.sleep(0.05)
            self.conn.send("stop")
        if not self.conn.poll(60):
            raise BenchError("the reader process sent no figures")
        return result, Reads(**self.conn.recv())

    def close(self) -> None:
        try:
            self.conn.send("quit")
        except OSError:
            pass
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(5)


# -- the move ------------------------------------------------------------------------


@dataclass
class Move:
    share: float
    leaving: int  # completions of the day leaving
    seconds: float
    steps: dict[str, float]  # leave (taken out), forget (marks dropped), the rest
    batches: int
    copy_seconds: float
    baseline_seconds: float  # COPY + ZINCRBY of the same rows
    reads: Reads

    @property
    def us_per_completion(self) -> float:
        return self.seconds / self.leaving * 1e6 if self.leaving else math.nan


def timed_steps(svc: Services) -> tuple[dict[str, float], Counter[str]]:
    """The move's steps timed in place (its `_leave`, `_forget` and `_apply`
    wrapped on this instance, once): seconds by step, and the batches taken
    out (`_apply` calls; more script calls when a `best` learner is read
    again), both counted from then on (the caller clears them)."""
    steps: dict[str, float] = {"leave": 0.0, "forget": 0.0}
    calls: Counter[str] = Counter()
    windows: Any = svc.windows

    def wrap(name: str, counted: bool = False) -> None:
        original = getattr(windows, f"_{name}")

        async def wrapped(*args: Any) -> Any:
            started = time.perf_counter()
            try:
                return await original(*args)
            finally:
                if counted:
                    calls[name] += 1
                else:
                    steps[name] += time.perf_counter() - started

        setattr(windows, f"_{name}", wrapped)

    wrap("leave")
    wrap("forget")
    wrap("apply", counted=True)
    return steps, calls


async def corrections_held(svc: Services, r: aioredis.Redis) -> int:
    """Fields of the window's corrections hash (its leaving marks)."""
    marker = await svc.board.window(WINDOW)
    key = svc.board.season_keys(WINDOW).version(marker.current).corrections
    return int(await r.hlen(key))


async def board_total(svc: Services) -> int:
    body = await svc.reads.top(WINDOW, 1)
    return int(body["total"])


async def learners_from(url: str, since: datetime) -> int:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        row = await (await conn.execute(
            "SELECT count(DISTINCT user_id) FROM completions WHERE completed_at >= %s",
            (since,))).fetchone()
        return int(row[0]) if row else 0


async def one_move(svc: Services, clock: Clock, reader: Reader, day: Day, share: float,
                   ctx: Context) -> Move:
    copy_s, base_s, rows = await copy_and_zincrby(ctx.url, ctx.redis_url,
                                                  f"{ctx.prefix}:baseline", day.starts,
                                                  day.ends)
    if rows != day.count:
        raise BenchError(f"{day.day}: COPY found {rows} rows, {day.count} were loaded")
    marks_before = await corrections_held(svc, ctx.r)
    clock.now = day.ends + timedelta(days=DAYS - 1, seconds=1)  # 00:00:01: `day` leaves
    steps, calls = ctx.steps
    steps.update(leave=0.0, forget=0.0)
    calls.clear()

    async def tick() -> float:
        started = time.perf_counter()
        await svc.windows.tick()
        return time.perf_counter() - started

    seconds, reads = await reader.during(tick)
    steps = {**steps, "rest": seconds - steps["leave"] - steps["forget"]}
    marker = await svc.board.window(WINDOW)
    first = (day.day + timedelta(days=1)).isoformat()
    if (marker.first, marker.done, marker.forgot) != (first, first, first):
        raise BenchError(f"after the move of {day.day} the marker is {marker}")
    held, expected = await board_total(svc), await learners_from(ctx.url, day.ends)
    if held != expected:
        raise BenchError(f"after the move of {day.day} the board holds {held} learners, "
                         f"PostgreSQL {expected}")
    marks = await corrections_held(svc, ctx.r)
    if marks > marks_before:
        raise BenchError(f"{marks} leaving marks held after the move ({marks_before} before)")
    if reads.failed:
        raise BenchError(f"reads failed during the move of {day.day}: {reads.failed}")
    move = Move(share, day.count, seconds, steps, calls["apply"], copy_s, base_s, reads)
    log(f"  {day.day} left ({share:.0%}: {day.count:,} completions): {seconds:.2f} s "
        f"({move.us_per_completion:.1f} us a completion; leave {steps['leave']:.2f} s in "
        f"{calls['apply']} batches, forget {steps['forget']:.2f} s); COPY {copy_s:.2f} s, "
        f"COPY + ZINCRBY {base_s:.2f} s; reads: {reads}")
    return move


# -- the idle tick -------------------------------------------------------------------


async def idle_tick(svc: Services, rounds: int = 50) -> float:
    await svc.windows.tick()
    started = time.perf_counter()
    for _ in range(rounds):
        await svc.windows.tick()
    return (time.perf_counter() - started) / rounds


async def add_seasons(url: str, count: int) -> None:
    """`count` more rows in `seasons`: the weeks of boards of a kind
    (1,000 courses' boards, 2026-W01 onwards), as a deployment with
    many kinds holds after a while."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("""
            INSERT INTO seasons (season)
            SELECT 'course:c' || (g %% 1000) || '/points/UTC/'
                   || to_char(date '2026-01-05' + (g / 1000) * 7, 'IYYY"-W"IW')
            FROM generate_series(0, %s - 1) g ON CONFLICT DO NOTHING""", (count,))
        await conn.execute("ANALYZE seasons")


# -- the run -------------------------------------------------------------------------


@dataclass
class Context:
    url: str
    redis_url: str
    prefix: str
    r: aioredis.Redis
    steps: tuple[dict[str, float], Counter[str]] = ({}, Counter())  # timed_steps'


async def measure(plan: Plan, ctx: Context, figures: list[Figure], out: dict[str, Any]) -> None:
    days = calendar(plan)
    log(f"loading {plan.completions:,} completions of {plan.learners:,} learners over "
        f"{days[0].day} .. {days[-1].day}; the first days hold "
        + ", ".join(f"{d.count:,}" for d in days[:len(plan.shares)]))
    await migrate(ctx.url)
    out["load_seconds"] = await load(ctx.url, plan, days)
    rt = runtime(ctx.url, ctx.redis_url, ctx.prefix)
    await rt.open(run_migrations=False)
    clock = Clock()
    svc = rt.derive(clock=clock)
    ctx.steps = timed_steps(svc)
    reader: Reader | None = None
    try:
        build = await built(plan, svc, ctx, days, figures, out)
        log(f"a reader process: the top {TOP} at {plan.read_rate:.0f} a second")
        reader = Reader(ctx.url, ctx.redis_url, ctx.prefix, plan.read_rate)
        _, idle = await reader.during(lambda: asyncio.sleep(plan.idle_seconds))
        log(f"  nothing moving, {plan.idle_seconds:.0f} s: {idle}")
        moves = [await one_move(svc, clock, reader, day, share, ctx)
                 for day, share in zip(days, plan.shares, strict=False)]
        moved(plan, moves, idle, build, figures, out)
        if plan.verify:
            log("verify of the window")
            started = time.perf_counter()
            verdict = await svc.verifier.verify(WINDOW)
            if not verdict.consistent:
                raise BenchError(f"verify of the window: {verdict.body()}")
            out["verify_seconds"] = time.perf_counter() - started
            log(f"  consistent ({out['verify_seconds']:.1f} s)")
        await idle_ticks(plan, svc, ctx, figures, out)
    finally:
        if reader is not None:
            reader.close()
        await rt.close()


async def built(plan: Plan, svc: Services, ctx: Context, days: list[Day],
                figures: list[Figure], out: dict[str, Any]) -> float:
    """The window's board built at NOW, against COPY + ZINCRBY of its rows:
    the rebuild's seconds."""
    log("the window's board built by Rebuilder.run, then COPY + ZINCRBY of its rows")
    started = time.perf_counter()
    result = await svc.rebuilder.run(WINDOW)
    build = time.perf_counter() - started
    copy_s, base_s, rows = await copy_and_zincrby(
        ctx.url, ctx.redis_url, f"{ctx.prefix}:baseline", days[0].starts, NOW)
    if rows != plan.completions:
        raise BenchError(f"the window holds {rows} rows, {plan.completions} were loaded")
    log(f"  built in {build:.1f} s ({result}); COPY {copy_s:.1f} s, "
        f"COPY + ZINCRBY {base_s:.1f} s")
    held = await board_total(svc)
    if held != plan.learners:
        raise BenchError(f"the built window holds {held} learners, not {plan.learners}")
    await svc.windows.tick()  # at NOW: nothing to move
    figures.append(Figure(
        "rebuild of the whole window (s)", build, base_s,
        "COPY the window's rows out + pipelined ZINCRBY per row", "s",
        higher_is_better=False,
        context=f"{plan.completions:,} completions, {plan.learners:,} learners; "
                f"COPY alone {copy_s:.1f} s; what a move never does"))
    out["rebuild"] = {"seconds": build, "copy_seconds": copy_s, "baseline_seconds": base_s}
    return build


def moved(plan: Plan, moves: list[Move], idle: Reads, build: float, figures: list[Figure],
          out: dict[str, Any]) -> None:
    """The moves' figures: each against its baseline, the last day's time a
    completion against the first's, the reads during them against idle."""
    moving = Reads([t for m in moves for t in m.reads.latencies],
                   dict(sum((Counter(m.reads.failed) for m in moves), Counter())),
                   sum(m.reads.short for m in moves))
    for m in moves:
        figures.append(Figure(
            f"move, a day of {m.share:.0%} leaving (s)", m.seconds, m.baseline_seconds,
            "COPY the day's rows out + pipelined ZINCRBY per row, just before", "s",
            higher_is_better=False,
            context=f"{m.leaving:,} completions, {m.us_per_completion:.1f} us each; "
                    f"taken out {m.steps['leave']:.2f} s in {m.batches} batches, "
                    f"marks dropped {m.steps['forget']:.2f} s; COPY alone "
                    f"{m.copy_seconds:.2f} s; {m.seconds / build:.3f} of the "
                    "window's rebuild"))
    first, last = moves[0], moves[-1]
    figures.append(Figure(
        f"move per completion leaving, {last.share:.0%} day (us)", last.us_per_completion,
        first.us_per_completion, f"the same, {first.share:.0%} day", "us",
        higher_is_better=False,
        context=f"{last.leaving / first.leaving:.0f} times the completions; "
                "1.0: in proportion to the day leaving"))
    # What one more completion leaving costs (the slope from the smallest
    # day to the largest), against what a completion of the window costs
    # its whole rebuild: above 1, a day holding more than 1/ratio of the
    # window's completions takes longer to leave than the window to rebuild.
    slope = (last.seconds - first.seconds) / (last.leaving - first.leaving) * 1e6
    rebuild_each = build / plan.completions * 1e6
    figures.append(Figure(
        "move, time a completion more leaving (us)", slope, rebuild_each,
        "the window's rebuild, time a completion it holds", "us", higher_is_better=False,
        context=f"from the {first.share:.0%} day to the {last.share:.0%}; a day above "
                f"{rebuild_each / slope:.0%} of the window's completions moves slower than "
                "the window rebuilds"))
    figures.append(Figure(
        f"top-{TOP} reads during the moves, p99 (ms)", moving.ms(99), idle.ms(99),
        "the same reads with nothing moving, p99", "ms", higher_is_better=False,
        context=f"{moving.count} reads at {plan.read_rate:.0f}/s from a second process, "
                f"{sum(moving.failed.values())} failed, {moving.short} short; p50 "
                f"{moving.ms(50):.2f} ms (idle {idle.ms(50):.2f})"))
    figures.append(Figure(
        f"top-{TOP} reads during the moves, max (ms)", moving.max_ms, idle.max_ms,
        "the same reads with nothing moving, max", "ms", higher_is_better=False,
        context=f"{idle.count} reads with nothing moving"))
    out["slope_us"], out["rebuild_us_per_completion"] = slope, rebuild_each
    out["moves"] = [{"share": m.share, "leaving": m.leaving, "seconds": m.seconds,
                     "steps": m.steps, "batches": m.batches,
                     "copy_seconds": m.copy_seconds, "baseline_seconds": m.baseline_seconds,
                     "reads": {"count": m.reads.count, "p50_ms": m.reads.ms(50),
                               "p99_ms": m.reads.ms(99), "max_ms": m.reads.max_ms,
                               "failed": m.reads.failed, "short": m.reads.short}}
                    for m in moves]
    out["idle_reads"] = {"count": idle.count, "p50_ms": idle.ms(50),
                         "p99_ms": idle.ms(99), "max_ms": idle.max_ms}


async def idle_ticks(plan: Plan, svc: Services, ctx: Context, figures: list[Figure],
                     out: dict[str, Any]) -> None:
    log("idle ticks of the windows loop")
    few = await idle_tick(svc)
    await add_seasons(ctx.url, plan.idle_seasons)
    many = await idle_tick(svc)
    for n, seconds in (("the bench's", few), (f"{plan.idle_seasons:,} more", many)):
        figures.append(Figure(
            f"windows loop tick, nothing to move, {n} seasons (ms)", seconds * 1000, 1000,
            "the loop's interval, 1 s", "ms", higher_is_better=False,
            context="every projector process, every second"))
    out["idle_tick_ms"] = {"few": few * 1000, "many": many * 1000,
                           "added_seasons": plan.idle_seasons}


def parse(argv: list[str] | None) -> Plan:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--learners", type=int, default=200_000, help="default 200,000")
    p.add_argument("--per-learner", type=int, default=2,
                   help="completions of each learner in the window (default 2)")
    p.add_argument("--shares", default="1,5,20",
                   help="percent of the window's completions on each of its first days, "
                        "the days that leave in turn (default 1,5,20)")
    p.add_argument("--read-rate", type=float, default=100,
                   help="top-100 reads a second by the reader process (default 100)")
    p.add_argument("--idle-seconds", type=float, default=3,
                   help="the reads' baseline: this long with nothing moving (default 3)")
    p.add_argument("--idle-seasons", type=int, default=100_000,
                   help="rows added to `seasons` for the second idle tick (default 100,000)")
    p.add_argument("--no-verify", action="store_true", help="skip verify at the end")
    p.add_argument("--json", type=Path, help="write the figures there")
    args = p.parse_args(argv)
    shares = tuple(float(s) / 100 for s in args.shares.split(","))
    if not 1 <= len(shares) < DAYS or sum(shares) >= 1 or min(shares) <= 0:
        p.error("give 1 to 29 shares, each above 0, adding up to less than 100")
    if args.learners < 1 or args.per_learner < 1:
        p.error("give at least one learner and one completion each")
    if math.gcd(STEP, args.learners * args.per_learner) != 1:
        p.error(f"give a number of completions (learners x per learner) prime to {STEP}")
    return Plan(args.learners, args.per_learner, shares, args.read_rate, args.idle_seconds,
                args.idle_seasons, not args.no_verify, args.json)


def main(argv: list[str] | None = None) -> int:
    plan = parse(argv)
    started = time.perf_counter()
    figures: list[Figure] = []
    out: dict[str, Any] = {}
    log(f"clock {NOW.isoformat()}")

    async def work(url: str, redis_url: str, prefix: str) -> None:
        r = aioredis.from_url(redis_url)
        try:
            await measure(plan, Context(url, redis_url, prefix, r), figures, out)
        finally:
            await r.aclose()

    ok = scratch_run("windows", work)
    if not ok:
        return 1
    seconds = time.perf_counter() - started
    print_table(f"a 30-day window of {plan.learners:,} learners moved at midnight "
                f"({seconds:.0f} s)", figures)
    if plan.json is not None:
        out.update({"when": datetime.now(UTC).isoformat(timespec="seconds"),
                    "cpus": os.cpu_count(), "seconds": round(seconds),
                    "command": "bench/windows.py " + " ".join(
                        sys.argv[1:] if argv is None else argv),
                    "plan": {"learners": plan.learners, "per_learner": plan.per_learner,
                             "shares": plan.shares, "read_rate": plan.read_rate,
                             "now": NOW.isoformat()},
                    "figures": [f.row() for f in figures]})
        dump_json(plan.json, out)
        log(f"results written to {plan.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
