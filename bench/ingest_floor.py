"""What each redesign of `laurels_ingest` that issue 45 names could buy at
most: the batch ingest's one statement as shipped, against the same
function with a part removed outright (not redesigned: removed, so each
line is an upper bound of what a redesign of that part could save), and
against the raw batched insert the API's line is measured by.

    .venv/bin/python bench/ingest_floor.py              # 3 rounds
    .venv/bin/python bench/ingest_floor.py --rounds 5 --batches 40

PostgreSQL alone: no HTTP, no Python validation, no Redis. Each round runs
every variant once, in an order that alternates between rounds, each on a
fresh database migrated as `laurels serve` would (then the variant's
change) with 50,000 learners, 4 connections posting batches of 1,000 new
completions of the current week and then deleting their outbox rows (as
the fast path does). Printed per variant: completions a second, PostgreSQL's
CPU a completion (every postgres process of the machine: run it quiet),
and the medians' ratios to the function as shipped and to the raw insert.

The variants:
- `shipped`: db/schema.sql's `laurels_ingest`;
- `no_share_lock`: the learners read without `FOR SHARE` (an erasure check
  that takes no tuple lock, at most);
- `no_outbox`: no outbox row (the outbox as the completions' own sequence,
  at most);
- `no_upsert`: the learners not upserted (all of them exist here);
- `no_id_record`: no row in `completion_ids` (the idempotency record a
  partitioned `completions` needs, its unique keys holding the month: not
  a redesign the issue names; what the record costs);
- `no_indexes`: `completions` without its `(season, user_id)`, `(user_id)`
  and `(completed_at)` indexes (fewer indexes, at most);
- `all`: all four removed at once;
- `raw`: one batched INSERT into a table with a unique id and one into an
  outbox table, a transaction a batch (bench.run's baseline).

One database per run at $LAURELS_BENCH_DATABASE_URL (loopback only;
default the machine's), dropped after each run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402

from bench.support import (  # noqa: E402
    DEFAULT_DATABASE_URL,
    RAW_TABLES,
    cpu_by_process,
    cpu_since,
    log,
    loopback_only,
    raw_batch,
)
from laurels.core.seasons import season_of  # noqa: E402
from laurels.db import migrate  # noqa: E402
from laurels.db.arrays import bool_array, int_array, text_array, timestamp_array  # noqa: E402
from laurels.db.schema import SCHEMA_FILE  # noqa: E402

BATCH, CLIENTS, LEARNERS = 1000, 4, 50_000
CALL = ("SELECT seq FROM laurels_ingest(%s::text[], %s::bigint[], %s::int[], "
        "%s::timestamptz[], %s, %s::text[], %s::boolean[], %s::text[], %s::text[])")


def shipped_function() -> str:
    text = SCHEMA_FILE.read_text()
    start = text.index("CREATE FUNCTION laurels_ingest(")
    end = text.index("$$;", text.index("AS $$", start)) + 3
    return "CREATE OR REPLACE" + text[start + len("CREATE"):end]


def cut(text: str, old: str, new: str = "") -> str:
    if old not in text:
        raise SystemExit(f"laurels_ingest no longer holds {old!r}: update bench/ingest_floor.py")
    return text.replace(old, new)


SHARE = ("ORDER BY u.user_id FOR SHARE) x;", "ORDER BY u.user_id) x;")
OUTBOX = ("    outboxed AS (  -- runs although nothing reads it (a data-modifying CTE always "
          "does)\n        INSERT INTO outbox (seq) SELECT f.seq FROM fresh f),\n", "")
UPSERT = ("    INSERT INTO users (user_id) SELECT DISTINCT u FROM unnest(p_users) AS u ORDER BY 1\n"
          "    ON CONFLICT DO NOTHING;\n", "")
ID_RECORD = ("""        INSERT INTO completion_ids_open AS k (completion_id, seq, completed_at)
        SELECT ch.cid, ch.seq, ch.at FROM chosen ch ORDER BY ch.cid
        ON CONFLICT (completion_id) DO NOTHING
        RETURNING k.seq),""", """        SELECT ch.seq FROM chosen ch),""")
INDEXES = ["DROP INDEX completions_season_user_p", "DROP INDEX completions_user_p",
           "DROP INDEX completions_completed_at_p"]


def variants() -> dict[str, list[str]]:
    fn = shipped_function()
    every = cut(cut(cut(fn, *SHARE), *OUTBOX), *UPSERT)
    return {"shipped": [], "no_share_lock": [cut(fn, *SHARE)], "no_outbox": [cut(fn, *OUTBOX)],
            "no_upsert": [cut(fn, *UPSERT)], "no_indexes": INDEXES,
            "no_id_record": [cut(fn, *ID_RECORD)],
            "all": [every, *INDEXES], "raw": []}


async def prepared(admin: str, name: str, changes: list[str], now: datetime) -> str:
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = psycopg.conninfo.make_conninfo(admin, dbname=name)
    await migrate(url)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("SELECT laurels_completions_partition(%s::date)",
                           (now.date().replace(day=1),))
        for change in changes:
            await conn.execute(change)  # our own text, above
        await conn.execute("INSERT INTO users (user_id) SELECT g FROM generate_series(1, %s) g",
                           (LEARNERS,))
        for ddl in RAW_TABLES:
            await conn.execute(ddl)
        await conn.execute("ANALYZE")
    return url


async def post(url: str, variant: str, batches: int, now: datetime) -> tuple[float, float]:
    """(completions a second, PostgreSQL's CPU us a completion)."""
    season = season_of(now, "week", zone="UTC").name
    outbox = variant not in ("no_outbox", "all")

    async def client(conn: psycopg.AsyncConnection[Any], k: int) -> None:
        for b in range(batches):
            ids = [f"f{k}-{b}-{i}" for i in range(BATCH)]
            users = [1 + (k * 7919 + b * 104729 + i * 31) % LEARNERS for i in range(BATCH)]
            ats = [now - timedelta(seconds=(b * BATCH + i) % 3000) for i in range(BATCH)]
            if variant == "raw":
                await raw_batch(conn, list(zip(ids, users, [5] * BATCH, ats, strict=True)))
                continue
            cur = await conn.execute(CALL, (
                text_array(ids), int_array(users), int_array([5] * BATCH),
                timestamp_array(ats), now, text_array([season] * BATCH),
                bool_array([False] * BATCH), text_array([""] * BATCH),
                text_array([""] * BATCH)))
            seqs = [r[0] for r in await cur.fetchall()]
            if outbox:
                await conn.execute("DELETE FROM outbox WHERE seq = ANY(%s)", (seqs,))

    # the backends' CPU is read while they live (a closed one's is gone)
    conns = [await psycopg.AsyncConnection.connect(url, autocommit=True)
             for _ in range(CLIENTS)]
    try:
        before = cpu_by_process()
        started = time.perf_counter()
        await asyncio.gather(*(client(c, k) for k, c in enumerate(conns)))
        seconds = time.perf_counter() - started
        used = cpu_since(before)["postgres"]
    finally:
        for c in conns:
            await c.close()
    count = CLIENTS * batches * BATCH
    return count / seconds, 1e6 * used / count


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=30, help="batches a client, a run")
    args = parser.parse_args(argv)
    admin = os.environ.get("LAURELS_BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    loopback_only(admin, "LAURELS_BENCH_DATABASE_URL")
    table = variants()
    rates: dict[str, list[float]] = {v: [] for v in table}
    cpu: dict[str, list[float]] = {v: [] for v in table}
    for r in range(args.rounds):
        order = list(table) if r % 2 == 0 else list(reversed(table))
        for variant in order:
            now = datetime.now(UTC)
            name = f"laurels_bench_floor_{secrets.token_hex(4)}"
            try:
                url = await prepared(admin, name, table[variant], now)
                rate, us = await post(url, variant, args.batches, now)
            finally:
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                                 .format(sql.Identifier(name)))
            rates[variant].append(rate)
            cpu[variant].append(us)
            log(f"round {r + 1} {variant}: {rate:,.0f} completions/s, PostgreSQL {us:.1f} us "
                "a completion")
    shipped, raw = statistics.median(rates["shipped"]), statistics.median(rates["raw"])
    for variant in table:
        rate = statistics.median(rates[variant])
        log(f"{variant:>14}: {rate:8,.0f} completions/s ({rate / shipped:.2f} of shipped, "
            f"{rate / raw:.2f} of raw), PostgreSQL {statistics.median(cpu[variant]):.1f} us "
            "a completion (medians)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
