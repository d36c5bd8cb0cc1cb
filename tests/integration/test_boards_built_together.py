"""Many boards of kinds built from one scan (projection/rebuild.py `run_many`, the
healer's groups): each board is what a build of it alone gives (its
completions in its own zone, by its metric, voids, erasures), through
the interleavings a single build survives."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from redis.client import NEVER_DECODE

from laurels.board import Delta, Profile
from laurels.core import failpoints
from laurels.core.registry import Metric
from laurels.core.seasons import Season, parse_season
from laurels.core.validation import ProfileIn
from laurels.projection import filling
from laurels.projection.filling import RebuildFailed, board_of, group_of
from laurels.projection.rebuild import Rebuilder, RebuildResult, RebuildRunning
from laurels.runtime import Runtime, Services
from tests.integration.test_board_of_a_kind import NOW, PARIS, WEEK, expected, items
from tests.invariants import check_all, check_erased_everywhere

BOARDS = ("course:python-101", "course:sql", "course:go")
EVER = parse_season("all", zone=PARIS)


def counted(monkeypatch: pytest.MonkeyPatch, rebuilder: Rebuilder) -> list[list[Season]]:
    """The seasons of each run_many call (our own code spied, no store mocked)."""
    calls: list[list[Season]] = []
    real = rebuilder.run_many

    async def spy(seasons: Any) -> dict[Season, RebuildResult | BaseException]:
        calls.append(list(seasons))
        return await real(seasons)

    monkeypatch.setattr(rebuilder, "run_many", spy)
    return calls


async def recorded(svc: Services, work: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outcomes = await svc.ingestor.record(work)
    return [it for it, o in zip(work, outcomes, strict=True) if o.status == "recorded"]


async def exact(svc: Services, season: Season, work: list[dict[str, Any]]) -> None:
    top = await svc.board.top(season, 1000)
    want = expected(work, season.board, season, season.metric)
    assert {e.user_id: e.score for e in top.entries} == want, season.name
    verdict = await svc.verifier.verify(season)
    assert verdict.consistent, verdict


@pytest.mark.parametrize("metric", ["points", "completions", "best"])
async def test_a_kind_defined_late_is_built_from_one_scan(
        rt: Runtime, metric: Metric, monkeypatch: pytest.MonkeyPatch) -> None:
    svc = rt.derive(clock=lambda: NOW)
    work = await recorded(svc, [{**it, "tags": [*it["tags"], "course:go"][:2]}
                                for it in items(400, seed=5)])
    voided = [it for it in work if "course:sql" in it["tags"]][:3]
    for it in voided:
        await svc.corrections.void(it["completion_id"], "cheat")
    await svc.corrections.restore(voided[0]["completion_id"])
    await svc.corrections.restore(voided[1]["completion_id"])
    await svc.corrections.void(voided[1]["completion_id"], "again")  # correction 3
    work = [it for it in work if it not in voided[1:]]
    erased = sorted({it["user_id"] for it in work if "course:go" in it["tags"]})[0]
    await svc.learners.erase(erased)
    work = [it for it in work if it["user_id"] != erased]
    calls = counted(monkeypatch, svc.rebuilder)
    await svc.board_kinds.define("course", {"metric": metric, "time_zone": PARIS,
                                            "periods": ["week", "all"]})
    seasons = [s.on(b, metric) for b in BOARDS for s in (WEEK, EVER)]
    assert await svc.healer.heal(set(seasons), 60)
    # Its weeks and all time built together (one group: one metric), a
    # board's periods by the same build; none alone.
    assert {group_of(c[0]) for c in calls} == {metric}
    assert sum(len(c) for c in calls) == len(seasons)
    assert max(len(c) for c in calls) > 1
    for call in calls:
        assert set(Counter(board_of(season) for season in call).values()) == {2}, calls
    # The snapshot's corrections are on each board: the restore (correction
    # 2) of a completion voided again, projected late, changes nothing.
    row = await svc.db.fetch_one("lock_completion", completion_id=voided[1]["completion_id"])
    user = await svc.db.fetch_one("get_user", user_id=row["user_id"]) if row else None
    assert row is not None and user is not None
    for season in seasons:
        if "course:sql" in season.name and season.contains(row["completed_at"]):
            stale = Delta(row["seq"], row["user_id"], row["points"], row["completed_at"],
                          season, Profile(user["profile_version"], "public", ""), 2, True)
            assert await svc.board.apply([stale]) != ["applied"]
    for season in seasons:
        await exact(svc, season, work)
    await check_erased_everywhere(svc, {erased})
    await check_all(svc, seasons)


async def stored(svc: Services, season: Season) -> tuple[Any, ...]:
    """A board's current version as Redis holds it: its members (tie times
    in them under `first`) with their scores, its profiles and its
    idempotency bits."""
    vk = svc.board.season_keys(season).version(
        str(await svc.redis.get(svc.board.season_keys(season).current)))
    return (await svc.redis.zrange(vk.public, 0, -1, withscores=True),
            await svc.redis.zrange(vk.hidden, 0, -1, withscores=True),
            await svc.redis.hgetall(vk.users),
            await svc.redis.execute_command("HGETALL", vk.bits, **{NEVER_DECODE: []}))


@pytest.mark.parametrize("window", [4_000_000, 37])
@pytest.mark.parametrize("metric", ["points", "best"])
async def test_boards_of_several_periods_and_zones_from_one_scan(
        rt: Runtime, metric: Metric, window: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """One scan, each board its own range: a Paris week, a New York week
    (six hours later), all time, over completions of the week before too
    (still taken on a Tuesday: the late grace); each board stored exactly
    as a build of it alone stores it, tie times (`first`) included; the
    seqs read as arrays, or (beyond a window of 37) as sorted pairs."""
    monkeypatch.setattr(filling, "SEQ_WINDOW", window)
    tuesday = datetime(2026, 12, 1, 12, tzinfo=UTC)
    svc = rt.derive(clock=lambda: tuesday, tie_policy="first")
    start = datetime(2026, 11, 28, tzinfo=UTC)
    rnd = random.Random(8)
    work = await recorded(svc, [
        {"completion_id": f"s{i}", "user_id": rnd.randint(1, 20), "points": rnd.randint(1, 20),
         "completed_at": (start + timedelta(seconds=rnd.randint(0, 3 * 86400 + 43000))
                          ).isoformat(),
         "tags": rnd.sample(["course:sql", "track:data"], rnd.randint(1, 2))}
        for i in range(300)])
    assert len(work) == 300
    # Voided and restored: the first completions' rows move past later ones
    # in the table (a scan finds them out of seq order).
    for it in work[:5]:
        await svc.corrections.void(it["completion_id"], "check")
        await svc.corrections.restore(it["completion_id"])
    await svc.learners.update(work[0]["user_id"], ProfileIn(visibility="anonymous"))
    await svc.learners.update(work[1]["user_id"], ProfileIn(display_name="Ada"))
    await svc.board_kinds.define("course", {"metric": metric, "time_zone": PARIS,
                                            "periods": ["week", "all"]})
    await svc.board_kinds.define("track", {"metric": metric, "time_zone": "America/New_York",
                                           "periods": ["week", "all"]})
    seasons = [WEEK.on("course:sql", metric), EVER.on("course:sql", metric),
               parse_season("2026-W49", zone="America/New_York").on("track:data", metric),
               EVER.on("track:data", metric)]
    outcome = await svc.rebuilder.run_many(seasons)
    assert all(isinstance(r, RebuildResult) for r in outcome.values()), outcome
    totals = [sum(expected(work, s.board, s, metric).values()) for s in seasons]
    assert totals[0] < totals[1] and totals[2] < totals[3]  # the ranges matter
    together = {s.name: await stored(svc, s) for s in seasons}
    for season in seasons:
        await exact(svc, season, work)
        assert isinstance(await svc.rebuilder.run(season), RebuildResult)
        assert await stored(svc, season) == together[season.name], season.name
    await check_all(svc, seasons)


async def test_the_slots_share_the_boards_waiting_evenly(
        rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two slots, eight boards waiting: four each (split over every slot,
    the second took half of what the first left: 4, 2, 1, 1)."""
    svc = rt.derive(clock=lambda: NOW)
    courses = [f"course:c{n}" for n in range(8)]
    await recorded(svc, [{"completion_id": f"e{i}", "user_id": 1 + i % 5, "points": 3,
                          "completed_at": "2026-12-01T10:00:00Z", "tags": [courses[i % 8]]}
                         for i in range(40)])
    calls = counted(monkeypatch, svc.rebuilder)
    await svc.board_kinds.define("course", {"time_zone": PARIS})
    assert await svc.healer.heal({WEEK.on(c, "points") for c in courses}, 60)
    assert sorted(len(c) for c in calls) == [4, 4], calls


async def test_completions_and_an_erasure_during_the_scan_count_once(rt: Runtime) -> None:
    """Held after the snapshot: completions applied live reach every board
    being built (and the snapshot lacks them), an erasure reaches them too."""
    svc = rt.derive(clock=lambda: NOW)
    work = await recorded(svc, items(200, seed=6))
    await svc.board_kinds.define("course", {"time_zone": PARIS})
    seasons = [WEEK.on(b, "points") for b in BOARDS[:2]]
    late = [{"completion_id": f"late{i}", "user_id": 40 + i % 3, "points": 5,
             "completed_at": "2026-12-01T10:00:00Z", "tags": ["course:sql", "course:python-101"]}
            for i in range(6)]
    both = [{"completion_id": f"both{i}", "user_id": 50 + i % 4, "points": 7,
             "completed_at": "2026-12-01T11:00:00Z", "tags": ["course:sql", "course:python-101"]}
            for i in range(8)]
    victim = sorted({it["user_id"] for it in work if "course:sql" in it["tags"]})[0]
    with failpoints.hold("ingest_after_commit") as committed:
        ingest = asyncio.create_task(recorded(svc, both))
        await committed.reached()  # committed, not applied yet: in the snapshot
        with failpoints.hold("rebuild_snapshot_taken") as held:
            build = asyncio.create_task(svc.rebuilder.run_many(seasons))
            await held.reached()
            committed.release()
            work += await ingest  # applied live to the building versions too: once
            work += await recorded(svc, late)  # after the snapshot: live only
            await svc.learners.erase(victim)
    outcome = await build
    assert all(isinstance(r, RebuildResult) for r in outcome.values()), outcome
    await svc.projector.drain(min_age_seconds=0)
    work = [it for it in work if it["user_id"] != victim]
    for season in seasons:
        await exact(svc, season, work)
    await check_erased_everywhere(svc, {victim})
    await check_all(svc, seasons)


async def test_a_board_another_builds_is_left_to_it_and_a_deleted_kind_fails(
        rt: Runtime) -> None:
    svc = rt.derive(clock=lambda: NOW)
    work = await recorded(svc, items(100, seed=7))
    await svc.board_kinds.define("course", {"time_zone": PARIS})
    python, sql, go = (WEEK.on(b, "points") for b in BOARDS)
    with failpoints.hold("rebuild_before_switch", times=1) as held:
        alone = asyncio.create_task(svc.rebuilder.run(sql))
        await held.reached()
        outcome = await svc.rebuilder.run_many([python, sql])
        assert isinstance(outcome[sql], RebuildRunning)
        assert isinstance(outcome[python], RebuildResult)
    await alone
    for season in (python, sql):
        await exact(svc, season, work)
    # A kind deleted while its boards are built: none of them stays.
    with failpoints.hold("rebuild_before_switch") as held:
        build = asyncio.create_task(svc.rebuilder.run_many([go, python]))
        await held.reached()
        assert await svc.board_kinds.delete("course")
    outcome = await build
    assert all(isinstance(r, RebuildFailed) for r in outcome.values()), outcome
    assert not await svc.board.present(go)
    assert not await svc.board.present(python)
    with pytest.raises(ValueError, match="one metric"):
        await svc.rebuilder.run_many([go, parse_season("2026-W49", zone="UTC")])
