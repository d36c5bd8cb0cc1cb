"""The bench's measurements: each returns figures, each figure a value and a
baseline measured in the same run (bench/README.md says why)."""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import httpx
import jwt
import orjson
import psutil
import psycopg
import redis.asyncio as aioredis

from bench.support import (
    RAW_TABLES,
    BenchError,
    Load,
    Service,
    every_learner_lua,
    log,
    percentile,
    raw_batch,
    wrk,
)
from laurels.core.seasons import parse_season


@dataclass
class Figure:
    name: str
    value: float
    baseline: float
    baseline_is: str
    unit: str
    higher_is_better: bool = True
    goal: str = ""
    context: str = ""  # the CPU split, or what else explains the figure

    @property
    def ratio(self) -> float:
        return self.value / self.baseline if self.baseline else float("nan")

    def row(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


def print_table(title: str, figures: list[Figure]) -> None:
    """The run's figures as the bench prints them: value, baseline, ratio."""
    print()
    print(title)
    width = max(len(f.name) for f in figures)
    for f in figures:
        print(f"  {f.name:<{width}}  {f.value:>12,.2f}  {f.baseline:>12,.2f}  "
              f"{f.ratio:>7.2f}  {f.baseline_is}"
              + (f"  [goal {f.goal}]" if f.goal else "")
              + (f"  ({f.context})" if f.context else ""))


@dataclass
class Setup:
    """One board size: a season of its own in the bench's database."""

    admin_url: str
    database_url: str
    redis_url: str
    svc: Service
    bare_url: str
    bare_pid: int
    learners: int
    completions: int
    season: str
    run_id: str
    figures: list[Figure] = field(default_factory=list)

    @property
    def auth(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.svc.admin_token}"}


# -- the data -------------------------------------------------------------------------


async def load_season(s: Setup) -> None:
    """`completions` rows over `learners` learners, written straight into
    PostgreSQL (no board yet: the rebuild builds it)."""
    start = parse_season(s.season, zone="UTC").starts_at
    async with await psycopg.AsyncConnection.connect(s.database_url, autocommit=True) as conn:
        await conn.execute(
            "INSERT INTO users (user_id) SELECT g FROM generate_series(1, %s) g "
            "ON CONFLICT DO NOTHING", (s.learners,))
        await conn.execute("INSERT INTO seasons (season) VALUES (%s) ON CONFLICT DO NOTHING",
                           (s.season,))
        last = start + timedelta(seconds=min(s.completions, 600_000))
        await conn.execute(  # the months' partitions first, as the service makes them
            "SELECT laurels_completions_partition(m::date) FROM generate_series("
            "date_trunc('month', %s::timestamptz AT TIME ZONE 'UTC'), "
            "%s::timestamptz AT TIME ZONE 'UTC', interval '1 month') m", (start, last))
        await conn.execute(
            "INSERT INTO completions (completion_id, user_id, points, completed_at, "
            "received_at, season) SELECT %s || g, 1 + (g * 7919) %% %s, 1 + g %% 10, "
            "%s + (g %% 600000) * interval '1 second', now(), %s "
            "FROM generate_series(1::bigint, %s::bigint) g",
            (f"{s.season}-", s.learners, start, s.season, s.completions))
        await conn.execute(
            "INSERT INTO completion_ids (completion_id, seq, completed_at) "
            "SELECT completion_id, seq, completed_at FROM completions WHERE season = %s",
            (s.season,))
        await conn.execute("ANALYZE completions")


# -- rebuild ----------------------------------------------------------------------------


async def rebuild(s: Setup) -> None:
    """A rebuild of the whole season (the recovery time after a Redis loss)
    against reading its rows out with COPY and a pipelined ZINCRBY per row."""
    async with httpx.AsyncClient(base_url=s.svc.base_url, headers=s.auth, timeout=60,
                                 trust_env=False) as c:
        started = time.perf_counter()
        resp = await c.post(f"/v1/admin/leaderboards/{s.season}/rebuild")
        if resp.status_code != 202:
            raise BenchError(f"rebuild answered {resp.status_code}: {resp.text[:200]}")
        rebuild_id = resp.json()["rebuild_id"]
        while True:
            status = (await c.get(f"/v1/admin/rebuilds/{rebuild_id}")).json()
            if status["status"] != "running":
                break
            await asyncio.sleep(0.05)
        seconds = time.perf_counter() - started
        if status["status"] != "succeeded" or status["events"] != s.completions:
            raise BenchError(f"rebuild ended {status}")
    baseline = await copy_and_zincrby(s)
    per_million = seconds / s.completions * 1_000_000
    s.figures.append(Figure(
        "rebuild of the season (completions/s)", s.completions / seconds,
        s.completions / baseline, "COPY the rows out + pipelined ZINCRBY per row",
        "completions/s", goal=">= 1.0",
        context=f"{seconds:.1f} s; {per_million:.1f} s per million completions"))


async def copy_and_zincrby(s: Setup) -> float:
    r = aioredis.from_url(s.redis_url, socket_timeout=60)
    key = f"bench{s.run_id}:copy-zset"
    started = time.perf_counter()
    pipe, pending = r.pipeline(transaction=False), 0
    async with await psycopg.AsyncConnection.connect(s.database_url) as conn:
        cur = conn.cursor()
        async with cur.copy("COPY (SELECT user_id, points FROM completions WHERE season = %s) "
                            "TO STDOUT", (s.season,)) as copy:
            async for row in copy.rows():
                pipe.zincrby(key, int(row[1]), row[0])
                pending += 1
                if pending == 1000:
                    await pipe.execute()
                    pending = 0
    if pending:
        await pipe.execute()
    seconds = time.perf_counter() - started
    await r.unlink(key)
    await r.aclose()
    return seconds


# -- memory -----------------------------------------------------------------------------


async def memory(s: Setup, prefix: str) -> None:
    r = aioredis.from_url(s.redis_url, decode_responses=True)
    base = f"{prefix}:{{weekly:{s.season}}}:shared"
    current = await r.get(f"{base}:current")
    v = f"{base}:v{current}"
    zset = int(await r.memory_usage(f"{v}:public", samples=0) or 0)
    users = int(await r.memory_usage(f"{v}:users", samples=0) or 0)
    chunks = await r.smembers(f"{v}:chunks")
    bits = 0
    for chunk in chunks:
        bits += int(await r.memory_usage(f"{v}:applied:{chunk}", samples=0) or 0)
    # With names: 10,000 of the same learners' profile entries as they would
    # be with a 12-character name (a learner with the default profile has no
    # entry under `shared`: _common.lua), against their entries as they are.
    sample = min(s.learners, 10_000)
    plain, named = f"bench{s.run_id}:plain", f"bench{s.run_id}:named"
    members = await r.zrange(f"{v}:public", 0, sample - 1)
    stored = await r.hmget(f"{v}:users", members) if members else []
    rows = {m: p for m, p in zip(members, stored, strict=True) if p}
    if rows:
        await r.hset(plain, mapping=rows)
    await r.hset(named, mapping={m: (p or "1\tpublic\t-\t") + "Learner-name"
                                 for m, p in zip(members, stored, strict=True)})
    plain_size = int(await r.memory_usage(plain, samples=0) or 0)
    named_size = int(await r.memory_usage(named, samples=0) or 0)
    await r.unlink(plain, named)
    await r.aclose()
    per_learner = (zset + users) / s.learners
    with_names = per_learner + (named_size - plain_size) / max(1, len(members))
    s.figures.append(Figure(
        "Redis memory per learner, zset + profile, no name (bytes)", per_learner, 100,
        "the goal: 100 bytes", "bytes", higher_is_better=False, goal="<= 1.0",
        context=f"zset {zset / s.learners:.0f} B + profile {users / s.learners:.0f} B; "
                f"with a 12-character name {with_names:.0f} B"))
    s.figures.append(Figure(
        "idempotency record per completion (bytes)", bits / s.completions, 48,
        "the seed's SADD of string ids (~48 B measured)", "bytes", higher_is_better=False,
        goal="<= 1 B"))


# -- reads ------------------------------------------------------------------------------


def learner_token(s: Setup, user_id: int) -> str:
    return jwt.encode({"sub": str(user_id), "exp": int(time.time()) + 3600},
                      s.svc.user_secret, algorithm="HS256")


def reads(s: Setup, seconds: float) -> dict[str, Load]:
    """wrk against the bare app's /healthz, then laurels' /healthz, top-100 and
    around-me (one learner again and again, as a page reloads between
    changes; then every learner in turn), in turn, twice; the better of the
    two rounds counts."""
    base = s.svc.base_url
    mid = s.learners // 2
    token = learner_token(s, mid)
    paths = {
        "bare": (f"{s.bare_url}/healthz", s.bare_pid, []),
        "healthz": (f"{base}/healthz", s.svc.proc.pid, []),
        "top": (f"{base}/v1/leaderboards/{s.season}?limit=100", s.svc.proc.pid, []),
        "around": (f"{base}/v1/leaderboards/{s.season}/users/{mid}?radius=5", s.svc.proc.pid,
                   [f"Authorization: Bearer {token}"]),
    }
    check = httpx.get(paths["around"][0], headers={"authorization": f"Bearer {token}"})
    if check.status_code != 200:
        raise BenchError(f"around-me answered {check.status_code}: {check.text[:200]}")
    # Every learner in turn: no read comes from the cache (support.every_learner_lua).
    scripts = {"around_all": every_learner_lua(
        s.svc.log_path.with_name(f"around-{s.season}.lua"), s.season, s.learners,
        s.svc.admin_token)}
    # The bare app answering a body of the top-100's size: what the bytes cost.
    size = len(httpx.get(paths["top"][0]).content)
    paths["bare_top"] = (f"{s.bare_url}/bytes/{size}", s.bare_pid, [])
    paths["around_all"] = (f"{base}/v1/leaderboards/{s.season}/users/1?radius=5",
                           s.svc.proc.pid, [])
    best: dict[str, Load] = {}
    for round_ in range(2):
        for name, (url, pid, headers) in paths.items():
            log(f"reads, round {round_ + 1}/2: {name}")
            load = wrk(url, pid, seconds, headers=headers, script=scripts.get(name))
            if load.errors:
                raise BenchError(f"{load.errors} non-2xx answers from {url}")
            if name not in best or load.rps > best[name].rps:
                best[name] = load
    h, t, a, b = best["healthz"], best["top"], best["around"], best["bare"]
    s.figures += [
        Figure("GET /healthz (req/s)", h.rps, b.rps, "a plain ASGI app, same uvicorn",
               "req/s", goal=">= 0.9", context=str(h.cpu)),
        Figure("top-100 reads (req/s)", t.rps, h.rps, "GET /healthz, same server", "req/s",
               goal=">= 0.8", context=str(t.cpu)),
        Figure("top-100 read latency p99 (ms)", t.p99, h.p99, "GET /healthz p99", "ms",
               higher_is_better=False, goal="<= 2.0"),
        Figure("bare app, a body of the top-100's size (req/s)", best["bare_top"].rps, b.rps,
               "the bare app's /healthz", "req/s",
               context=f"{size:,} bytes: what the top-100's bytes cost the same uvicorn; "
                       f"{best['bare_top'].cpu}"),
        Figure("around-me reads (req/s)", a.rps, h.rps, "GET /healthz, same server", "req/s",
               goal=">= 0.5", context=str(a.cpu)),
        Figure("around-me latency p99 (ms)", a.p99, h.p99, "GET /healthz p99", "ms",
               higher_is_better=False),
        Figure("around-me reads, every learner in turn (req/s)", best["around_all"].rps,
               h.rps, "GET /healthz, same server", "req/s",
               context=f"each learner once a pass over {s.learners:,}, radius 0..10 by pass: "
                       f"no read from the cache; "
                       f"p99 {best['around_all'].p99:.1f} ms; {best['around_all'].cpu}"),
    ]
    return best


GROUP_SIZES = (30, 1_000, 100_000)


async def groups(s: Setup, top: Load, seconds: float) -> None:
    """Group boards (computed at read time from the season's board) of 30,
    1,000 and 100,000 members against the whole board's top-100 of the same
    run; a friends board of 1,000 ids."""
    base, pid = s.svc.base_url, s.svc.proc.pid
    headers = [f"Authorization: Bearer {s.svc.admin_token}"]
    rnd = random.Random(s.learners)
    async with httpx.AsyncClient(base_url=base, headers=s.auth, timeout=120) as c:
        for size in GROUP_SIZES:
            if size > s.learners:
                continue
            gid = f"bench-{size}"
            await c.put(f"/v1/groups/{gid}", json={})
            members = rnd.sample(range(1, s.learners + 1), size)
            for i in range(0, size, 10_000):
                resp = await c.post(f"/v1/groups/{gid}/members",
                                    json={"add": members[i:i + 10_000]})
                if resp.status_code != 200:
                    raise BenchError(f"members answered {resp.status_code}: {resp.text[:200]}")
            url = f"{base}/v1/groups/{gid}/leaderboards/{s.season}?limit=100"
            log(f"group board of {size:,} members")
            load = await asyncio.to_thread(wrk, url, pid, seconds, 32 if size < 10_000 else 4,
                                           headers)
            if load.errors:
                raise BenchError(f"{load.errors} non-2xx answers from {url}")
            s.figures.append(Figure(
                f"group top-100, {size:,} members (req/s)", load.rps, top.rps,
                "the whole board's top-100, same run", "req/s",
                goal=">= 0.5" if size == 1_000 else "",
                context=f"cached per process; p99 {load.p99:.1f} ms; {load.cpu}"))
            group_ms = await _uncached_ms(c, f"/v1/groups/{gid}/leaderboards/{s.season}")
            board_ms = await _uncached_ms(c, f"/v1/leaderboards/{s.season}")
            s.figures.append(Figure(
                f"group top-100, {size:,} members, one uncached read (ms)", group_ms,
                board_ms, "one uncached read of the whole board's top-100", "ms",
                higher_is_better=False))
    friends = rnd.sample(range(1, s.learners + 1), min(1_000, s.learners))
    script = s.svc.log_path.with_name(f"friends-{s.season}.lua")
    body = json.dumps({"user_ids": friends})
    script.write_text(
        'request = function()\n'
        '  return wrk.format("POST", nil, {["Content-Type"]="application/json", '
        f'["Authorization"]="Bearer {s.svc.admin_token}"}}, \'{body}\')\n'
        'end\n')
    log("friends board of 1,000 ids")
    load = await asyncio.to_thread(wrk, f"{base}/v1/leaderboards/{s.season}/ranks", pid,
                                   seconds, 8, (), str(script))
    if load.errors:
        raise BenchError(f"{load.errors} non-2xx answers from the friends board")
    s.figures.append(Figure(
        "friends board of 1,000 ids (req/s)", load.rps, top.rps,
        "the whole board's top-100, same run", "req/s",
        context=f"p99 {load.p99:.1f} ms; {load.cpu}"))


async def _uncached_ms(c: httpx.AsyncClient, path: str) -> float:
    """The median of 15 reads, each with a limit of its own: each a cache miss."""
    timings = []
    for limit in range(140, 155):
        started = time.perf_counter()
        resp = await c.get(path, params={"limit": limit})
        timings.append((time.perf_counter() - started) * 1000)
        if resp.status_code != 200:
            raise BenchError(f"{path} answered {resp.status_code}")
    return statistics.median(timings)


async def sql_rank(s: Setup) -> None:
    """One uncached top-100 read against the SQL a user would write instead."""
    sql = ("SELECT user_id, score, rank() OVER (ORDER BY score DESC) FROM ("
           "SELECT user_id, sum(points) AS score FROM completions WHERE season = %s "
           "GROUP BY user_id) t ORDER BY score DESC LIMIT 100")
    async with await psycopg.AsyncConnection.connect(s.database_url) as conn:
        timings = []
        for _ in range(3):
            started = time.perf_counter()
            await (await conn.execute(sql, (s.season,))).fetchall()
            timings.append(time.perf_counter() - started)
    async with httpx.AsyncClient(base_url=s.svc.base_url, trust_env=False, timeout=30) as c:
        reads_ms = []
        for limit in range(100, 120):  # each limit its own cache entry: every read is a miss
            started = time.perf_counter()
            resp = await c.get(f"/v1/leaderboards/{s.season}", params={"limit": limit})
            reads_ms.append(time.perf_counter() - started)
            if resp.status_code != 200:
                raise BenchError(f"top read answered {resp.status_code}")
    s.figures.append(Figure(
        "top-100, one uncached read vs SQL rank() (x faster)",
        statistics.median(timings) / statistics.median(reads_ms), 100,
        "the goal: 100 times faster", "x", goal=">= 1.0",
        context=f"read {statistics.median(reads_ms) * 1000:.1f} ms, "
                f"SQL {statistics.median(timings) * 1000:.0f} ms"))


# -- ingest -----------------------------------------------------------------------------


def _ingest_chunks(s: Setup, tag: str, count: int, batch: int
                   ) -> list[list[tuple[str, int, int, datetime]]]:
    start = parse_season(s.season, zone="UTC").starts_at
    items = [(f"{tag}{s.run_id}-{s.season}-{i}", 1 + (i * 104729) % s.learners, 1 + i % 10,
              start + timedelta(seconds=i % 600_000)) for i in range(count)]
    return [items[i:i + batch] for i in range(0, count, batch)]


def batch_bodies(chunks: list[list[tuple[str, int, int, datetime]]]) -> list[bytes]:
    return [orjson.dumps({"completions": [
        {"completion_id": cid, "user_id": uid, "points": pts, "completed_at": at.isoformat()}
        for cid, uid, pts, at in chunk]}) for chunk in chunks]


async def timed_batches(svc: Service, bodies: list[bytes], clients: int
                        ) -> tuple[float, float]:
    """Seconds to post these batches, and the server's cores meanwhile."""
    server = psutil.Process(svc.proc.pid)
    t0, started = server.cpu_times(), time.perf_counter()
    await api_batches(svc, bodies, clients)
    seconds = time.perf_counter() - started
    t1 = server.cpu_times()
    return seconds, (t1.user + t1.system - t0.user - t0.system) / seconds


async def ingest(s: Setup, count: int, clients: int = 4, batch: int = 1000) -> None:
    """Durable batch ingest against the same rows inserted raw (a completions
    table and an outbox, one transaction per batch), then single POSTs."""
    chunks = _ingest_chunks(s, "i", count, batch)
    async with await psycopg.AsyncConnection.connect(s.database_url, autocommit=True) as c:
        for ddl in RAW_TABLES:
            await c.execute(ddl)
    raw_seconds = await raw_insert(s.database_url, chunks, clients)
    seconds, cores = await timed_batches(s.svc, batch_bodies(chunks), clients)
    s.figures.append(Figure(
        "durable batch ingest (completions/s)", count / seconds, count / raw_seconds,
        "raw batched INSERT + outbox row, same rows", "completions/s", goal=">= 0.5",
        context=f"batches of {batch}, {clients} clients; server {cores:.2f} cores"))
    load = await single_posts(s, s.svc.base_url, s.svc.proc.pid, "p")
    base = await single_posts(s, s.bare_url, s.bare_pid, "b")
    health = await asyncio.to_thread(wrk, f"{s.svc.base_url}/healthz", s.svc.proc.pid, 5.0)
    s.figures.append(Figure(
        "single POST /v1/completions (req/s)", load.rps, base.rps,
        "single-row INSERT + outbox row per request, plain ASGI app", "req/s", goal=">= 0.5",
        context=f"16 connections; p99 {load.p99:.1f} ms (baseline {base.p99:.1f} ms); "
                f"{load.rps / health.rps:.2f} of /healthz; {load.cpu}"))


async def single_posts(s: Setup, base_url: str, pid: int, tag: str) -> Load:
    """wrk posting one new completion per request to `base_url`."""
    start = parse_season(s.season, zone="UTC").starts_at
    script = s.svc.log_path.with_name(f"single-{tag}-{s.season}.lua")
    script.write_text(
        'counter = 0\n'
        'request = function()\n'
        '  counter = counter + 1\n'
        f'  local body = string.format(\'{{"completion_id":"{tag}{s.run_id}{s.season}-%d",'
        f'"user_id":%d,"points":1,"completed_at":"{start.isoformat()}"}}\', counter, '
        f'1 + counter % {s.learners})\n'
        '  return wrk.format("POST", "/v1/completions", '
        '{["Content-Type"]="application/json", '
        f'["Authorization"]="Bearer {s.svc.ingest_token}"}}, body)\n'
        'end\n')
    load = await asyncio.to_thread(_wrk_script, f"{base_url}/v1/completions", pid, str(script))
    if load.errors:
        raise BenchError(f"{load.errors} single posts to {base_url} failed")
    return load


GROUPS_PER_LEARNER, CLASS_SIZE = 3, 30
WATCHED_GROUPS = 200


async def group_writes(s: Setup, count: int, clients: int = 4, batch: int = 1000) -> None:
    """The write cost of groups: the batch ingest with every learner in 3
    classes of 30, 200 of them with a cached board (so this process indexes
    their members), against the mean of the same ingest just before the
    groups exist and just after their members are removed (A/B/A, so drift
    within the run cancels). And what the materialized design would pay
    instead: an apply script that also increments each learner's 3 group
    sets, against the same script on the season's set alone (raw EVALSHA)."""
    classes = s.learners * GROUPS_PER_LEARNER // CLASS_SIZE
    before, _ = await timed_batches(s.svc, batch_bodies(_ingest_chunks(s, "h", count, batch)),
                                     clients)
    async with await psycopg.AsyncConnection.connect(s.database_url, autocommit=True) as c:
        await c.execute("INSERT INTO groups (group_id, name, access) "
                        "SELECT 'bench-' || %(l)s || '-c' || g, 'class ' || g, 'public' "
                        "FROM generate_series(0, %(n)s - 1) g "
                        "ON CONFLICT DO NOTHING", {"n": classes, "l": s.learners})
        # Learner u sits in classes (u + k * n/3) mod n for k = 0, 1, 2: 30 each.
        await c.execute("INSERT INTO group_members (group_id, user_id) "
                        "SELECT 'bench-' || %(l)s || '-c' || ((u + k * %(n)s / 3) %% %(n)s), u "
                        "FROM generate_series(1, %(l)s) u, "
                        "generate_series(0, 2) k ON CONFLICT DO NOTHING",
                        {"n": classes, "l": s.learners})
    async with httpx.AsyncClient(base_url=s.svc.base_url, timeout=60, trust_env=False) as c:
        for g in range(min(WATCHED_GROUPS, classes)):
            resp = await c.get(f"/v1/groups/bench-{s.learners}-c{g}/leaderboards/{s.season}")
            if resp.status_code != 200:
                raise BenchError(f"class board answered {resp.status_code}")
    chunks = _ingest_chunks(s, "g", count, batch)
    seconds, cores = await timed_batches(s.svc, batch_bodies(chunks), clients)
    async with await psycopg.AsyncConnection.connect(s.database_url, autocommit=True) as c:
        await c.execute("DELETE FROM group_members WHERE group_id LIKE %s",
                        (f"bench-{s.learners}-c%",))
    after, _ = await timed_batches(s.svc, batch_bodies(_ingest_chunks(s, "k", count, batch)),
                                    clients)
    s.figures.append(Figure(
        f"batch ingest, every learner in {GROUPS_PER_LEARNER} groups (completions/s)",
        count / seconds, 2 * count / (before + after),
        "the same ingest without groups, just before and after (mean)",
        "completions/s", goal=">= 0.9",
        context=f"{classes:,} classes of {CLASS_SIZE}, {WATCHED_GROUPS} of them cached; "
                f"server {cores:.2f} cores"))
    season_only, materialized = await _materialized_apply(s, count, classes)
    s.figures.append(Figure(
        f"materialized alternative: apply + {GROUPS_PER_LEARNER} group sets "
        "(increments/s)", materialized, season_only,
        "the same script on the season's set alone (raw EVALSHA)", "increments/s",
        context="the write amplification computing group boards at read time avoids"))


async def periods(s: Setup, count: int, one: Service, four: Service, prefix4: str) -> None:
    """Ingest with LAURELS_PERIODS=week,day,month,all against week alone: two
    fresh services of their own (databases and key prefixes), the same
    batches to each, alternating (one, four, one, four) so drift cancels.
    Then the all-time board's Redis memory per learner."""
    rates: dict[str, list[float]] = {"one": [], "four": []}
    cores: list[float] = []
    for tag in ("q", "r"):
        bodies = batch_bodies(_ingest_chunks(s, tag, count // 2, 1000))
        for name, svc in (("one", one), ("four", four)):
            seconds, used = await timed_batches(svc, bodies, 4)
            rates[name].append(count // 2 / seconds)
            if name == "four":
                cores.append(used)
    four_rate, one_rate = statistics.mean(rates["four"]), statistics.mean(rates["one"])
    s.figures.append(Figure(
        "batch ingest, 4 periods (completions/s)", four_rate, one_rate,
        "the same ingest with the week alone (fresh services, alternating)", "completions/s",
        context=f"each completion on 4 boards: week, day, month, all; "
                f"server {statistics.mean(cores):.2f} cores"))
    r = aioredis.from_url(s.redis_url, decode_responses=True)
    try:
        base = f"{prefix4}:{{all}}:shared"
        v = f"{base}:v{await r.get(f'{base}:current')}"
        learners = int(await r.zcard(f"{v}:public"))
        zset = int(await r.memory_usage(f"{v}:public", samples=0) or 0)
        users = int(await r.memory_usage(f"{v}:users", samples=0) or 0)
    finally:
        await r.aclose()
    if not learners:
        raise BenchError("the all-time board is empty")
    s.figures.append(Figure(
        "all-time board, Redis memory per learner (bytes)", (zset + users) / learners, 100,
        "the goal: 100 bytes", "bytes", higher_is_better=False, goal="<= 1.0",
        context=f"{learners:,} learners; zset {zset / learners:.0f} B + profile "
                f"{users / learners:.0f} B (under `shared`, none for a default profile)"))


MATERIALIZED = """
local season = KEYS[1]
for i = 1, #ARGV, 2 do
  local uid, points = ARGV[i], tonumber(ARGV[i + 1])
  redis.call('ZINCRBY', season, -points, uid)
  if #KEYS > 1 then
    for _, g in ipairs(redis.call('SMEMBERS', KEYS[2] .. uid)) do
      redis.call('ZINCRBY', KEYS[2] .. 'g:' .. g, -points, uid)
    end
  end
end
return 1
"""


async def _materialized_apply(s: Setup, count: int, classes: int) -> tuple[float, float]:
    """Increments/s of a batch apply script (500 per call) on the season's set
    alone, and with each learner's groups kept materialized."""
    r = aioredis.from_url(s.redis_url, socket_timeout=60)
    base = f"bench{s.run_id}:{{mat}}:"
    try:
        pipe = r.pipeline(transaction=False)
        for uid in range(1, s.learners + 1):
            pipe.sadd(f"{base}{uid}", *((uid + k * classes // 3) % classes
                                        for k in range(GROUPS_PER_LEARNER)))
            if uid % 5000 == 0:
                await pipe.execute()
        await pipe.execute()
        script = r.register_script(MATERIALIZED)
        args = [v for i in range(count) for v in (1 + (i * 104729) % s.learners, 1 + i % 10)]
        rates = []
        for keys in ([f"{base}season"], [f"{base}season", base]):
            started = time.perf_counter()
            for i in range(0, len(args), 1000):
                await script(keys=keys, args=args[i:i + 1000])
            rates.append(count / (time.perf_counter() - started))
        return rates[0], rates[1]
    finally:
        async for key in r.scan_iter(match=f"{base}*", count=1000):
            await r.unlink(key)
        await r.aclose()


def _wrk_script(url: str, pid: int, script: str) -> Load:
    return wrk(url, pid, 5.0, 16, script=script)


async def raw_insert(database_url: str, chunks: list[list[tuple[str, int, int, datetime]]],
                     clients: int) -> float:
    conns = [await psycopg.AsyncConnection.connect(database_url, autocommit=True)
             for _ in range(clients)]
    pending = iter(chunks)

    async def work(conn: psycopg.AsyncConnection[Any]) -> None:
        for rows in pending:
            await raw_batch(conn, rows)

    started = time.perf_counter()
    await asyncio.gather(*(work(c) for c in conns))
    seconds = time.perf_counter() - started
    for c in conns:
        await c.close()
    return seconds


async def api_batches(svc: Service, bodies: list[bytes], clients: int) -> None:
    pending = iter(bodies)
    headers = {"authorization": f"Bearer {svc.ingest_token}",
               "content-type": "application/json"}

    async def work() -> None:
        async with httpx.AsyncClient(base_url=svc.base_url, headers=headers, timeout=120,
                                     trust_env=False) as c:
            for body in pending:
                resp = await c.post("/v1/completions/batch", content=body)
                if resp.status_code != 200:
                    raise BenchError(f"batch answered {resp.status_code}: {resp.text[:200]}")
                if any(r["status"] != "recorded" for r in resp.json()["results"]):
                    raise BenchError("a batch item was not recorded")

    await asyncio.gather(*(work() for _ in range(clients)))


# -- live viewers ---------------------------------------------------------------------


async def viewers(s: Setup, count: int) -> None:
    """`count` SSE viewers of the season, each refetching the top 100 on every
    hint (as the live page does): from a completion's 201 to the hint at each
    viewer, and to the last viewer holding a board that includes it."""
    newcomer = s.learners + 7
    url = s.svc.base_url
    ready, settled = asyncio.Event(), [0]
    hinted: list[float] = []
    fetched: list[float] = []
    sent = [0.0]
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one() -> None:
            async with session.get(f"{url}/v1/leaderboards/{s.season}/events") as resp:
                async for raw in resp.content:
                    line = raw.strip()
                    if line == b"event: ready":
                        settled[0] += 1
                        if settled[0] == count:
                            ready.set()
                    elif line == b"event: changed" and sent[0]:
                        hinted.append(time.perf_counter() - sent[0])
                        async with session.get(f"{url}/v1/leaderboards/{s.season}",
                                               params={"limit": "100"}) as board:
                            body = await board.json()
                        if any(e["user_id"] == newcomer for e in body["entries"]):
                            fetched.append(time.perf_counter() - sent[0])
                            return

        tasks = [asyncio.create_task(one()) for _ in range(count)]
        await asyncio.wait_for(ready.wait(), 180)
        sent[0] = time.perf_counter()
        async with session.post(f"{url}/v1/completions",
                                headers={"authorization": f"Bearer {s.svc.ingest_token}"},
                                json={"completion_id": f"v{s.run_id}{s.season}{count}",
                                      "user_id": newcomer, "points": 10_000_000 // 10,
                                      "completed_at": parse_season(s.season, zone="UTC").starts_at
                                      .isoformat()}) as resp:
            if resp.status != 201:
                raise BenchError(f"the viewers' completion answered {resp.status}")
        await asyncio.wait_for(asyncio.gather(*tasks), 180)
    s.figures.append(Figure(
        f"hint to {count} SSE viewers, p99 (ms)", percentile(hinted, 99) * 1000, 1000,
        "the goal: 1 s", "ms", higher_is_better=False, goal="<= 1.0",
        context=f"p50 {percentile(hinted, 50) * 1000:.0f} ms"))
    s.figures.append(Figure(
        f"201 to the last of {count} viewers holding the new board (ms)",
        max(fetched) * 1000, 1500, "the goal: 1.5 s", "ms", higher_is_better=False,
        goal="<= 1.0", context=f"p99 {percentile(fetched, 99) * 1000:.0f} ms"))


async def idle_viewer_kib(url: str, pid: int, count: int) -> float:
    """Open `count` event streams that stay idle; the server's RSS growth per
    stream, in KiB, once every one has said `ready`."""
    process = psutil.Process(pid)
    ready = 0
    all_ready = asyncio.Event()

    async def viewer(session: aiohttp.ClientSession) -> None:
        nonlocal ready
        async with session.get(url) as resp:
            if resp.status != 200:
                raise BenchError(f"GET {url} answered {resp.status}")
            async for line in resp.content:
                if line.startswith(b"event: ready"):
                    ready += 1
                    if ready == count:
                        all_ready.set()

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=None)) as session:
        warm = [asyncio.create_task(viewer(session)) for _ in range(20)]  # uncounted
        while ready < 20:
            failed = [t for t in warm if t.done() and not t.cancelled() and t.exception()]
            if failed:  # (a refused stream would otherwise be waited for forever)
                raise failed[0].exception()  # type: ignore[misc]
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        ready, before = 0, process.memory_info().rss
        tasks = [asyncio.create_task(viewer(session)) for _ in range(count)]
        try:
            await asyncio.wait_for(all_ready.wait(), 120)
            await asyncio.sleep(1.0)  # let the allocator settle
            after = process.memory_info().rss
        finally:
            for task in tasks + warm:
                task.cancel()
            await asyncio.gather(*tasks, *warm, return_exceptions=True)
    return (after - before) / count / 1024


async def idle_memory(s: Setup, count: int) -> None:
    ours = await idle_viewer_kib(f"{s.svc.base_url}/v1/leaderboards/{s.season}/events",
                                 s.svc.proc.pid, count)
    bare = await idle_viewer_kib(f"{s.bare_url}/events", s.bare_pid, count)
    s.figures.append(Figure(
        "memory per idle SSE viewer (KiB)", ours, bare,
        "a held stream on bench/bare_app.py, same uvicorn", "KiB", higher_is_better=False,
        goal="<= 10 KiB", context=f"{count} viewers"))


# -- the projector alone --------------------------------------------------------------


async def apply_latency(s: Setup, projector_only: Service, prefix: str, prefix2: str,
                        samples: int) -> None:
    """One completion at a time, sent to applied (its hint seen on Pub/Sub), with
    the fast path, and on a deployment whose fast path is switched off."""
    fast: list[float] = []
    slow: list[float] = []
    for k in range(2):  # the two paths take turns
        await _latencies(s.svc, s.redis_url, prefix, 5_000_000 + k * samples, samples, fast)
        await _latencies(projector_only, s.redis_url, prefix2, 5_000_000 + k * samples,
                         samples, slow)
    s.figures.append(Figure(
        "sent to applied, projector alone, p50 (ms)", percentile(slow, 50) * 1000,
        percentile(fast, 50) * 1000, "the same with the fast path", "ms",
        higher_is_better=False))
    s.figures.append(Figure(
        "sent to applied, projector alone, p99 (ms)", percentile(slow, 99) * 1000,
        percentile(fast, 99) * 1000, "the same with the fast path", "ms",
        higher_is_better=False))


async def _latencies(svc: Service, redis_url: str, prefix: str, first_uid: int, count: int,
                     out: list[float]) -> None:
    r = aioredis.from_url(redis_url, socket_timeout=30)
    pubsub = r.pubsub()
    await pubsub.subscribe(f"{prefix}:hints")
    headers = {"authorization": f"Bearer {svc.ingest_token}"}
    now = datetime.now(UTC).isoformat()
    try:
        async with httpx.AsyncClient(base_url=svc.base_url, headers=headers, timeout=30.0,
                                     trust_env=False) as client:
            for i in range(count):
                uid = first_uid + i
                t0 = time.perf_counter()
                resp = await client.post("/v1/completions", json={
                    "completion_id": f"lat{prefix}-{uid}", "user_id": uid, "points": 1,
                    "completed_at": now})
                if resp.status_code != 201:
                    raise BenchError(f"POST /v1/completions answered {resp.status_code}")
                while True:
                    msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=10)
                    if msg is None:
                        if time.perf_counter() - t0 > 10:
                            raise BenchError(f"no hint for learner {uid} within 10 s")
                        continue
                    if orjson.loads(msg["data"]).get("user_id") == uid:
                        out.append(time.perf_counter() - t0)
                        break
    finally:
        await pubsub.aclose()
        await r.aclose()
