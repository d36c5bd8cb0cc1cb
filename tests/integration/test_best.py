"""The `best` metric (CONTRACT.md, "Boards of a course, a track or a
skill"): a learner's highest points of one completion that counts; under
`first` the earliest completion giving it breaks a tie; a void falls back
to the next best, read from PostgreSQL and guarded like the `first`
policy's tie time (apply.lua, "Best"), whatever is applied meanwhile."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from laurels.core import failpoints
from laurels.core.seasons import parse_season
from laurels.runtime import Runtime, Services

NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)
W49 = parse_season("2026-W49", zone="UTC")
BOARD = W49.on("course:sql", "best")
ALL = parse_season("all", zone="UTC").on("course:sql", "best")


def at(cid: str, uid: int, points: int, minutes: int) -> dict[str, Any]:
    """A completion of course:sql `minutes` into W49."""
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": (W49.starts_at + timedelta(minutes=minutes)).isoformat(),
            "tags": ["course:sql"]}


async def board(svc: Services, season: Any = BOARD) -> list[tuple[int | None, int]]:
    await svc.projector.drain(min_age_seconds=0)
    body = await svc.reads.top(season, 100)
    return [(e["user_id"], e["score"]) for e in body["entries"]]


async def consistent(svc: Services) -> None:
    for season in (BOARD, ALL):
        verdict = await svc.verifier.verify(season)
        assert verdict.consistent, verdict.body()


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_best_keeps_the_highest_and_a_void_falls_back(rt: Runtime, policy: str) -> None:
    svc = rt.derive(clock=lambda: NOW, tie_policy=policy)
    await svc.board_kinds.define("course", {"metric": "best", "periods": ["week", "all"]})
    await svc.ingestor.record([at("a1", 1, 5, 60), at("a2", 1, 9, 120), at("a3", 1, 7, 180),
                               at("b1", 2, 8, 30)])
    assert await board(svc) == [(1, 9), (2, 8)]
    await svc.corrections.void("a2", "copied")
    assert await board(svc) == [(2, 8), (1, 7)]  # the next best, not 9 - 9
    assert await board(svc, ALL) == [(2, 8), (1, 7)]
    await svc.corrections.void("a3", "copied")
    assert await board(svc) == [(2, 8), (1, 5)]
    await svc.corrections.void("a1", "copied")
    assert await board(svc) == [(2, 8)]  # nothing counts: off the board
    await svc.corrections.restore("a3", "fine after all")
    assert await board(svc) == [(2, 8), (1, 7)]
    await svc.corrections.restore("a2", "fine after all")
    assert await board(svc) == [(1, 9), (2, 8)]
    body = await svc.reads.top(BOARD, 10)
    assert (body["board"], body["metric"]) == ("course:sql", "best")
    await consistent(svc)
    await svc.rebuilder.run(BOARD)
    assert await board(svc) == [(1, 9), (2, 8)]


async def test_under_first_the_earliest_completion_giving_the_best_wins(rt: Runtime) -> None:
    """Learner 1 scores 8 at +2h and 8 again at +4h; learner 2 scores 8 at
    +3h. Learner 1 reached 8 first: they rank first (under a sum's tie time,
    their latest completion, learner 2 would). A late completion of 8 at
    +1h moves their tie time earlier; voiding it and the +2h one leaves
    +4h, behind learner 2."""
    svc = rt.derive(clock=lambda: NOW, tie_policy="first")
    await svc.board_kinds.define("course", {"metric": "best", "periods": ["week", "all"]})
    await svc.ingestor.record([at("a1", 1, 8, 120), at("a2", 1, 8, 240), at("b1", 2, 8, 180),
                               at("a0", 1, 3, 10)])
    assert await board(svc) == [(1, 8), (2, 8)]
    await svc.ingestor.record([at("a3", 1, 8, 60)])
    [standing] = await svc.board.standings_of(BOARD, [1])
    assert standing.last_ts == BOARD.offset_us(W49.starts_at + timedelta(minutes=60))
    await consistent(svc)
    await svc.corrections.void("a3", "copied")
    await svc.corrections.void("a1", "copied")
    assert await board(svc) == [(2, 8), (1, 8)]
    [standing] = await svc.board.standings_of(BOARD, [1])
    assert standing.last_ts == BOARD.offset_us(W49.starts_at + timedelta(minutes=240))
    await consistent(svc)
    await svc.rebuilder.run(BOARD)  # a rebuild ranks them the same
    assert await board(svc) == [(2, 8), (1, 8)]


@pytest.mark.parametrize("racer", ["completion", "restore"])
async def test_a_void_never_writes_a_stale_next_best(rt: Runtime, racer: str) -> None:
    """`shared` policy (a `best` board is guarded under either). Learner 1
    has 3 points and 9; a void of the 9 reads the fallback (3) from
    PostgreSQL and is held there; meanwhile a 6 of learner 1 comes to
    count, applied at once (a new completion, or a restore of one voided
    before). The void's apply must not write 3 over it: the board says 6,
    as a rebuild would."""
    svc = rt.derive(clock=lambda: NOW, tie_policy="shared")
    await svc.board_kinds.define("course", {"metric": "best"})
    await svc.ingestor.record([at("t1", 1, 3, 60), at("t2", 1, 9, 120), at("o1", 2, 4, 30)])
    if racer == "restore":
        await svc.ingestor.record([at("t3", 1, 6, 150)])
        await svc.corrections.void("t3", "checked later")
    assert (await board(svc))[0] == (1, 9)

    async def race() -> None:
        if racer == "restore":
            await svc.corrections.restore("t3", "it was fine")
        else:
            await svc.ingestor.record([at("t3", 1, 6, 150)])

    with failpoints.hold("void_tie_read") as held:
        void = asyncio.create_task(svc.corrections.void("t2", "copied"))
        await held.reached()
        await race()
    await void
    assert await board(svc) == [(1, 6), (2, 4)]
    verdict = await svc.verifier.verify(BOARD)
    assert verdict.consistent, verdict.body()


@pytest.mark.parametrize("metric", ["points", "completions", "best"])
async def test_a_snapshot_completion_applied_live_counts_once_on_a_board(
        rt: Runtime, metric: str) -> None:
    """test_interleavings' 7 on a board of a kind, by each metric: a
    completion of the rebuild's snapshot reaches the version being built
    live before its bits are merged (the board's bits hash). It counts once:
    a sum takes its score out of the aggregate (1 on `completions`, not its
    points), `best` keeps the higher of the two."""
    svc = rt.derive(clock=lambda: NOW)
    await svc.board_kinds.define("course", {"metric": metric})
    season = W49.on("course:sql", metric)
    await svc.ingestor.record([at("s1", 1, 4, 10), at("s0", 2, 2, 5)])
    await svc.projector.drain(min_age_seconds=0)
    with failpoints.hold("ingest_after_commit") as ingest_held:
        ingest = asyncio.create_task(svc.ingestor.record([at("s2", 1, 6, 20),
                                                          at("s3", 2, 1, 30)]))
        await ingest_held.reached()  # committed, not applied yet
        with failpoints.hold("rebuild_snapshot_taken") as rebuild_held:
            rebuild = asyncio.create_task(svc.rebuilder.run(season))
            await rebuild_held.reached()  # building, the snapshot holds s2 and s3
            ingest_held.release()
            await ingest  # applied to the current and the building version
    await rebuild
    await svc.ingestor.record([at("s4", 2, 3, 40)])  # after the switch
    want = {"points": {1: 10, 2: 6}, "completions": {1: 2, 2: 3}, "best": {1: 6, 2: 3}}
    assert dict(await board(svc, season)) == want[metric]
    verdict = await svc.verifier.verify(season)
    assert verdict.consistent, verdict.body()
    sk = svc.board.season_keys(season)
    vk = sk.version(await svc.redis.get(sk.current))
    assert await svc.redis.exists(vk.bits) and not await svc.redis.scard(vk.chunks)
