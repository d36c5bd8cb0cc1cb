"""Team boards (CONTRACT.md, "Team boards"; lifecycle/teams.py, reads/teams.py):
what keeping them costs a completion, what reading them costs against the
learners' board, and what filling one from PostgreSQL takes, each figure
against a baseline measured in the same run, on the machine's PostgreSQL and
Redis (LAURELS_BENCH_DATABASE_URL, LAURELS_BENCH_REDIS_URL; loopback only).

    .venv/bin/python bench/teams.py                                    # 30,000: a minute
    .venv/bin/python bench/teams.py --learners 3000000 --teams 100000  # 12-15 minutes
    .venv/bin/python bench/teams.py --houses sum                       # two `sum` kinds

The second is the issue's line (about 1.5 GB of Redis; 12-15 minutes on 2
cores): "100,000 teams of 30 over 3,000,000 learners, a completion of a
learner in 2 teams applied at no more than 1.5 times one in none; the top
100 of teams read at 0.8 or more of a learner board's top 100".

1. **Load** (straight into PostgreSQL, in a scratch database
   `laurels_bench_teams_<id>` migrated by `laurels.db.migrate`): `--learners`
   learners in teams and `--loose` learners in none, one completion each in
   a past week (points 1 to 100); two team kinds defined by the service
   (`classes`: `sum`; `houses`: `top` 10, or `--houses sum|mean`), then
   `--teams` groups of each
   (half public, half members-only) set in their kind and their members
   inserted in SQL: learner u is in class `c<(u-1) // size>` and house
   `h<(u-1) % teams>`, so every learner in a team is in exactly 2 teams (one
   of each kind), every team has `learners / teams` members. The week's
   board is built by the service's `Rebuilder.run` (timed: a baseline).
2. **Fill** (c): the first read of each kind's board fills it from
   PostgreSQL's memberships (`Teams.ready`, under the kind's row lock),
   timed, against the rebuild of the learners' board and against streaming
   the fill's query (`team_memberships`) alone. While the second fill runs,
   a membership change of a group of that kind is timed (it waits for the
   fill: the kind's row), and each of the fill's script calls (2,000
   members each; Redis runs nothing else meanwhile): the longest and the
   median. The Redis bytes of each kind's board, per member, against the
   learners' board's per learner.
3. **Apply** (a): batch ingest (`Ingestor.record`, `--batch` completions a
   batch, each of a distinct learner, the fast path applying to Redis and
   the outbox flush loop running, as in `laurels serve`) of completions of
   learners in 2 teams against learners in none, in alternating rounds
   (none, teams, teams, none, ...: drift cancels). Figures: the fast path's
   apply (`Projector.apply_now`, where the team boards move) a completion,
   and the whole ingest's rate: each side's median, and the median of the
   rounds' pairs; Redis's own time in scripts a completion (INFO
   commandstats: the server's whole, so another tenant's scripts count).
4. **Reads** (b): the top 100 of `classes` against the learners' board's
   top 100, `--read-clients` concurrent callers for `--read-seconds` a
   round, alternating rounds: (i) the services uncached
   (`TeamReads.page`, `Reads.top`); (ii) over HTTP in process (the app
   `laurels serve` runs, through `httpx.ASGITransport`: no socket, no
   load generator), with no token (both pages kept by the process until a
   hint) and with a learner's token (the team page computed for them, the
   members-only rule; the learners' page as kept).
5. **Checks**: `verify` of both team boards (every team's score, member
   count and rank against PostgreSQL's), unless `--no-verify`.

Prints a table; `--json PATH` writes the figures there. Drops its database
and unlinks its keys at the end (also after an error or Ctrl-C).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: bench/ and tests/ from the root
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import psycopg  # noqa: E402
import redis.asyncio as aioredis  # noqa: E402

from bench.phases import Figure, print_table  # noqa: E402
from bench.support import (  # noqa: E402
    BenchError,
    dump_json,
    log,
    scratch_run,
)
from laurels.api import create_app, serving_app  # noqa: E402
from laurels.api.auth import mint  # noqa: E402
from laurels.api.server import tune_collector  # noqa: E402
from laurels.core.seasons import Season, season_of  # noqa: E402
from laurels.core.validation import validate_members  # noqa: E402
from laurels.db import migrate  # noqa: E402
from laurels.lifecycle.teams import FILL_BATCH  # noqa: E402
from laurels.process.settings import Secrets, Settings  # noqa: E402
from laurels.runtime import Runtime, Services  # noqa: E402

STEP = 7919  # prime: g * STEP % n deals a batch's learners apart
TOP = 100
HOUSES_TOP = 10  # a `top` house ranks by the sum of its 10 best members' scores
LETTERS = {"classes": "c", "houses": "h"}
BASE_URL = "http://laurels.bench"


@dataclass(frozen=True)
class Plan:
    learners: int  # in teams (each in one class and one house)
    teams: int  # of each kind
    houses: str  # the houses' aggregate (the classes': sum)
    loose: int  # learners in no team
    batch: int
    batches: int  # a round's
    rounds: int  # of each side
    read_seconds: float
    read_clients: int
    verify: bool
    json: Path | None

    @property
    def size(self) -> int:
        return self.learners // self.teams

    @property
    def kinds(self) -> dict[str, dict[str, Any]]:
        """Each kind's definition (its PUT's body)."""
        houses: dict[str, Any] = {"title": "Houses", "aggregate": self.houses}
        if self.houses == "top":
            houses["top"] = HOUSES_TOP
        return {"classes": {"title": "Classes"}, "houses": houses}

    def aggregate(self, kind: str) -> str:
        body = self.kinds[kind]
        agg = str(body.get("aggregate", "sum"))
        return f"top {body['top']}" if agg == "top" else agg


class Stores(NamedTuple):
    url: str
    redis_url: str
    prefix: str


@dataclass
class Side:
    """One side's apply rounds: seconds of the fast path's apply and of the
    whole ingest, and completions, a round each."""

    apply: list[float] = field(default_factory=list)
    ingest: list[float] = field(default_factory=list)
    count: list[int] = field(default_factory=list)
    script: list[float] = field(default_factory=list)  # Redis's us in scripts a completion

    def us(self, n: int) -> float:  # apply a completion, round n
        return self.apply[n] / self.count[n] * 1e6

    def rate(self, n: int) -> float:  # ingest completions a second, round n
        return self.count[n] / self.ingest[n]


# -- the load ---------------------------------------------------------------------------


async def load(url: str, plan: Plan, week: Season, svc: Services) -> float:
    """Learners and their week's completion, the two kinds (defined by the
    service), their groups and members (SQL); ANALYZE."""
    started = time.perf_counter()
    total = plan.learners + plan.loose
    for kind, body in plan.kinds.items():
        await svc.teams.define(kind, body)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("INSERT INTO users (user_id) SELECT g FROM generate_series(1, %s) g",
                           (total,))
        month = date(week.starts_at.year, week.starts_at.month, 1)
        while month <= week.ends_at.date():
            await conn.execute("SELECT laurels_completions_partition_v1(%s)", (month,))
            month = date(month.year + month.month // 12, month.month % 12 + 1, 1)
        await conn.execute("""
            INSERT INTO completions (seq, completion_id, user_id, points, completed_at,
                                     received_at, season)
            SELECT g, 'l' || g, g, 1 + g * %(step)s %% 100, at, at, %(season)s
            FROM (SELECT g, %(start)s::timestamptz + (g %% 500000) * interval '1 second' AS at
                  FROM generate_series(1, %(total)s::bigint) g) t""",
                           {"step": STEP, "season": week.name, "start": week.starts_at,
                            "total": total})
        await conn.execute("SELECT setval('completion_seq', %s)", (total + 1,))
        log(f"  {total:,} learners and their completions: {time.perf_counter() - started:.0f} s")
        for kind, letter in LETTERS.items():
            await conn.execute("""
                INSERT INTO groups (group_id, name, access, team)
                SELECT %(letter)s || k, initcap(%(kind)s) || ' ' || k,
                       CASE WHEN k %% 2 = 0 THEN 'public' ELSE 'members' END, %(kind)s
                FROM generate_series(0, %(teams)s - 1) k""",
                               {"letter": letter, "kind": kind, "teams": plan.teams})
            team_of = "(u - 1) / %(size)s" if letter == "c" else "(u - 1) %% %(teams)s"
            await conn.execute("INSERT INTO group_members (group_id, user_id) "
                               "SELECT %(letter)s || " + team_of + ", u "
                               "FROM generate_series(1, %(learners)s) u",
                               {"letter": letter, "size": plan.size, "teams": plan.teams,
                                "learners": plan.learners})
            log(f"  {plan.teams:,} teams of {kind}, {plan.learners:,} members: "
                f"{time.perf_counter() - started:.0f} s")
        await conn.execute("ANALYZE")
    return time.perf_counter() - started


def runtime(url: str, redis_url: str, prefix: str) -> Runtime:
    token = secrets.token_urlsafe(32)
    settings = Settings(database_url=url, redis_url=redis_url, key_prefix=prefix,
                        data_dir=Path(tempfile.gettempdir()) / f"laurels-bench-{prefix}",
                        ingest_token=token, admin_token=token + "a",
                        user_token_secret=token + token, close_seasons=False,
                        webhook_url=None, write_rate_limit=0)
    return Runtime(settings, Secrets(token, token + "a", token + token), url, redis_url)


# -- 1, 2: the board built, the team boards filled ----------------------------------------


async def built(svc: Services, week: Season, plan: Plan) -> float:
    started = time.perf_counter()
    result = await svc.rebuilder.run(week)
    seconds = time.perf_counter() - started
    total = (await svc.reads.top(week, 1))["total"]
    if total != plan.learners + plan.loose:
        raise BenchError(f"the built board holds {total} learners, not "
                         f"{plan.learners + plan.loose}")
    log(f"  the week's board built in {seconds:.1f} s ({result})")
    return seconds


async def memberships_streamed(svc: Services, kind: str) -> tuple[float, int]:
    """The fill's query alone: every membership of the kind streamed out of
    PostgreSQL as the fill reads it (seconds, learners)."""
    started, rows = time.perf_counter(), 0
    async with svc.db.transaction() as tx:
        async for batch in svc.db.stream_tuples("team_memberships", tx, FILL_BATCH, team=kind):
            rows += len(batch)
    return time.perf_counter() - started, rows


async def team_bytes(r: aioredis.Redis, svc: Services, week: Season, kind: str) -> int:
    """MEMORY USAGE of every key of the kind's board on the current version."""
    sk = svc.board.season_keys(week)
    current = (await r.get(sk.current) or b"").decode()
    keys = sk.version(current).team(kind)
    names = [keys.members, keys.points, keys.scores, keys.sums, keys.counts]
    names += [k async for k in r.scan_iter(match=keys.top("*"), count=10_000)]
    used = 0
    for i in range(0, len(names), 1000):
        pipe = r.pipeline(transaction=False)
        for name in names[i:i + 1000]:
            pipe.memory_usage(name, samples=0)
        used += sum(int(u or 0) for u in await pipe.execute())
    return used


async def board_bytes(r: aioredis.Redis, svc: Services, week: Season) -> int:
    sk = svc.board.season_keys(week)
    current = (await r.get(sk.current) or b"").decode()
    vk = sk.version(current)
    return sum([int(await r.memory_usage(k, samples=0) or 0) for k in (vk.public, vk.users)])


def timed_script(svc: Services, name: str) -> list[float]:
    """Each call of a board script (`name`) timed in place, from this
    process: its round trip, about what every other client of Redis waits
    behind it (a script runs alone). The seconds of each, from then on."""
    calls: list[float] = []
    scripts: Any = svc.board.scripts
    original = scripts.by_name[name]

    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await original(*args, **kwargs)
        finally:
            calls.append(time.perf_counter() - started)

    scripts.by_name[name] = wrapped
    return calls


async def filled(svc: Services, week: Season, plan: Plan, rebuild: float, r: aioredis.Redis,
                 figures: list[Figure], out: dict[str, Any]) -> None:
    board = await board_bytes(r, svc, week)
    per_learner = board / (plan.learners + plan.loose)
    calls = timed_script(svc, "team_members")
    for n, kind in enumerate(LETTERS):
        streamed, rows = await memberships_streamed(svc, kind)
        if rows != plan.learners:
            raise BenchError(f"{kind}: {rows} memberships streamed, {plan.learners} loaded")
        waited = math.nan
        calls.clear()
        started = time.perf_counter()
        fill = asyncio.ensure_future(svc.team_reads.page(kind, week, 0, TOP, "platform"))
        if n == 1:  # a membership change of the kind while it fills: it waits
            await asyncio.sleep(0.2)
            one = time.perf_counter()
            await svc.groups.change_members(f"{LETTERS[kind]}0", validate_members(
                {"add": [plan.learners + plan.loose + 1]}))
            waited = time.perf_counter() - one
        body, _ = await fill
        seconds = time.perf_counter() - started
        if body["total"] != plan.teams or len(body["entries"]) != min(TOP, plan.teams):
            raise BenchError(f"{kind}: {body['total']} teams filled, {plan.teams} loaded")
        longest = (f"{max(calls) * 1000:.0f} ms (median {statistics.median(calls) * 1000:.0f} "
                   f"ms, {len(calls):,} calls of up to 2,000 members)") if calls else "none"
        used = await team_bytes(r, svc, week, kind)
        log(f"  {kind} filled in {seconds:.1f} s (its query streamed alone {streamed:.1f} s, "
            f"its longest script call {longest}); "
            f"{used / plan.learners:.0f} B a member in Redis"
            + (f"; a membership change meanwhile waited {waited:.1f} s" if n == 1 else ""))
        aggregate = plan.aggregate(kind)
        figures.append(Figure(
            f"fill of {kind} ({aggregate}) on first read (s)", seconds, rebuild,
            "the rebuild of the learners' board (Rebuilder.run)", "s", higher_is_better=False,
            context=f"{plan.learners:,} members in {plan.teams:,} teams; its query streamed "
                    f"alone {streamed:.1f} s; its longest script call {longest}"
                    + (f"; a membership change of the kind meanwhile waited {waited:.1f} s"
                       if n == 1 else "")))
        figures.append(Figure(
            f"Redis bytes a member, {kind}", used / plan.learners, per_learner,
            "the learners' board, bytes a learner (public zset + users hash)", "B",
            higher_is_better=False, context=f"{used / 2**20:,.0f} MiB in all"))
        out.setdefault("fill", {})[kind] = {"seconds": seconds, "streamed_seconds": streamed,
                                            "longest_call": longest,
                                            "bytes": used, "membership_change_waited": waited}
    out["rebuild_seconds"], out["board_bytes"] = rebuild, board


# -- 3: the apply ------------------------------------------------------------------------


def timed_apply(svc: Services) -> list[float]:
    """`Projector.apply_now` (the fast path's apply) timed in place on the
    ingestor's projector: its seconds, summed in the list's one item."""
    spent = [0.0]
    projector: Any = svc.ingestor.projector
    original = projector.apply_now

    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    projector.apply_now = wrapped
    return spent


async def script_usec(r: aioredis.Redis) -> float:
    """Redis's microseconds in scripts so far (INFO commandstats: the
    server's whole, a bench's own mostly)."""
    stats = await r.info("commandstats")
    return float(sum(v["usec"] for k, v in stats.items()
                     if k in ("cmdstat_evalsha", "cmdstat_eval", "cmdstat_fcall")))


async def applied(svc: Services, week: Season, plan: Plan, r: aioredis.Redis,
                  figures: list[Figure], out: dict[str, Any]) -> None:
    spent = timed_apply(svc)
    g = 0

    def batch(in_teams: bool) -> list[dict[str, Any]]:
        nonlocal g
        items = []
        for _ in range(plan.batch):
            g += 1
            uid = (1 + g * STEP % plan.learners if in_teams
                   else plan.learners + 1 + g * STEP % plan.loose)
            items.append({"completion_id": f"a{g}", "user_id": uid, "points": 1 + g % 9,
                          "completed_at": (week.starts_at + timedelta(
                              seconds=g % 600_000)).isoformat()})
        return items

    async def one_round(in_teams: bool, side: Side) -> None:
        work = [batch(in_teams) for _ in range(plan.batches)]
        stop = asyncio.Event()
        flusher = asyncio.create_task(svc.projector.flush_loop(stop))
        spent[0] = 0.0
        scripts = await script_usec(r)
        started = time.perf_counter()
        try:
            for items in work:
                outcomes = await svc.ingestor.record(items)
                bad = [o for o in outcomes if o.status != "recorded"]
                if bad:
                    raise BenchError(f"{len(bad)} not recorded: {bad[:3]}")
        finally:
            seconds = time.perf_counter() - started
            stop.set()
            await flusher
        side.script.append(round((await script_usec(r) - scripts)
                                 / (plan.batch * plan.batches), 1))
        side.apply.append(spent[0])
        side.ingest.append(seconds)
        side.count.append(plan.batch * plan.batches)

    await one_round(True, Side())  # a warm-up of each
    await one_round(False, Side())
    sides = {True: Side(), False: Side()}
    for n in range(plan.rounds * 2):
        in_teams = n % 4 in (1, 2)  # none, teams, teams, none, ...
        await one_round(in_teams, sides[in_teams])
        s = sides[in_teams]
        log(f"  round {n + 1} {'2 teams' if in_teams else 'none'}: apply "
            f"{s.us(-1):.1f} us a completion (Redis's scripts {s.script[-1]} us), ingest "
            f"{s.rate(-1):,.0f}/s")
    teams, none = sides[True], sides[False]
    pairs = sorted(teams.us(n) / none.us(n) for n in range(plan.rounds))
    rates = sorted(teams.rate(n) / none.rate(n) for n in range(plan.rounds))
    apply_t = statistics.median(teams.us(n) for n in range(plan.rounds))
    apply_n = statistics.median(none.us(n) for n in range(plan.rounds))
    figures.append(Figure(
        "apply a completion, learner in 2 teams (us)", apply_t, apply_n,
        "the same, learner in no team", "us", higher_is_better=False,
        goal="ratio <= 1.5",
        context=f"Projector.apply_now, batches of {plan.batch:,}; median of {plan.rounds} "
                f"rounds a side; ratio of the rounds' pairs: median "
                f"{statistics.median(pairs):.2f} (range {pairs[0]:.2f}-{pairs[-1]:.2f}); "
                f"a class ({plan.aggregate('classes')}) and a house "
                f"({plan.aggregate('houses')}) each; Redis's time in scripts a completion "
                f"{statistics.median(teams.script)} us, in none "
                f"{statistics.median(none.script)} us (INFO commandstats)"))
    ingest_t = statistics.median(teams.rate(n) for n in range(plan.rounds))
    ingest_n = statistics.median(none.rate(n) for n in range(plan.rounds))
    figures.append(Figure(
        "batch ingest, learners in 2 teams (completions/s)", ingest_t, ingest_n,
        "the same, learners in no team", "completions/s",
        context=f"Ingestor.record, one caller, batches of {plan.batch:,}; ratio of the "
                f"rounds' pairs: median {statistics.median(rates):.2f}"))
    out["apply"] = {"teams_us": [teams.us(n) for n in range(plan.rounds)],
                    "none_us": [none.us(n) for n in range(plan.rounds)],
                    "teams_rate": [teams.rate(n) for n in range(plan.rounds)],
                    "teams_script_us": teams.script, "none_script_us": none.script,
                    "none_rate": [none.rate(n) for n in range(plan.rounds)]}


# -- 4: the reads ------------------------------------------------------------------------


async def rate_of(read: Callable[[], Awaitable[Any]], clients: int, seconds: float) -> float:
    """Reads a second: `clients` callers reading in turn for `seconds`."""
    count = 0
    deadline = time.perf_counter() + seconds

    async def caller() -> None:
        nonlocal count
        while time.perf_counter() < deadline:
            await read()
            count += 1

    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(clients)))
    return count / (time.perf_counter() - started)


async def alternating(name: str, team: Callable[[], Awaitable[Any]],
                      learners: Callable[[], Awaitable[Any]], plan: Plan,
                      rounds: int = 3) -> tuple[float, float, list[float]]:
    """(team reads a second, learners' board reads a second, each round's
    ratio): alternating rounds, the median of each side."""
    for read in (team, learners):  # warm
        await rate_of(read, plan.read_clients, 0.3)
    sides: dict[str, list[float]] = {"team": [], "learners": []}
    for r in range(rounds * 2):
        side = "team" if r % 4 in (1, 2) else "learners"
        sides[side].append(await rate_of(team if side == "team" else learners,
                                         plan.read_clients, plan.read_seconds))
    ratios = [t / b for t, b in zip(sides["team"], sides["learners"], strict=True)]
    t, b = statistics.median(sides["team"]), statistics.median(sides["learners"])
    log(f"  {name}: teams {t:,.0f}/s, learners' board {b:,.0f}/s (ratio {t / b:.2f})")
    return t, b, ratios


async def read(plan: Plan, svc: Services, week: Season, stores: Stores,
               figures: list[Figure], out: dict[str, Any]) -> None:
    async def team_page() -> None:
        body, _ = await svc.team_reads.page("classes", week, 0, TOP, None)
        if len(body["entries"]) != min(TOP, plan.teams):
            raise BenchError(f"a team page of {len(body['entries'])} entries")

    async def learners_page() -> None:
        body = await svc.reads.top(week, TOP)
        if len(body["entries"]) != TOP:
            raise BenchError(f"a learners' page of {len(body['entries'])} entries")

    t, b, ratios = await alternating("services, uncached", team_page, learners_page, plan)
    figures.append(Figure(
        "top-100 reads of teams, services uncached (/s)", t, b,
        "the learners' board's top 100 (Reads.top), the same way", "reads/s",
        goal="ratio >= 0.8",
        context=f"TeamReads.page vs Reads.top, {plan.read_clients} callers; rounds' ratios "
                + ", ".join(f"{x:.2f}" for x in ratios)))
    out["reads"] = {"services": {"team": t, "learners": b, "ratios": ratios}}

    rt = runtime(*stores)  # the app `laurels serve` runs, in process
    app = create_app(rt, migrate=False)
    async with app.router.lifespan_context(app):
        tune_collector()
        transport = httpx.ASGITransport(app=serving_app(app))
        token = mint(rt.secrets.user_token_secret, 2, 3600)  # learner 2: a member of c0
        for who, headers in (("no token", {}),
                             ("a learner's token", {"Authorization": f"Bearer {token}"})):
            async with httpx.AsyncClient(transport=transport, base_url=BASE_URL,
                                         headers=headers) as client:
                async def get(path: str, c: httpx.AsyncClient = client) -> None:
                    resp = await c.get(path, params={"limit": TOP})
                    if resp.status_code != 200:
                        raise BenchError(f"GET {path}: {resp.status_code} {resp.text[:200]}")

                async def team_http() -> None:
                    await get(f"/v1/teams/classes/leaderboards/{week.name}")

                async def learners_http() -> None:
                    await get(f"/v1/leaderboards/{week.name}")

                t, b, ratios = await alternating(f"HTTP, {who}", team_http, learners_http,
                                                 plan)
                kept = ("both pages kept by the process until a hint" if who == "no token"
                        else "the team page computed for the learner (members-only rule), "
                             "the learners' page as kept")
                figures.append(Figure(
                    f"top-100 reads of teams, HTTP in process, {who} (/s)", t, b,
                    "GET /v1/leaderboards/{season}?limit=100, the same way", "req/s",
                    goal="ratio >= 0.8",
                    context=f"GET /v1/teams/classes/leaderboards/{{season}}?limit=100, "
                            f"{plan.read_clients} callers through httpx.ASGITransport; {kept}"
                            "; rounds' ratios " + ", ".join(f"{x:.2f}" for x in ratios)))
                out["reads"][f"http {who}"] = {"team": t, "learners": b, "ratios": ratios}


# -- the run -------------------------------------------------------------------------


async def verified(svc: Services, week: Season, out: dict[str, Any]) -> None:
    await svc.projector.drain(min_age_seconds=0)
    for kind in LETTERS:
        started = time.perf_counter()
        check = await svc.team_checker.verify(kind, week)
        seconds = time.perf_counter() - started
        if not check.consistent:
            raise BenchError(f"verify of {kind}: {check.mismatch_count} mismatches, "
                             f"{[m.difference for m in check.mismatches[:3]]}")
        log(f"  verify of {kind}: {check.players_checked:,} teams consistent ({seconds:.1f} s)")
        out.setdefault("verify_seconds", {})[kind] = seconds


async def measure(plan: Plan, url: str, redis_url: str, prefix: str, figures: list[Figure],
                  out: dict[str, Any]) -> None:
    week = season_of(datetime.now(UTC) - timedelta(days=7), "week", zone="UTC")
    await migrate(url)
    rt = runtime(url, redis_url, prefix)
    await rt.open(run_migrations=False)
    r = aioredis.from_url(redis_url)
    try:
        svc: Services = rt  # (a Runtime is its services)
        log(f"loading {plan.learners:,} learners in {plan.teams:,} teams of {plan.size} of "
            f"each of 2 kinds, and {plan.loose:,} in none; week {week.name}")
        out["load_seconds"] = await load(url, plan, week, svc)
        rebuild = await built(svc, week, plan)
        log("the first read of each kind's board fills it")
        await filled(svc, week, plan, rebuild, r, figures, out)
        log(f"apply: {plan.rounds} rounds a side of {plan.batches} batches of {plan.batch:,}")
        await applied(svc, week, plan, r, figures, out)
        log(f"reads: the top {TOP}, {plan.read_clients} callers, {plan.read_seconds:.0f} s "
            "a round")
        await read(plan, svc, week, Stores(url, redis_url, prefix), figures, out)
        if plan.verify:
            log("verify of both team boards")
            await verified(svc, week, out)
    finally:
        await r.aclose()
        await rt.close()


def parse(argv: list[str] | None) -> Plan:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--learners", type=int, default=30_000,
                   help="learners in teams (default 30,000; the issue's 3,000,000)")
    p.add_argument("--teams", type=int, default=1_000,
                   help="teams of each kind (default 1,000; the issue's 100,000)")
    p.add_argument("--houses", choices=("sum", "mean", "top"), default="top",
                   help=f"the second kind's aggregate (default top, of {HOUSES_TOP}: the "
                        "costliest; the first kind's is sum)")
    p.add_argument("--loose", type=int, default=None,
                   help="learners in no team (default a tenth of --learners, at least 10,000)")
    p.add_argument("--batch", type=int, default=1_000, help="completions a batch (1,000)")
    p.add_argument("--batches", type=int, default=3, help="batches a round (3)")
    p.add_argument("--rounds", type=int, default=6, help="apply rounds of each side (6)")
    p.add_argument("--read-seconds", type=float, default=2.0, help="a read round (2 s)")
    p.add_argument("--read-clients", type=int, default=8, help="concurrent readers (8)")
    p.add_argument("--no-verify", action="store_true", help="skip verify at the end")
    p.add_argument("--json", type=Path, help="write the figures there")
    args = p.parse_args(argv)
    loose = args.loose if args.loose is not None else max(10_000, args.learners // 10)
    if args.teams < 1 or args.learners < args.teams or args.learners % args.teams:
        p.error("give --learners a multiple of --teams")
    for n, what in ((args.learners, "--learners"), (loose, "--loose")):
        if math.gcd(STEP, n) != 1:
            p.error(f"give {what} prime to {STEP}")
        if n < args.batch:
            p.error(f"give {what} at least --batch")
    return Plan(args.learners, args.teams, args.houses, loose, args.batch, args.batches,
                args.rounds, args.read_seconds, args.read_clients, not args.no_verify,
                args.json)


def main(argv: list[str] | None = None) -> int:
    plan = parse(argv)
    started = time.perf_counter()
    figures: list[Figure] = []
    out: dict[str, Any] = {}

    async def work(url: str, redis_url: str, prefix: str) -> None:
        await measure(plan, url, redis_url, prefix, figures, out)

    ok = scratch_run("teams", work)
    if not ok:
        return 1
    seconds = time.perf_counter() - started
    print_table(f"team boards: {plan.teams:,} teams of {plan.size} of each of 2 kinds over "
                f"{plan.learners:,} learners, {plan.loose:,} more in none ({seconds:.0f} s)",
                figures)
    if plan.json is not None:
        out.update({"when": datetime.now(UTC).isoformat(timespec="seconds"),
                    "cpus": os.cpu_count(), "seconds": round(seconds),
                    "command": "bench/teams.py " + " ".join(
                        sys.argv[1:] if argv is None else argv),
                    "plan": {"learners": plan.learners, "teams": plan.teams,
                             "houses": plan.aggregate("houses"),
                             "loose": plan.loose, "batch": plan.batch,
                             "batches": plan.batches, "rounds": plan.rounds},
                    "figures": [f.row() for f in figures]})
        dump_json(plan.json, out)
        log(f"results written to {plan.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
