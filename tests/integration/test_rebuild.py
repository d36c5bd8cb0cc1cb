"""Rebuild and switch during traffic, verify, and self-healing after Redis loss."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta

import pytest

from laurels.core.errors import DomainError
from laurels.core.seasons import Season, parse_season
from laurels.ingest.record import Ingestor
from laurels.projection.rebuild import RebuildRunning, lock_key
from laurels.runtime import Runtime

SEASON = parse_season("2026-W48", zone="UTC")
START = SEASON.starts_at
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)  # W48 is still inside its grace


def ingestor(rt: Runtime) -> Ingestor:
    return rt.derive(clock=lambda: NOW).ingestor


def items(prefix: str, n: int, users: int = 40, seed: int = 0) -> list[dict]:
    rnd = random.Random(seed)
    return [{"completion_id": f"{prefix}{i}", "user_id": rnd.randint(1, users),
             "points": rnd.randint(1, 9),
             "completed_at": (START + timedelta(seconds=rnd.randint(0, 6 * 86400))).isoformat()}
            for i in range(n)]


async def pg_sums(rt: Runtime, season: Season = SEASON) -> dict[int, int]:
    return {r["user_id"]: int(r["score"]) for r in await rt.db.fetch("season_sums",
                                                                     season=season)}


async def board_sums(rt: Runtime, season: Season = SEASON) -> dict[int, int]:
    top = await rt.board.top(season, 1000)
    return {e.user_id: e.score for e in top.entries}


async def test_rebuilds_during_traffic_lose_and_double_nothing(rt: Runtime) -> None:
    ing = ingestor(rt)
    work = items("t", 1200)
    # Every item is posted twice, from concurrent writers, while rebuilds run.
    chunks = [work[i:i + 50] for i in range(0, len(work), 50)]

    async def writer(k: int) -> None:
        for chunk in chunks[k::4]:
            await ing.record(chunk)
            await ing.record(list(reversed(chunk)))

    async def rebuilds() -> int:
        done = 0
        for _ in range(100):  # the first writes may be healing the board: then retry
            if done == 3:
                break
            await asyncio.sleep(0.05)
            try:
                await rt.rebuilder.run(SEASON)
                done += 1
            except RebuildRunning:
                pass
        return done

    *_, rebuilt = await asyncio.gather(*(writer(k) for k in range(4)), rebuilds())
    assert rebuilt >= 2
    await rt.projector.drain(min_age_seconds=0)
    expected: dict[int, int] = {}
    for it in work:
        expected[it["user_id"]] = expected.get(it["user_id"], 0) + it["points"]
    assert await pg_sums(rt) == expected
    assert await board_sums(rt) == expected
    result = await rt.verifier.verify(SEASON)
    assert result.consistent and result.players_checked == len(expected)
    # Only the current version's keys remain (old ones were dropped).
    sk = rt.board.season_keys(SEASON)
    current = await rt.redis.get(sk.current)
    assert await rt.redis.smembers(sk.versions) == {current}
    assert await rt.redis.exists(sk.building) == 0


async def test_second_rebuild_is_refused(rt: Runtime) -> None:
    await ingestor(rt).record(items("s", 10))
    async with rt.db.connection() as conn:
        await conn.execute("SELECT pg_advisory_lock(%s)",
                           (lock_key(rt.keys.prefix, rt.keys.policy, SEASON),))
        with pytest.raises(RebuildRunning):
            await rt.rebuilder.start(SEASON)
        await conn.execute("SELECT pg_advisory_unlock_all()")
    result = await rt.rebuilder.run(SEASON)
    assert result.events == 10


async def test_failed_rebuild_keeps_the_current_board(rt: Runtime) -> None:
    await ingestor(rt).record(items("f", 30))
    before = await board_sums(rt)
    sk = rt.board.season_keys(SEASON)

    def sabotage(done: int, total: int) -> None:
        # Another builder "takes over" the marker as soon as streaming starts.
        asyncio.get_running_loop().create_task(rt.redis.set(sk.building, "999999"))

    rebuild_id, task = await rt.rebuilder.start(SEASON, progress=sabotage)
    with pytest.raises(Exception):  # noqa: B017 - the builder lost its marker
        await task
    status = await rt.rebuilder.status(rebuild_id)
    assert status is not None and status["status"] == "failed" and status["error"]
    assert await board_sums(rt) == before
    await rt.redis.delete(sk.building)
    assert (await rt.rebuilder.run(SEASON)).events == 30
    assert await board_sums(rt) == before


async def test_verify_reports_differences(rt: Runtime) -> None:
    await ingestor(rt).record(items("v", 50, users=10))
    assert (await rt.verifier.verify(SEASON)).consistent
    sk = rt.board.season_keys(SEASON)
    vk = sk.version(await rt.redis.get(sk.current))
    member = sorted(await rt.redis.zrange(vk.public, 0, 0))[0]
    uid = int(member[-19:])
    await rt.redis.zincrby(vk.public, -5, member)  # five phantom points
    result = await rt.verifier.verify(SEASON)
    sums = await pg_sums(rt)
    assert not result.consistent
    assert [(m.user_id, m.redis, m.postgres) for m in result.mismatches] == [
        (uid, sums[uid] + 5, sums[uid])]
    body = result.body()
    assert body["consistent"] is False and body["players_checked"] == len(sums)


async def test_verify_reports_a_learner_postgresql_does_not_know(rt: Runtime) -> None:
    """A learner on the board with no completion in PostgreSQL is reported
    (the second pass looks up only the learners the sums did not stream)."""
    await ingestor(rt).record(items("x", 40, users=10))
    sums = await pg_sums(rt)
    gone = max(sums)
    async with rt.db.connection() as conn:  # their rows lost behind the board's back
        await conn.execute("DELETE FROM completions WHERE user_id = %s", (gone,))
    result = await rt.verifier.verify(SEASON)
    assert [(m.user_id, m.redis, m.postgres) for m in result.mismatches] == [
        (gone, sums[gone], None)]
    assert result.body()["players_checked"] == len(sums)


async def test_flushed_board_heals_itself(rt: Runtime) -> None:
    await ingestor(rt).record(items("h", 80))
    expected = await pg_sums(rt)
    for key in await rt.redis.keys(f"{rt.keys.prefix}:*"):
        await rt.redis.delete(key)
    reads = rt.reads
    body = await reads.top(SEASON, 1000)
    assert {e["user_id"]: e["score"] for e in body["entries"]} == expected
    # Applies after the loss land on the healed board, not on a partial one.
    await ingestor(rt).record(items("h2", 20, seed=9))
    await rt.projector.drain(min_age_seconds=0)
    assert await board_sums(rt) == await pg_sums(rt)


async def test_reads_answer_503_while_another_process_rebuilds(rt: Runtime) -> None:
    await ingestor(rt).record(items("r", 5))
    sk = rt.board.season_keys(SEASON)
    await rt.redis.delete(sk.current)
    reads = rt.reads
    async with rt.db.connection() as conn:  # "another process" holds the rebuild lock
        await conn.execute("SELECT pg_advisory_lock(%s)",
                           (lock_key(rt.keys.prefix, rt.keys.policy, SEASON),))
        with pytest.raises(DomainError) as info:
            await reads.top(SEASON, 10)
        assert info.value.code == "rebuilding" and info.value.retry_after
        # An apply meanwhile refuses to write into the missing board.
        assert await rt.board.apply([]) == []
        await conn.execute("SELECT pg_advisory_unlock_all()")
    body = await reads.top(SEASON, 10)
    assert body["total"] == len(await pg_sums(rt))


async def test_empty_season_reads_as_empty(rt: Runtime) -> None:
    reads = rt.reads
    body = await reads.top(parse_season("2026-W30", zone="UTC"), 10)
    assert body["total"] == 0 and body["entries"] == []
    assert await rt.redis.keys(f"{rt.keys.prefix}:*") == []


async def test_a_second_rebuild_request_joins_the_running_one(rt: Runtime) -> None:
    await ingestor(rt).record(items("j", 10))
    async with rt.db.connection() as conn:  # "another process" is building
        await conn.execute("SELECT pg_advisory_lock(%s)",
                           (lock_key(rt.keys.prefix, rt.keys.policy, SEASON),))
        other = await rt.rebuilder.start_record(SEASON)
        assert await rt.rebuilder.running(SEASON) == other
        with pytest.raises(RebuildRunning):  # never a second builder
            await rt.rebuilder.start(SEASON)
        assert await rt.rebuilder.start_or_join(SEASON) == other  # a request joins it
        await conn.execute("SELECT pg_advisory_unlock_all()")
    # Its builder is gone (no lock): asking for it reports it interrupted.
    status = await rt.rebuilder.status(other)
    assert status is not None and status["status"] == "failed"
    assert await rt.rebuilder.running(SEASON) is None
    joined = await rt.rebuilder.start_or_join(SEASON)
    assert joined is not None and joined != other
