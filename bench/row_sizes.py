"""Bytes per completion, per id and per archived standing in PostgreSQL (docs/operations.md,
"Sizing PostgreSQL for a year"): 1,000,000 completions of one month and 200,000 standings
in a scratch database of the machine's PostgreSQL, then pg_total_relation_size.

    .venv/bin/python bench/row_sizes.py
"""
import asyncio, psycopg
from laurels.db import migrate
URL="postgresql://postgres@127.0.0.1:5432/"
def main():
    with psycopg.connect(URL+"postgres", autocommit=True) as c:
        c.execute("DROP DATABASE IF EXISTS laurels_size_tmp")
        c.execute("CREATE DATABASE laurels_size_tmp")
    asyncio.run(migrate(URL+"laurels_size_tmp"))
    with psycopg.connect(URL+"laurels_size_tmp", autocommit=True) as c:
        c.execute("SELECT laurels_completions_partition('2026-11-01')")
        c.execute("""INSERT INTO completion_ids (completion_id, seq, completed_at)
          SELECT 'tutorial-' || (g % 5000) || ':learner-' || (g % 200000) || ':' || g, g,
                 '2026-11-02T00:00:00Z'::timestamptz + (g % 2000000) * interval '1 second'
          FROM generate_series(1, 1000000) g""")
        c.execute("""INSERT INTO completions (seq, completion_id, user_id, points, completed_at, received_at, season)
          SELECT seq, completion_id, 1 + seq % 200000, 1 + seq % 50, completed_at, completed_at, '2026-W45' FROM completion_ids""")
        c.execute("""INSERT INTO seasons (season) VALUES ('2026-W45') ON CONFLICT DO NOTHING""")
        c.execute("""INSERT INTO season_standings (season, user_id, score, last_completed_at, rank, pos)
          SELECT '2026-W45', u, u % 1000, now(), u, u FROM generate_series(1, 200000) u""")
        c.execute("VACUUM ANALYZE")
        for t in ("completions_2026_11", "completion_ids", "season_standings"):
            n = c.execute(f"SELECT pg_total_relation_size('{t}'), (SELECT count(*) FROM {t})").fetchone()
            print(t, n[0], n[1], round(n[0]/n[1], 1), "bytes/row")
    with psycopg.connect(URL+"postgres", autocommit=True) as c:
        c.execute("DROP DATABASE laurels_size_tmp")
main()
