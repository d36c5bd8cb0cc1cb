"""Ingest against real PostgreSQL and Redis: statuses, idempotency, the outbox."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import psycopg

from laurels.api.problems import outcome_status
from laurels.core.seasons import parse_season
from laurels.ingest.record import Ingestor
from laurels.runtime import Runtime
from tests.helpers import eventually

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def ingestor(rt: Runtime, now: datetime = NOW) -> Ingestor:
    return rt.derive(clock=lambda: now).ingestor


def item(cid: str, uid: int, points: int, at: str | None = "2026-11-30T10:00:00Z") -> dict:
    body: dict = {"completion_id": cid, "user_id": uid, "points": points}
    if at is not None:
        body["completed_at"] = at
    return body


async def score(rt: Runtime, season: str, uid: int) -> int | None:
    top = await rt.board.top(parse_season(season, zone="UTC"), 1000)
    return next((e.score for e in top.entries if e.user_id == uid), None)


async def outbox_rows(rt: Runtime) -> int:
    row = await rt.db.fetch_one("outbox_depth")
    assert row is not None
    return int(row["depth"])


async def test_new_duplicate_conflict(rt: Runtime) -> None:
    ing = ingestor(rt)
    [first] = await ing.record([item("c1", 42, 5)])
    assert (first.status, outcome_status(first), first.season) == ("recorded", 201, "2026-W49")
    [again] = await ing.record([item("c1", 42, 5, "2026-11-30T11:00:00+01:00")])
    assert (again.status, outcome_status(again), again.seq) == ("duplicate", 200, first.seq)
    [other] = await ing.record([item("c1", 42, 6)])
    assert (other.status, other.code, outcome_status(other)) == ("rejected", "completion_conflict",
                                                             409)
    assert await score(rt, "2026-W49", 42) == 5
    assert await outbox_rows(rt) == 0  # the fast path applied and cleaned up


async def test_replay_without_completed_at_matches_time_of_receipt(rt: Runtime) -> None:
    ing = ingestor(rt)
    [first] = await ing.record([item("r1", 7, 1, at=None)])
    later = ingestor(rt, NOW.replace(minute=5))
    [again] = await later.record([item("r1", 7, 1, at=None)])
    assert again.status == "duplicate" and again.seq == first.seq
    [explicit] = await later.record([item("r1", 7, 1, at="2026-11-30T12:00:00Z")])
    assert explicit.status == "duplicate"
    [moved] = await later.record([item("r1", 7, 1, at="2026-11-30T12:00:01Z")])
    assert moved.code == "completion_conflict"


async def test_closed_future_and_invalid_record_nothing(rt: Runtime) -> None:
    ing = ingestor(rt)
    results = await ing.record([
        item("old", 1, 1, "2026-11-20T10:00:00Z"),   # W47 ended 11-23, grace 2 days: closed
        item("late", 1, 1, "2026-11-29T23:00:00Z"),  # W48 ended today 00:00: inside the grace
        item("future", 1, 1, "2026-11-30T12:10:00Z"),  # 10 minutes ahead: past the skew
        item("bool", True, 1),
        {"completion_id": "bad id", "user_id": 1, "points": 1},
        "not an object",
    ])
    codes = [(r.status, r.code) for r in results]
    assert codes == [("rejected", "season_closed"), ("recorded", None),
                     ("rejected", "validation_error"), ("rejected", "validation_error"),
                     ("rejected", "validation_error"), ("rejected", "validation_error")]
    rows = await rt.db.fetch("find_completions",
                             completion_ids=["old", "late", "future", "bool", "bad id"])
    assert [r["completion_id"] for r in rows] == ["late"]


async def test_erased_learner_gets_410(rt: Runtime) -> None:
    await rt.db.pool.check()
    async with rt.db.connection() as conn:
        await conn.execute("INSERT INTO users (user_id, erased_at) VALUES (99, now())")
    [res] = await ingestor(rt).record([item("e1", 99, 1)])
    assert (res.code, outcome_status(res)) == ("user_erased", 410)


async def test_batch_items_are_independent_and_in_order(rt: Runtime) -> None:
    ing = ingestor(rt)
    results = await ing.record([item("b1", 1, 2), item("b2", 2, 3), item("b1", 1, 2),
                                item("b1", 1, 9), item("b3", 1, 0)])
    assert [r.status for r in results] == ["recorded", "recorded", "duplicate", "rejected",
                                           "rejected"]
    assert results[2].seq == results[0].seq
    assert results[3].code == "completion_conflict"
    assert await score(rt, "2026-W49", 1) == 2


async def test_concurrent_duplicate_posts_count_once(rt: Runtime) -> None:
    ing = ingestor(rt)
    results = await asyncio.gather(*(ing.record([item("same", 5, 10)]) for _ in range(25)))
    statuses = sorted(r[0].status for r in results)
    assert statuses.count("recorded") == 1 and statuses.count("duplicate") == 24
    assert len({r[0].seq for r in results}) == 1
    assert await score(rt, "2026-W49", 5) == 10


async def test_projector_applies_rows_left_by_a_crash(rt: Runtime) -> None:
    """A process that died between commit and apply leaves only outbox rows."""
    async with rt.db.connection() as conn, conn.transaction():
        for i, uid in enumerate([10, 11, 10]):
            cur = await conn.execute(
                "INSERT INTO completions (completion_id, user_id, points, completed_at,"
                " received_at, season) VALUES (%s, %s, %s, %s, %s, '2026-W49') RETURNING seq",
                (f"crash{i}", uid, 4, NOW, NOW))
            row = await cur.fetchone()
            assert row is not None
            await conn.execute("INSERT INTO outbox (seq) VALUES (%s)", (row["seq"],))
    assert await outbox_rows(rt) == 3
    assert await rt.projector.drain(min_age_seconds=0) == 3
    assert await outbox_rows(rt) == 0
    assert await score(rt, "2026-W49", 10) == 8 and await score(rt, "2026-W49", 11) == 4
    # Re-delivery of the same completions changes nothing.
    async with rt.db.connection() as conn:
        await conn.execute("INSERT INTO outbox (seq) SELECT seq FROM completions")
    assert await rt.projector.drain(min_age_seconds=0) == 3
    assert await score(rt, "2026-W49", 10) == 8


async def test_projector_runs_until_stopped(rt: Runtime) -> None:
    rt.projector.min_age_seconds = 0
    stop = asyncio.Event()
    task = asyncio.create_task(rt.projector.run(stop))
    async with rt.db.connection() as conn, conn.transaction():
        cur = await conn.execute(
            "INSERT INTO completions (completion_id, user_id, points, completed_at,"
            " received_at, season) VALUES ('loop', 3, 2, %s, %s, '2026-W49') RETURNING seq",
            (NOW, NOW))
        row = await cur.fetchone()
        assert row is not None
        await conn.execute("INSERT INTO outbox (seq) VALUES (%s)", (row["seq"],))
        await conn.execute("NOTIFY laurels_outbox")

    async def outbox_empty() -> bool:
        return await outbox_rows(rt) == 0

    try:
        await eventually(outbox_empty, 5, "the running projector to empty the outbox")
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)
    assert await score(rt, "2026-W49", 3) == 2


async def test_fast_path_failure_leaves_the_outbox_row(rt: Runtime, redis_url: str) -> None:
    """Redis unreachable after commit: recorded anyway, applied later by the projector."""
    from laurels.runtime import redis_client, wire

    dead = redis_client("redis://127.0.0.1:1/0", False)
    broken = wire(rt.settings, rt.secrets, rt.db, dead, clock=lambda: NOW).ingestor
    [res] = await broken.record([item("down", 8, 3)])
    await dead.aclose()
    assert res.status == "recorded"
    assert await outbox_rows(rt) == 1
    await rt.projector.drain(min_age_seconds=0)
    assert await outbox_rows(rt) == 0
    assert await score(rt, "2026-W49", 8) == 3


async def test_unique_completion_id_is_enforced_by_postgres(rt: Runtime) -> None:
    """completions is partitioned by month (migration 013): a completion_id
    is unique forever through completion_ids, which every recording writes
    first, whatever month the completion falls in."""
    await ingestor(rt).record([item("u1", 1, 1)])
    async with rt.db.connection() as conn:
        try:
            await conn.execute("INSERT INTO completion_ids (completion_id, seq, completed_at)"
                               " VALUES ('u1', 999, now() - interval '40 days')")
        except psycopg.errors.UniqueViolation:
            return
    raise AssertionError("a second completion with the same completion_id was accepted")


async def test_month_with_rows_in_the_default_partition(rt: Runtime) -> None:
    """Rows of a month written before its partition was made (by hand, by a
    restore) sit in the default partition; the first recording of that month
    moves them into the month's new partition (migration 015) instead of
    failing every batch of the month."""
    async with rt.db.connection() as conn:
        await conn.execute(
            "INSERT INTO completions (completion_id, user_id, points, completed_at, "
            "received_at, season) VALUES ('by-hand', 5, 3, '2026-10-07T10:00:00Z', now(), "
            "'2026-W41')")
        cur = await conn.execute("SELECT count(*) AS n FROM completions_default")
        assert await cur.fetchone() == {"n": 1}
    early = ingestor(rt, datetime(2026, 10, 8, 12, 0, tzinfo=UTC))
    [rec] = await early.record([item("api", 5, 2, "2026-10-08T09:00:00Z")])
    assert rec.status == "recorded"
    async with rt.db.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM completions_default")
        assert await cur.fetchone() == {"n": 0}
        cur = await conn.execute(
            "SELECT tableoid::regclass::text AS part, completion_id FROM completions "
            "WHERE season = '2026-W41' ORDER BY completion_id")
        assert await cur.fetchall() == [
            {"part": "completions_2026_10", "completion_id": "api"},
            {"part": "completions_2026_10", "completion_id": "by-hand"}]


async def test_a_month_s_partition_never_queues_others_behind_a_long_transaction(
        rt: Runtime) -> None:
    """Making a partition takes ACCESS EXCLUSIVE on completions. While a long
    transaction reads completions (a rebuild's snapshot, a decision), the
    first batch of a new month waits for its partition in tries of at most
    100 ms (migration 019), so other statements on completions are never
    queued behind its lock request; once the transaction is gone the month
    is made and the batch recorded into it, never into the default
    partition."""
    async with rt.db.connection() as long:
        await long.execute("BEGIN")
        await long.execute("SELECT count(*) FROM completions")  # holds ACCESS SHARE
        early = ingestor(rt, datetime(2026, 9, 8, 12, 0, tzinfo=UTC))
        refused = 0
        ensure = early.partitions.ensure

        async def counted(months: set[Any]) -> bool:
            nonlocal refused
            made = await ensure(months)
            refused += not made
            return made

        early.partitions.ensure = counted  # type: ignore[method-assign]
        batch = asyncio.create_task(early.record([item("sep", 5, 2, "2026-09-08T09:00:00Z")]))
        await eventually(lambda: refused >= 2, 10, "two tries refused by the long transaction")
        # Between its tries, reads of completions go on (none queues behind it).
        await asyncio.wait_for(rt.db.fetch("season_sums", season="2026-W37"), 5)
        assert not batch.done()  # it cannot be: its month cannot be made yet
        await long.execute("COMMIT")
    [rec] = await asyncio.wait_for(batch, 10)
    assert rec.status == "recorded"
    async with rt.db.connection() as conn:
        cur = await conn.execute("SELECT tableoid::regclass::text AS part FROM completions"
                                 " WHERE completion_id = 'sep'")
        assert await cur.fetchall() == [{"part": "completions_2026_09"}]
        cur = await conn.execute("SELECT count(*) AS n FROM completions_default")
        assert await cur.fetchone() == {"n": 0}
    assert await score(rt, "2026-W37", 5) == 2
