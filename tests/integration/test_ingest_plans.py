"""laurels_ingest's plans (migration 031): a call of a few items runs the
plans its connection keeps, made once on the tables as they were (empty,
in a new deployment) and used while they grow. None of them may read a
table in full but a one-row one: the lookup of the rows recorded already,
pulled up into a join by the planner, became a hash join over a
sequential scan of every completion (18 ms a call at 84,000 completions,
growing with them), and the read of the ids' filter blocks one over the
whole filter. auto_explain logs the plan of each statement of the call."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import psycopg

ONE_ROW = {"completion_ids_filter_size", "league_settings"}  # CHECK (only_row), CHECK (id)

CALL = ("SELECT * FROM laurels_ingest(%s::text[], %s::bigint[], %s::int[], %s::timestamptz[],"
        " %s, %s::text[], %s::boolean[], %s::text[], %s::text[])")


def call(conn: psycopg.Connection, first: int, size: int) -> list[tuple[object, ...]]:
    """`size` new completions, ids first..first+size-1, in this week."""
    now = datetime.now(UTC)
    week = f"{now.isocalendar().year}-W{now.isocalendar().week:02d}"
    ids = [f"plan-{first + i}" for i in range(size)]
    return conn.execute(CALL, (ids, [1 + (first + i) % 500 for i in range(size)], [1] * size,
                               [now] * size, now, [week] * size, [False] * size, [""] * size,
                               [""] * size)).fetchall()


def test_a_small_call_s_kept_plans_read_no_table_in_full_as_it_grows(
        database_url: str) -> None:
    plans: list[str] = []
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert {r[1] for r in call(conn, 0, 3)} == {"recorded"}  # plans made on empty tables
        for n in range(3):  # the tables grow (calls of 1,000: planned for their arrays)
            call(conn, 1_000 + n * 1_000, 1_000)
        conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
        conn.execute("LOAD 'auto_explain'")
        for setting in ("auto_explain.log_min_duration = 0",
                        "auto_explain.log_nested_statements = on",
                        "client_min_messages = log"):
            conn.execute(f"SET {setting}")
        rows = call(conn, 10_000, 3)
        replay = call(conn, 10_000, 3)  # the lookup finds each row recorded already
    assert {r[1] for r in rows} == {"recorded"} and {r[1] for r in replay} == {"exists"}
    final = [p for p in plans if "Insert on completions" in p]
    assert len(final) == 2, plans  # the statement that records, logged once a call
    for plan in final:
        assert "Index Scan using completions_" in plan, plan  # probed by the key
    scanned = {m for p in plans for m in re.findall(r"Seq Scan on (\w+)", p)}
    assert scanned <= ONE_ROW, scanned
    assert any("Index Scan using completion_ids_filter_pkey" in p for p in plans)
