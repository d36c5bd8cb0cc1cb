"""The leagues lines (issue 28), each against a baseline measured in the same run.

- **Joins**: the batch ingest of first completions of N distinct learners in
  one week, on a service whose league switch is off and on one whose switch
  is on (`Leagues.store_settings`: the statement trigger writes a
  `league_joins` row per learner in the ingest transaction), while `place`
  runs every 0.5 s as the background loop would; against the bench's ingest
  baseline (the same rows inserted raw). Then how long after the last batch's
  answer every join is placed, and the placer's throughput.
- **The decision** for M members: completions (3 per member), tiers and joins
  loaded with SQL into a database of its own (migrated by
  `laurels.db.migrate`), then `Leagues.place` for all of them and
  `Leagues.decide`, against the plain aggregation the decision cannot avoid
  and a plain `INSERT ... SELECT` of the same slots.

    .venv/bin/python -m bench.run --leagues                           # 100,000 and 100,000
    .venv/bin/python -m bench.run --leagues --league-members 1000000  # the decision at 1M
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from bench.phases import Figure, batch_bodies, raw_insert, timed_batches
from bench.support import RAW_TABLES, BenchError, Service, log, start_service
from laurels.core.seasons import Season, parse_season
from laurels.db import migrate, q, statement
from laurels.leagues.cohorts import PLACE_BATCH, Leagues
from laurels.lifecycle.history import month_of
from laurels.process.settings import Secrets, Settings
from laurels.runtime import Runtime
from tests.helpers import stop_process, with_database

TIERS = ("bronze", "silver", "gold", "sapphire", "ruby")
JOIN_WEEK = "2026-W39"  # the joins line's week (no other line uses it)
DECIDE_WEEK, PREVIOUS_WEEK = "2026-W37", "2026-W36"  # the decision's week, and the one before
LOOP_SECONDS = 0.5  # as runtime.background_loops runs Leagues.tick
COMPLETIONS_PER_MEMBER = 3


@dataclass
class LeagueRun:
    """What the league lines share with the bench's run: its stores, its
    run id, where servers log, and the lists its cleanup goes through."""

    admin_url: str
    redis_url: str
    run_id: str
    workdir: Path
    procs: list[Any]
    created: list[str]
    create_databases: Callable[[str, list[str], list[str]], None]
    figures: list[Figure] = field(default_factory=list)
    # ANALYZE before each timed run (the statistics autovacuum keeps in a
    # running deployment); False leaves them to autovacuum, as in the first
    # league week of a deployment.
    analyze: bool = True

    def database(self, suffix: str) -> str:
        name = f"laurels_bench_leagues_{self.run_id}_{suffix}"
        self.create_databases(self.admin_url, [name], self.created)
        return with_database(self.admin_url, name)

    def prefix(self, suffix: str) -> str:
        return f"bench{self.run_id}lg{suffix}"  # under the run's prefix: the cleanup unlinks it


def league_runtime(run: LeagueRun, database_url: str, prefix: str) -> Runtime:
    """An in-process service graph with leagues configured, on a database
    and key prefix of the run's (the placer and the decider use it)."""
    token = secrets.token_urlsafe(32)
    settings = Settings(database_url=database_url, redis_url=run.redis_url, key_prefix=prefix,
                        data_dir=run.workdir / f"data-{prefix}", ingest_token=token,
                        admin_token=token + "a", user_token_secret=token + token,
                        league_tiers=TIERS, close_seasons=False, webhook_url=None)
    return Runtime(settings, Secrets(token, token + "a", token + token), database_url,
                   run.redis_url)


async def scalar(url: str, query: str, params: Any = ()) -> Any:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        row = await (await conn.execute(query, params)).fetchone()
        return row[0] if row else None


async def analyze(*urls: str) -> None:
    for url in urls:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("ANALYZE")


async def settle(url: str, timeout: float = 120.0) -> None:
    """Until every completion recorded is applied (the outbox is empty), so
    the next timed run does not share the machine with this one's tail."""
    deadline = time.perf_counter() + timeout
    while await scalar(url, "SELECT count(*) FROM outbox"):
        if time.perf_counter() > deadline:
            raise BenchError(f"the outbox of {url.rsplit('/', 1)[-1]} did not drain in "
                             f"{timeout:.0f} s")
        await asyncio.sleep(0.1)


# -- joins ------------------------------------------------------------------------------


@dataclass
class Placer:
    """`Leagues.place` every 0.5 s, as the background loop runs it; the time
    it spends placing, and when it has placed `expect` members."""

    leagues: Leagues
    url: str
    season: Season
    seconds: float = 0.0
    passes: int = 0
    expect: int | None = None
    placed_at: float = 0.0
    done: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            started = time.perf_counter()
            await self.leagues.place(self.season)
            self.seconds += time.perf_counter() - started
            self.passes += 1
            if self.expect is not None and not self.done.is_set():
                placed = await scalar(self.url, "SELECT count(*) FROM league_members "
                                      "WHERE season = %s", (self.season.name,))
                if placed >= self.expect:
                    self.placed_at = time.perf_counter()
                    self.done.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), LOOP_SECONDS)


def join_chunks(tag: str, first: int, last: int, batch: int
                ) -> list[list[tuple[str, int, int, datetime]]]:
    """The first completion of learners first+1 .. last, in batches."""
    start = parse_season(JOIN_WEEK, zone="UTC").starts_at
    items = [(f"{tag}-{JOIN_WEEK}-{u}", u, 1 + u % 10, start + timedelta(seconds=u % 600_000))
             for u in range(first + 1, last + 1)]
    return [items[i:i + batch] for i in range(0, len(items), batch)]


@dataclass
class JoinRates:
    raw: float = 0.0
    off: float = 0.0
    on: float = 0.0
    lags: list[float] = field(default_factory=list)
    cores_off: list[float] = field(default_factory=list)
    cores_on: list[float] = field(default_factory=list)
    analyze: bool = True


async def _join_round(services: tuple[tuple[Service, str], tuple[Service, str]],
                      placer: Placer, chunks: list[list[tuple[str, int, int, datetime]]],
                      expect: int, clients: int, rates: JoinRates) -> None:
    """One round: raw, leagues off, leagues on (the placer running), each
    settled before the next. `services`: (service, database URL), off then on."""
    (off, off_url), (on, on_url) = services
    bodies = batch_bodies(chunks)
    if rates.analyze:
        await analyze(off_url, on_url)
    rates.raw += await raw_insert(off_url, chunks, clients)
    seconds, cores = await timed_batches(off, bodies, clients)
    rates.off += seconds
    rates.cores_off.append(cores)
    await settle(off_url)
    stop = asyncio.Event()
    placer.expect, placer.done = None, asyncio.Event()
    task = asyncio.create_task(placer.run(stop))
    try:
        seconds, cores = await timed_batches(on, bodies, clients)
        answered = time.perf_counter()
        rates.on += seconds
        rates.cores_on.append(cores)
        placer.expect = expect
        await asyncio.wait_for(placer.done.wait(), 600)
        rates.lags.append(placer.placed_at - answered)
    finally:
        stop.set()
        await task
    await settle(on_url)


async def joins(run: LeagueRun, learners: int, clients: int = 4, batch: int = 1000) -> None:
    """Ingest of first completions with leagues off and on, alternating (raw,
    off, on; raw, off, on) so drift cancels; each service has a database and
    a key prefix of its own."""
    off_url, on_url = run.database("off"), run.database("on")
    off = start_service(off_url, run.redis_url, run.prefix("off"), run.workdir,
                        name="leagues-off")
    run.procs.append(off.proc)
    on = start_service(on_url, run.redis_url, run.prefix("on"), run.workdir, name="leagues-on")
    run.procs.append(on.proc)
    rt = league_runtime(run, on_url, run.prefix("on"))
    await rt.open(run_migrations=False)
    try:
        await rt.leagues.store_settings()  # the league switch on, for every writer of on_url
        if not await scalar(on_url, "SELECT laurels_leagues_on()") or await scalar(
                off_url, "SELECT laurels_leagues_on()"):
            raise BenchError("the league switch is not on for one service and off for the other")
        async with await psycopg.AsyncConnection.connect(off_url, autocommit=True) as c:
            for ddl in RAW_TABLES:
                await c.execute(ddl)
        for url in (off_url, on_url):  # the learners exist: this is their week's first
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as c:
                await c.execute("INSERT INTO users (user_id) "
                                "SELECT g FROM generate_series(1, %s) g", (learners,))
        placer = Placer(rt.leagues, on_url, parse_season(JOIN_WEEK, zone="UTC"))
        rates = JoinRates(analyze=run.analyze)
        half = learners // 2
        for k, (first, last) in enumerate([(0, half), (half, learners)]):
            log(f"joins, round {k + 1}/2: learners {first + 1:,}..{last:,}: raw, leagues off, "
                "leagues on")
            await _join_round(((off, off_url), (on, on_url)), placer,
                              join_chunks(f"j{run.run_id}", first, last, batch), last, clients,
                              rates)
        joined = await scalar(on_url, "SELECT count(*) FROM league_joins WHERE season = %s",
                              (JOIN_WEEK,))
        cohorts = await scalar(on_url, "SELECT count(DISTINCT (tier, cohort)) FROM league_members"
                               " WHERE season = %s", (JOIN_WEEK,))
        if joined != learners or await scalar(off_url, "SELECT count(*) FROM league_joins"):
            raise BenchError(f"{joined} joins with leagues on (expected {learners}), or some "
                             "with leagues off")
        log(f"a zone pass over the {cohorts:,} cohorts (what the loop also runs)")
        started = time.perf_counter()
        notified = await rt.leagues.zones(parse_season(JOIN_WEEK, zone="UTC"))
        zone_seconds = time.perf_counter() - started
    finally:
        await rt.close()
        for svc in (off, on):
            stop_process(svc.proc)
    join_figures(run, learners, rates, placer, (cohorts, notified, zone_seconds), clients, batch)


def join_figures(run: LeagueRun, learners: int, r: JoinRates, placer: Placer,
                 zone: tuple[int, int, float], clients: int, batch: int) -> None:
    off, on, raw = learners / r.off, learners / r.on, learners / r.raw
    how = f"batches of {batch}, {clients} clients"
    stats = ("ANALYZE before each run" if r.analyze
             else "statistics left to autovacuum (--no-analyze)")
    cohorts, notified, zone_seconds = zone
    run.figures += [
        Figure("batch ingest of first completions, leagues off (completions/s)", off, raw,
               "raw batched INSERT + outbox row, same rows", "completions/s",
               context=f"{how}; server {statistics.mean(r.cores_off):.2f} cores"),
        Figure("batch ingest of first completions, leagues on (completions/s)", on, raw,
               "raw batched INSERT + outbox row, same rows", "completions/s",
               context=f"{how}; server {statistics.mean(r.cores_on):.2f} cores; "
                       "a join per completion"),
        Figure("batch ingest, leagues on vs off (completions/s)", on, off,
               "the same ingest with the league switch off (fresh services, alternating)",
               "completions/s", goal=">= 0.9", context=stats),
        Figure("placement while ingesting (joins/s)", learners / placer.seconds, on,
               "joins arriving: the ingest with leagues on", "joins/s", goal=">= 1.0",
               context=f"{placer.seconds:.1f} s placing in {placer.passes} passes, one every "
                       f"{LOOP_SECONDS} s; {cohorts:,} cohorts"),
        Figure("placement lag after the last ingest (ms)", max(r.lags) * 1000,
               LOOP_SECONDS * 1000, "the loop's interval", "ms", higher_is_better=False,
               context="from the last batch's answer to every join placed; rounds "
                       + ", ".join(f"{lag * 1000:.0f} ms" for lag in r.lags) + f"; {stats}"),
        Figure("zone pass after the ingest, every cohort touched (s)", zone_seconds,
               LOOP_SECONDS, "the loop's interval", "s", higher_is_better=False,
               context=f"{cohorts:,} cohorts ({cohorts / zone_seconds:,.0f}/s), {notified:,} "
                       "notified; Leagues.tick runs it after place: the next placement waits"),
    ]


# -- the decision ---------------------------------------------------------------------


async def load_week(url: str, members: int) -> None:
    """`members` learners with 3 completions each in one week (in its month's
    partition, made as the service makes it; 1 to 20 points each, scattered
    by a multiplicative hash, so cohorts have few ties and every tier above
    the lowest demotes), their tiers after the week before (spread over the
    5 tiers), and their joins in a shuffled order; the league switch stays
    off (no trigger work)."""
    week = parse_season(DECIDE_WEEK, zone="UTC")
    start = week.starts_at
    n = COMPLETIONS_PER_MEMBER * members
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for month in sorted({month_of(start), month_of(week.ends_at - timedelta(seconds=1))}):
            await conn.execute(q("ensure_partition"), {"month": month})
        await conn.execute("INSERT INTO users (user_id) SELECT g FROM generate_series(1, %s) g",
                           (members,))
        await conn.execute("INSERT INTO seasons (season) VALUES (%s), (%s)",
                           (PREVIOUS_WEEK, DECIDE_WEEK))
        await conn.execute(
            "INSERT INTO completions (completion_id, user_id, points, completed_at, "
            "received_at, season) SELECT 'L' || g, 1 + (g - 1) %% %(m)s, "
            "1 + ((g * 2654435761) %% 4294967291) %% 20, "
            "%(start)s + ((g * 7919) %% 600000) * interval '1 second', now(), %(week)s "
            "FROM generate_series(1::bigint, %(n)s::bigint) g",
            {"m": members, "n": n, "start": start, "week": DECIDE_WEEK})
        # The week's row exists when statistics are taken, as it does once autovacuum has
        # seen it (lock_league_week makes it at the week's first placement). Without it,
        # place_joins' pending check is planned as a nested loop over every undecided join
        # (docs/performance.md, "Leagues").
        await conn.execute("INSERT INTO league_weeks (season, decided_at) VALUES (%s, now()), "
                           "(%s, NULL)", (PREVIOUS_WEEK, DECIDE_WEEK))
        await conn.execute("INSERT INTO league_tiers (user_id, tier, season) "
                           "SELECT g, g %% %s, %s FROM generate_series(1, %s) g",
                           (len(TIERS), PREVIOUS_WEEK, members))
        await conn.execute("INSERT INTO league_joins (season, user_id) SELECT %s, g "
                           "FROM generate_series(1::bigint, %s::bigint) g "
                           "ORDER BY (g * 7919) %% %s, g", (DECIDE_WEEK, members, members))
        for table in ("users", "completions", "league_tiers", "league_joins", "league_weeks"):
            await conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))


async def placement_baseline(url: str, size: int) -> float:
    """One INSERT ... SELECT of the same slots into a copy of league_members
    (its indexes too): what placing in bulk has to write, at least."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("CREATE TABLE bench_place_copy (LIKE league_members INCLUDING ALL)")
        started = time.perf_counter()
        await conn.execute(
            "INSERT INTO bench_place_copy (season, user_id, tier, cohort, slot) "
            "SELECT season, user_id, tier, (r - 1) / %(size)s, r - 1 FROM ("
            " SELECT j.season, j.user_id, least(coalesce(t.tier, 0), %(top)s) AS tier,"
            "  row_number() OVER (PARTITION BY least(coalesce(t.tier, 0), %(top)s)"
            "                     ORDER BY j.join_seq) AS r"
            " FROM league_joins j LEFT JOIN league_tiers t ON t.user_id = j.user_id"
            " WHERE j.season = %(week)s) x",
            {"size": size, "top": len(TIERS) - 1, "week": DECIDE_WEEK})
        seconds = time.perf_counter() - started
        await conn.execute("DROP TABLE bench_place_copy")
    return seconds


async def aggregation_seconds(url: str) -> float:
    """The aggregation the decision cannot avoid: every member's sum over the
    week's completions (kept on the server: counted, not sent); the median
    of 3."""
    timings = []
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for _ in range(3):
            started = time.perf_counter()
            await conn.execute(
                "SELECT count(*), sum(score) FROM (SELECT user_id, sum(points) AS score "
                "FROM completions WHERE season = %s GROUP BY user_id) t", (DECIDE_WEEK,))
            timings.append(time.perf_counter() - started)
    return statistics.median(timings)


async def explain_decision(rt: Runtime, url: str) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of decide_league_week, rolled back (and
    the tables it wrote vacuumed), so the timed decision finds them as they were."""
    rules = rt.leagues.rules
    params = {"season": DECIDE_WEEK, "policy": rt.settings.tie_policy,
              "names": list(rules.tiers), **rules.cutoff_table()}  # as Leagues.decide
    text = "EXPLAIN (ANALYZE, BUFFERS) " + statement("decide_league_week", params,
                                                    rt.settings.time_zone)
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(text, params)
        plan = "\n".join(row[0] for row in await cur.fetchall())
        await conn.rollback()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for table in ("league_results", "league_tiers", "notifications", "league_weeks"):
            await conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))
    return plan


async def decision(run: LeagueRun, members: int, explain: bool = False) -> str:
    """Load a week of `members` members, place them all, decide it; the
    plan of the decision when `explain`."""
    url = run.database("decide")
    await migrate(url)
    log(f"decision: loading {members:,} members, {COMPLETIONS_PER_MEMBER * members:,} "
        "completions, their tiers and joins")
    started = time.perf_counter()
    await load_week(url, members)
    log(f"loaded in {time.perf_counter() - started:.0f} s; placement baseline, then place()")
    rt = league_runtime(run, url, run.prefix("d"))
    await rt.open(run_migrations=False)
    plan = ""
    try:
        copy_seconds = await placement_baseline(url, rt.leagues.rules.size)
        week = parse_season(DECIDE_WEEK, zone="UTC")
        started = time.perf_counter()
        grown = await rt.leagues.place(week)
        place_seconds = time.perf_counter() - started
        placed = await scalar(url, "SELECT count(*) FROM league_members WHERE season = %s",
                              (DECIDE_WEEK,))
        if placed != members:
            raise BenchError(f"{placed:,} placed of {members:,}")
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            for table in ("league_joins", "league_members", "league_fill"):
                await conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))
        log(f"placed in {place_seconds:.1f} s ({grown:,} cohorts); the aggregation baseline")
        agg_seconds = await aggregation_seconds(url)
        if explain:
            log("EXPLAIN (ANALYZE, BUFFERS) of decide_league_week, rolled back")
            plan = await explain_decision(rt, url)
        log("decide()")
        started = time.perf_counter()
        if not await rt.leagues.decide(week):
            raise BenchError("the week was decided already")
        decide_seconds = time.perf_counter() - started
        results = await scalar(url, "SELECT count(*) FROM league_results WHERE season = %s",
                               (DECIDE_WEEK,))
        if results != members:
            raise BenchError(f"{results:,} results of {members:,} members")
    finally:
        await rt.close()
    decision_figures(run, members, grown, (place_seconds, copy_seconds),
                     (decide_seconds, agg_seconds))
    return plan


def decision_figures(run: LeagueRun, members: int, cohorts: int, place: tuple[float, float],
                     decide: tuple[float, float]) -> None:
    (place_seconds, copy_seconds), (decide_seconds, agg_seconds) = place, decide
    run.figures += [
        Figure(f"placement of {members:,} joins, one place() (joins/s)",
               members / place_seconds, members / copy_seconds,
               "one INSERT ... SELECT of the same slots into a copy of league_members",
               "joins/s",
               context=f"{place_seconds:.1f} s; {cohorts:,} cohorts in {len(TIERS)} tiers; "
                       f"{PLACE_BATCH:,} joins per statement"),
        Figure(f"decision of {members:,} members (s)", decide_seconds, agg_seconds,
               "SELECT user_id, sum(points) ... GROUP BY user_id over the same week",
               "s", higher_is_better=False, goal="< 60 s",
               context=f"{members / decide_seconds:,.0f} members/s; baseline "
                       f"{members / agg_seconds:,.0f} members/s"),
    ]
