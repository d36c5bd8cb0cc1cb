"""Bytes per completion, per id and per archived standing in PostgreSQL
(docs/operations.md, "Sizing PostgreSQL for a year"): 1,000,000 completions
of one month and 200,000 standings in a scratch database of the machine's
PostgreSQL (dropped afterwards), measured with pg_total_relation_size
(indexes included).

    .venv/bin/python bench/row_sizes.py [postgresql://postgres@127.0.0.1:5432/]
"""

from __future__ import annotations

import asyncio
import sys

import psycopg

from laurels.db import migrate

SCRATCH = "laurels_bench_row_sizes"
IDS = """
INSERT INTO completion_ids (completion_id, seq, completed_at)
SELECT 'tutorial-' || (g % 5000) || ':learner-' || (g % 200000) || ':' || g, g,
       '2026-11-02T00:00:00Z'::timestamptz + (g % 2000000) * interval '1 second'
FROM generate_series(1, 1000000) g"""
COMPLETIONS = """
INSERT INTO completions (seq, completion_id, user_id, points, completed_at, received_at,
                         season)
SELECT seq, completion_id, 1 + seq % 200000, 1 + seq % 50, completed_at, completed_at,
       '2026-W45'
FROM completion_ids"""
STANDINGS = """
INSERT INTO season_standings (season, user_id, score, last_completed_at, rank, pos)
SELECT '2026-W45', u, u % 1000, now(), u, u FROM generate_series(1, 200000) u"""
SIZE = """SELECT sum(pg_total_relation_size(relid)) AS bytes
FROM pg_partition_tree(%s::regclass)"""  # completion_ids: its partitions (migration 020)


def main(server: str) -> None:
    with psycopg.connect(server + "postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {SCRATCH}")
        admin.execute(f"CREATE DATABASE {SCRATCH}")
    try:
        asyncio.run(migrate(server + SCRATCH))
        with psycopg.connect(server + SCRATCH, autocommit=True) as conn:
            conn.execute("SELECT laurels_completions_partition('2026-11-01')")
            conn.execute(IDS)
            conn.execute(COMPLETIONS)
            conn.execute("INSERT INTO seasons (season) VALUES ('2026-W45')")
            conn.execute(STANDINGS)
            conn.execute("VACUUM ANALYZE")
            for table, rows in (("completions_2026_11", 1_000_000),
                                ("completion_ids", 1_000_000), ("season_standings", 200_000)):
                row = conn.execute(SIZE, (table,)).fetchone()
                assert row is not None
                print(f"{table}: {row[0] / rows:.0f} bytes per row")
    finally:
        with psycopg.connect(server + "postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {SCRATCH}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "postgresql://postgres@127.0.0.1:5432/")
