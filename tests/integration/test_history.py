"""A long board (all time) rebuilt from its history (issue 29; lifecycle/history.py):
the archived standings of its closed weeks plus the completions of the
weeks still open, exactly once: a replay of an old completion changes
nothing, a void or restore of one reaches it once, a completion applied live
during the rebuild counts once, a week closing during the rebuild too."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from laurels.board import Delta, Profile
from laurels.core import failpoints
from laurels.core.ranking import pad_uid
from laurels.core.seasons import parse_season
from laurels.lifecycle.history import history_of
from laurels.runtime import Runtime, Services
from tests.invariants import check_all

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)  # W49; W45..W47 closed, W48 in its grace
WEEKS = ["2026-W45", "2026-W46", "2026-W47", "2026-W48", "2026-W49"]
ALL = parse_season("all", zone="UTC")
MONTH = parse_season("2026-12", zone="UTC")


def item(cid: str, uid: int, points: int, week: str, hours: int = 1) -> dict[str, Any]:
    at = parse_season(week, zone="UTC").starts_at + timedelta(hours=hours)
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": at.isoformat()}


async def history(rt: Runtime, now: datetime = NOW, **overrides: Any) -> Services:
    """Completions in five weeks, recorded while each was open; the closed
    ones finalized (archived)."""
    svc = rt.derive(clock=lambda: now, periods=("week", "all"), close_seasons=False,
                    **overrides)
    for n, week in enumerate(WEEKS):
        await svc.ingestor.record([item(f"{week}-{u}", u, u + n, week) for u in (1, 2, 3)])
    closing = rt.derive(clock=lambda: now, periods=("week", "all"), **overrides)
    done = await closing.lifecycle.finalize_due(now)
    assert sorted(done) == [parse_season(w, zone="UTC") for w in WEEKS[:3]]
    return closing


async def scores(svc: Services, season: str) -> dict[int, int]:
    body = await svc.reads.top(parse_season(season, zone="UTC"), 100)
    return {e["user_id"]: e["score"] for e in body["entries"]}


async def pg_all(svc: Services) -> dict[int, int]:
    async with svc.db.connection() as conn:
        cur = await conn.execute("SELECT user_id, sum(points)::int AS s FROM completions"
                                 " WHERE voided_at IS NULL GROUP BY 1")
        return {r["user_id"]: r["s"] for r in await cur.fetchall()}


async def parts_of(svc: Services) -> set[str]:
    sk = svc.board.season_keys(ALL)
    version = await svc.redis.get(sk.current)
    return {str(p) for p in await svc.redis.smembers(sk.version(str(version)).parts)}


async def test_the_all_time_board_is_rebuilt_from_the_archive(rt: Runtime) -> None:
    svc = await history(rt)
    found = await history_of(svc.db, svc.settings.periods, ALL)
    assert found is not None and found.parts == WEEKS[:3]
    assert found.cutoff == parse_season("2026-W48", zone="UTC").starts_at
    result = await svc.rebuilder.run(ALL)
    assert await parts_of(svc) == set(WEEKS[:3])
    assert result.events == 3 * 2 + 3 * 3  # the open weeks' completions, the closed standings
    assert await scores(svc, "all") == await pg_all(svc)
    assert (await svc.verifier.verify(ALL)).consistent
    await check_all(svc, [ALL])


async def test_an_old_completion_replayed_onto_the_rebuilt_board_counts_once(
        rt: Runtime) -> None:
    """A delta of a closed week's completion reaching the rebuilt board (an
    outbox row re-delivered) is a duplicate: the archive counts it."""
    svc = await history(rt)
    await svc.rebuilder.run(ALL)
    before = await scores(svc, "all")
    async with svc.db.connection() as conn:
        cur = await conn.execute("SELECT seq, points, completed_at FROM completions"
                                 " WHERE completion_id = '2026-W45-2'")
        row = await cur.fetchone()
    assert row is not None
    delta = Delta(row["seq"], 2, row["points"], row["completed_at"], ALL,
                  Profile(1, "public", ""), part="2026-W45")
    assert await svc.board.apply([delta]) == ["duplicate"]
    assert await scores(svc, "all") == before


async def test_a_void_of_an_old_completion_reaches_the_rebuilt_board_once(
        rt: Runtime) -> None:
    svc = await history(rt)
    await svc.rebuilder.run(ALL)
    await svc.corrections.void("2026-W46-3", "copied")
    assert await scores(svc, "all") == await pg_all(svc)
    await svc.projector.drain(min_age_seconds=0)  # a re-delivery changes nothing
    assert await scores(svc, "all") == await pg_all(svc)
    await svc.corrections.restore("2026-W46-3")
    assert await scores(svc, "all") == await pg_all(svc)
    assert (await svc.verifier.verify(ALL)).consistent
    assert (await svc.verifier.verify(parse_season("2026-W46", zone="UTC"))).consistent


async def test_a_completion_and_a_closing_week_during_the_rebuild(rt: Runtime) -> None:
    """The rebuild of all time is held after its snapshot: a completion of an
    open week is applied live, and W48 closes (is finalized); the board
    switched to counts every completion once, and the next rebuild takes
    W48 from its archive."""
    svc = await history(rt)
    later = NOW + timedelta(days=1)  # W48's grace is over
    with failpoints.hold("rebuild_snapshot_taken") as held:
        building = asyncio.create_task(svc.rebuilder.run(ALL))
        await held.reached()
        await svc.ingestor.record([item("live-1", 1, 50, "2026-W49")])
        closing = rt.derive(clock=lambda: later, periods=("week", "all"))
        assert await closing.lifecycle.finalize_due(later) == [
            parse_season("2026-W48", zone="UTC")]
    await building
    await svc.projector.drain(min_age_seconds=0)
    assert await scores(svc, "all") == await pg_all(svc)
    await svc.rebuilder.run(ALL)
    assert await parts_of(svc) == set(WEEKS[:4])
    assert await scores(svc, "all") == await pg_all(svc)
    assert (await svc.verifier.verify(ALL)).consistent


async def test_verify_of_the_all_time_board_reads_the_archive(rt: Runtime) -> None:
    """verify compares the board with the archive plus the open weeks: a
    score drifted in Redis is reported, a consistent one is not."""
    svc = await history(rt)
    await svc.rebuilder.run(ALL)
    assert (await svc.verifier.verify(ALL)).consistent
    sk = svc.board.season_keys(ALL)
    vk = sk.version(str(await svc.redis.get(sk.current)))
    await svc.redis.zincrby(vk.public, -5, pad_uid(2))  # `shared`: the member is the id
    result = await svc.verifier.verify(ALL)
    assert not result.consistent and [m["user_id"] for m in result.body()["mismatches"]] == [2]


async def test_a_month_is_built_from_its_closed_days(rt: Runtime) -> None:
    later = datetime(2026, 12, 4, 12, tzinfo=UTC)  # Dec 1 closed (grace 48 h), Dec 2 not
    svc = rt.derive(clock=lambda: later, periods=("week", "day", "month"),
                    close_seasons=False)
    for day in range(1, 3):
        at = datetime(2026, 12, day, 9, tzinfo=UTC)
        await svc.ingestor.record([{"completion_id": f"d{day}-{u}", "user_id": u,
                                    "points": u * day, "completed_at": at.isoformat()}
                                   for u in (1, 2)])
    closing = rt.derive(clock=lambda: later, periods=("week", "day", "month"))
    assert parse_season("2026-12-01", zone="UTC") in await closing.lifecycle.finalize_due(later)
    found = await history_of(svc.db, svc.settings.periods, MONTH)
    assert found is not None and found.parts == ["2026-12-01"]
    await svc.rebuilder.run(MONTH)
    assert await scores(svc, "2026-12") == {1: 3, 2: 6}
    assert (await svc.verifier.verify(MONTH)).consistent
