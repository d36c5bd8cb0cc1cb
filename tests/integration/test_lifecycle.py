"""Learner and season lifecycle: erasure, names in step, season close and archive."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from laurels.api.problems import outcome_status
from laurels.board import Delta, Profile
from laurels.core.errors import DomainError, StoreUnavailable
from laurels.core.seasons import Season, parse_season
from laurels.core.validation import ProfileIn
from laurels.ingest.record import Ingestor
from laurels.lifecycle.closing import SEASONS_FINALIZED
from laurels.reads.boards import Reads
from laurels.runtime import Runtime, redis_client, wire

W47, W48, W49 = (parse_season(w, zone="UTC") for w in ("2026-W47", "2026-W48", "2026-W49"))


def at(season: Season, hours: int) -> datetime:
    return season.starts_at + timedelta(hours=hours)


def ing(rt: Runtime, now: datetime) -> Ingestor:
    return rt.derive(clock=lambda: now).ingestor


async def record(rt: Runtime, season: Season, rows: list[tuple[str, int, int]],
                 hours: int = 10) -> list[Any]:
    now = at(season, 24 * 6)  # the season's last day: open
    return await ing(rt, now).record([
        {"completion_id": cid, "user_id": uid, "points": pts,
         "completed_at": at(season, hours + i).isoformat()}
        for i, (cid, uid, pts) in enumerate(rows)])


def reads(rt: Runtime) -> Reads:
    return rt.reads


async def board_of(rt: Runtime, season: Season) -> list[tuple[int, int | None, int]]:
    body = await reads(rt).top(season, 100)
    return [(e["rank"], e["user_id"], e["score"]) for e in body["entries"]]


async def drop_redis(rt: Runtime, season: Season) -> None:
    for key in await rt.redis.keys(f"{rt.keys.prefix}:{{weekly:{season}}}:*"):
        await rt.redis.delete(key)


async def three_seasons(rt: Runtime) -> None:
    for season in (W47, W48, W49):
        res = await record(rt, season, [(f"{season}-a", 1, 30), (f"{season}-b", 2, 20),
                                        (f"{season}-c", 3, 10), (f"{season}-d", 4, 10)])
        assert all(r.status == "recorded" for r in res)
    assert await rt.lifecycle.finalize(W47)


async def test_erasure_everywhere_and_for_good(rt: Runtime) -> None:
    await three_seasons(rt)
    before = await board_of(rt, W48)
    assert before == [(1, 1, 30), (2, 2, 20), (3, 3, 10), (3, 4, 10)]
    learners = rt.learners
    await learners.erase(2)
    for season in (W47, W48, W49):  # current, past, and the archived season
        assert await board_of(rt, season) == [(1, 1, 30), (2, 3, 10), (2, 4, 10)]
    await drop_redis(rt, W47)  # the archive itself has closed up too
    assert await board_of(rt, W47) == [(1, 1, 30), (2, 3, 10), (2, 4, 10)]
    # Every later write is refused, an exact replay of an old completion included.
    [replay] = await record(rt, W49, [(f"{W49}-b", 2, 20)])
    assert (replay.code, outcome_status(replay)) == ("user_erased", 410)
    with pytest.raises(DomainError) as info:
        await learners.update(2, ProfileIn(display_name="Back"))
    assert info.value.code == "user_erased"
    # A rebuild does not resurrect them, and the board agrees with PostgreSQL.
    await rt.rebuilder.run(W49)
    assert await board_of(rt, W49) == [(1, 1, 30), (2, 3, 10), (2, 4, 10)]
    assert (await rt.verifier.verify(W49)).consistent
    rows = await rt.db.fetch("find_completions", completion_ids=[f"{s}-b" for s in
                                                                 (W47, W48, W49)])
    assert rows == []
    user = await rt.db.fetch_one("get_user", user_id=2)
    assert user is not None and user["erased"] and user["display_name"] is None
    await learners.erase(2)  # idempotent


async def test_in_flight_apply_after_erasure_scores_nothing(rt: Runtime) -> None:
    await record(rt, W49, [("x1", 5, 7)])
    await rt.erasure.erase(5)
    late = Delta(10**6, 5, 7, at(W49, 3), W49, Profile(0, "public", ""))
    assert await rt.board.apply([late]) == ["duplicate"]
    assert await board_of(rt, W49) == []


async def test_erasure_interrupted_after_commit_is_finished_later(rt: Runtime) -> None:
    await record(rt, W49, [("i1", 6, 3), ("i2", 7, 2)])
    dead = redis_client("redis://127.0.0.1:1/0", False)
    broken = wire(rt.settings, rt.secrets, rt.db, dead).erasure
    with pytest.raises(StoreUnavailable):
        await broken.erase(6)
    await dead.aclose()
    # PostgreSQL forgot them; Redis still shows them until the job is finished.
    assert [u for _, u, _ in await board_of(rt, W49)] == [6, 7]
    assert await rt.erasure.resume_erasures(min_age_seconds=0) == 1
    assert [u for _, u, _ in await board_of(rt, W49)] == [7]
    assert await rt.erasure.resume_erasures(min_age_seconds=0) == 0


async def test_names_and_visibility_in_step_everywhere(rt: Runtime) -> None:
    await three_seasons(rt)
    learners = rt.learners
    await learners.update(3, ProfileIn(display_name="Cleo"))
    for season in (W47, W48, W49):
        body = await reads(rt).top(season, 10)
        assert any(e["display_name"] == "Cleo" for e in body["entries"])
    await learners.update(1, ProfileIn(visibility="hidden"))
    for season in (W47, W48, W49):
        assert await board_of(rt, season) == [(1, 2, 20), (2, 3, 10), (2, 4, 10)]
    await drop_redis(rt, W47)
    assert await board_of(rt, W47) == [(1, 2, 20), (2, 3, 10), (2, 4, 10)]
    own = await reads(rt).around(W47, 1, 1)
    assert own["user"]["rank"] == 1 and own["user"]["visibility"] == "hidden"
    assert [(n["user_id"], n["self"]) for n in own["neighbors"]] == [(1, True), (2, False)]
    await learners.update(1, ProfileIn(visibility="anonymous"))
    assert await board_of(rt, W48) == [(1, None, 30), (2, 2, 20), (3, 3, 10), (3, 4, 10)]
    assert await board_of(rt, W47) == [(1, None, 30), (2, 2, 20), (3, 3, 10), (3, 4, 10)]


async def test_finalize_once_under_concurrency(rt: Runtime) -> None:
    await record(rt, W47, [("f1", 1, 5), ("f2", 2, 9)])
    await record(rt, W49, [("f3", 1, 1)])
    before = SEASONS_FINALIZED._value.get()
    other = rt.derive().lifecycle
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)  # W47 closed (grace over), W48 not yet
    results = await asyncio.gather(rt.lifecycle.finalize_due(now), other.finalize_due(now),
                                   rt.lifecycle.finalize_due(now))
    assert sorted(s for r in results for s in r) == [W47]
    assert SEASONS_FINALIZED._value.get() == before + 1
    rows = await rt.db.fetch("archive_top", season=W47, limit=10, tie_policy="shared",
                             after_score=None, after_at=None, after_user=None)
    assert [(r["user_id"], r["score"], r["rank"]) for r in rows] == [(2, 9, 1), (1, 5, 2)]
    # Its Redis keys now expire, when KEEP_SEASONS more seasons have closed.
    sk = rt.board.season_keys(W47)
    at_ms = await rt.redis.pexpiretime(sk.current)  # an instant: no clock compared
    assert at_ms == int(rt.lifecycle.expires_at(W47).timestamp() * 1000)
    # Still readable, from Redis while the keys live, from the archive after.
    assert await board_of(rt, W47) == [(1, 2, 9), (2, 1, 5)]
    body = await reads(rt).top(W47, 10)
    assert body["status"] == "closed"
    await drop_redis(rt, W47)
    assert await board_of(rt, W47) == [(1, 2, 9), (2, 1, 5)]
    assert (await reads(rt).around(W47, 1, 5))["user"]["rank"] == 2
    with pytest.raises(DomainError):
        await reads(rt).around(W47, 3, 5)


async def test_finalized_season_refuses_completions(rt: Runtime) -> None:
    await record(rt, W48, [("g1", 1, 5)])
    assert await rt.lifecycle.finalize(W48)  # finalized early (by an operator, or a clock)
    [late] = await record(rt, W48, [("g2", 1, 5)])
    assert (late.code, outcome_status(late)) == ("season_closed", 409)
    [replay] = await record(rt, W48, [("g1", 1, 5)])
    assert replay.status == "duplicate"


async def test_late_completion_inside_and_outside_the_grace(rt: Runtime) -> None:
    end = W48.ends_at
    inside = ing(rt, end + timedelta(hours=47))
    outside = ing(rt, end + timedelta(hours=48))
    item = {"completion_id": "late", "user_id": 1, "points": 1,
            "completed_at": (end - timedelta(seconds=1)).isoformat()}
    [refused] = await outside.record([item])
    assert refused.code == "season_closed"
    [accepted] = await inside.record([item])
    assert accepted.status == "recorded" and accepted.season == W48.name


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_archive_ranks_follow_the_policy(rt: Runtime, policy: str) -> None:
    lifecycle = rt.derive(tie_policy=policy).lifecycle
    await record(rt, W47, [("p1", 30, 10), ("p2", 20, 10), ("p3", 10, 10), ("p4", 40, 9)])
    assert await lifecycle.finalize(W47)
    rows = await rt.db.fetch("archive_top", season=W47, limit=10, tie_policy=policy,
                             after_score=None, after_at=None, after_user=None)
    got = [(r["rank"], r["user_id"]) for r in rows]
    if policy == "shared":
        assert got == [(1, 10), (1, 20), (1, 30), (4, 40)]
    else:  # 30 reached 10 points first (hours 10, 11, 12 in order p1, p2, p3)
        assert got == [(1, 30), (2, 20), (3, 10), (4, 40)]


async def test_verify_checks_names_and_visibility(rt: Runtime) -> None:
    await record(rt, W49, [("n1", 1, 4), ("n2", 2, 4)])
    await rt.learners.update(1, ProfileIn(display_name="Ada"))
    assert (await rt.verifier.verify(W49)).consistent
    sk = rt.board.season_keys(W49)
    vk = sk.version(await rt.redis.get(sk.current))
    uid = f"{1:019d}"
    stale = (await rt.redis.hget(vk.users, uid)).replace("Ada", "Eve")
    await rt.redis.hset(vk.users, uid, stale)
    result = await rt.verifier.verify(W49)
    assert not result.consistent
    assert result.body()["mismatches"] == [{
        "user_id": 1, "redis": 4, "postgres": 4, "field": "profile",
        "difference": "display_name: Redis 'Eve', PostgreSQL 'Ada'"}]
    await rt.rebuilder.run(W49)  # a rebuild brings the projection back in step
    assert (await rt.verifier.verify(W49)).consistent


async def test_expired_keys_are_read_from_the_archive(rt: Runtime) -> None:
    lifecycle = rt.derive(keep_seasons=0).lifecycle
    await record(rt, W47, [("k1", 1, 3), ("k2", 2, 8)])
    assert await rt.redis.exists(rt.board.season_keys(W47).current)
    assert await lifecycle.finalize(W47)  # keep 0 seasons: its expiry is already past
    assert await rt.redis.keys(f"{rt.keys.prefix}:{{weekly:{W47}}}:*") == []
    assert await board_of(rt, W47) == [(1, 2, 8), (2, 1, 3)]
    # verify checks what readers see now: the archive against the completions
    result = await rt.verifier.verify(W47)
    assert result.consistent and result.players_checked == 2
