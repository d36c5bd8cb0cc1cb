"""A kind defined while other writers run (issue 63, points 3 and 4), forced
deterministically with held pause points: a void racing the definition of
the kind its completion counts on reaches that kind's archive; a profile
change racing the first build of a late kind's board reaches that board."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from laurels.core import failpoints
from laurels.core.seasons import Season, parse_season
from laurels.runtime import Runtime, Services
from tests.integration.test_interleavings import LATE_W47, NOW, W47, W49, services
from tests.invariants import blocked_or_done

COURSE_W47 = parse_season("course:a/points/UTC/2026-W47", zone="UTC")


def tagged(cid: str, uid: int, points: int, season: Season = W47, hour: int = 1
           ) -> dict[str, Any]:
    at = season.starts_at + timedelta(hours=hour)
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": at.isoformat(), "tags": ["course:a"]}


async def archived(svc: Services, season: Season) -> list[tuple[int, int]]:
    async with svc.db.connection() as conn:
        cur = await conn.execute("SELECT user_id, score FROM season_standings"
                                 " WHERE season = %s ORDER BY user_id", (season,))
        return [(r["user_id"], r["score"]) for r in await cur.fetchall()]


async def build_and_close(svc: Services, season: Season) -> None:
    """A late kind's closed week: built, then finalized (the whole board's
    week it spans is finalized already)."""
    await svc.rebuilder.run(season)
    assert season in await svc.lifecycle.finalize_due(NOW)


async def test_a_void_racing_a_kinds_definition_reaches_its_archive(rt: Runtime) -> None:
    """The void holds its locks (the kinds' lock among them, shared) when the
    kind is defined: the definition waits, and the kind's closed week is
    built and archived from a snapshot without the voided points. Before,
    the void read the kinds before its transaction: the week was archived
    with them, and the void re-ranked only the archives it had locked."""
    late = services(rt, LATE_W47)
    await late.ingestor.record([tagged("v1", 1, 50), tagged("v2", 2, 30)])
    svc = services(rt, NOW)
    assert await svc.lifecycle.finalize(W47)
    with failpoints.hold("correction_locked") as held:
        void = asyncio.create_task(svc.corrections.void("v1", "cheat"))
        await held.reached()
        define = asyncio.create_task(svc.board_kinds.define("course", {}))
        await blocked_or_done(svc, define)
        if define.done():  # nothing held it: the week is archived while the void waits
            await build_and_close(svc, COURSE_W47)
    await void
    await define
    if COURSE_W47 not in await svc.lifecycle.finalized([COURSE_W47]):
        await build_and_close(svc, COURSE_W47)
    assert await archived(svc, COURSE_W47) == [(2, 30)]
    assert await archived(svc, W47) == [(2, 30)]
    body = await svc.reads.top(COURSE_W47, 10)
    assert [(e["user_id"], e["score"]) for e in body["entries"]] == [(2, 30)]
    assert (await svc.verifier.verify(COURSE_W47)).consistent


async def test_a_bulk_void_racing_a_kinds_definition_reaches_its_archive(
        rt: Runtime) -> None:
    late = services(rt, LATE_W47)
    await late.ingestor.record([tagged("w1", 1, 50), tagged("w2", 1, 20, hour=2),
                                tagged("w3", 2, 30)])
    svc = services(rt, NOW)
    assert await svc.lifecycle.finalize(W47)
    with failpoints.hold("correction_locked") as held:
        void = asyncio.create_task(svc.corrections.correct_learner(1, True, "cheat", None))
        await held.reached()
        define = asyncio.create_task(svc.board_kinds.define("course", {}))
        await blocked_or_done(svc, define)
        if define.done():
            await build_and_close(svc, COURSE_W47)
    assert (await void)["voided"] == 2
    await define
    if COURSE_W47 not in await svc.lifecycle.finalized([COURSE_W47]):
        await build_and_close(svc, COURSE_W47)
    assert await archived(svc, COURSE_W47) == [(2, 30)]
    assert (await svc.verifier.verify(COURSE_W47)).consistent


async def test_verify_checks_a_closed_seasons_archive(rt: Runtime) -> None:
    """verify compares a finalized season's archive with PostgreSQL too,
    while Redis still holds its board: a score changed, a learner missing
    and one extra are each found (before, only the board was compared)."""
    late = services(rt, LATE_W47)
    await late.ingestor.record([tagged("a1", 1, 50), tagged("a2", 2, 30),
                                tagged("a3", 3, 20)])
    svc = services(rt, NOW)
    await svc.board_kinds.define("course", {})
    assert await svc.lifecycle.finalize(W47)
    await build_and_close(svc, COURSE_W47)
    for season in (W47, COURSE_W47):
        assert (await svc.verifier.verify(season)).consistent, season
    async with svc.db.connection() as conn:
        await conn.execute("UPDATE season_standings SET score = 45 WHERE user_id = 1")
        await conn.execute("DELETE FROM season_standings WHERE user_id = 2")
        await conn.execute("INSERT INTO season_standings (season, user_id, score,"
                           " last_completed_at) SELECT season, 9, 5, last_completed_at"
                           " FROM season_standings WHERE user_id = 3")
    for season in (W47, COURSE_W47):
        result = await svc.verifier.verify(season)
        assert not result.consistent, result.body()
        # The archive against the completions (the board against the archive
        # differs the same three ways, the other way round).
        found = {(m.user_id, m.redis, m.postgres) for m in result.mismatches
                 if m.difference.startswith("archive: ")}
        assert found == {(1, 45, 50), (2, None, 30), (9, 5, None)}, season


COURSE_W49 = parse_season("course:a/points/UTC/2026-W49", zone="UTC")


async def test_a_profile_change_racing_a_late_kinds_first_build_reaches_it(
        rt: Runtime) -> None:
    """Issue 63, point 4: the change has read the learner's seasons (the
    kind's board had no row yet) and not committed; the board is built for
    the first time meanwhile, from a snapshot before the change. After its
    commit the change reads the seasons again and reaches that board too.
    Before, the hidden learner kept a public rank there (#1 of 2 where
    they should be on no public board), until their next completion."""
    from laurels.core.validation import ProfileIn

    svc = services(rt, NOW)
    await svc.ingestor.record([tagged("p1", 1, 50, season=W49),
                               tagged("p2", 2, 30, season=W49)])
    await svc.board_kinds.define("course", {})  # defined late: no board built yet
    with failpoints.hold("profile_locked") as held:
        hide = asyncio.create_task(svc.learners.update(1, ProfileIn(visibility="hidden",
                                                                    display_name="Ada")))
        await held.reached()
        build = asyncio.create_task(svc.rebuilder.run(COURSE_W49))
        await blocked_or_done(svc, build)
        assert build.done(), "the first build waits for nothing the change holds"
    await build
    await hide
    body = await svc.reads.top(COURSE_W49, 10)
    assert [(e["user_id"], e["score"]) for e in body["entries"]] == [(2, 30)]
    assert body["total"] == 1
    assert (await svc.verifier.verify(COURSE_W49)).consistent
