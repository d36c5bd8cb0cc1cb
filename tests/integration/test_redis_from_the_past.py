"""A Redis back from an older snapshot (issue 63, points 1 and 2): a Redis
connection is untrusted until proven. Board reads answer 503 until the
boards are repaired, whatever the timing (the first read on a new
connection already refuses, before any epoch tick); boards of a kind
deleted since the snapshot are found by scanning Redis, not from the rows
the deletion removed. Each test restarts its own redis-server from its own
dump (test_catchup.Server)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from laurels.api.problems import response_for
from laurels.board.trust import Unproven
from laurels.core.errors import StoreUnavailable
from laurels.core.seasons import Season, parse_season
from laurels.process.settings import Secrets
from laurels.runtime import Runtime, Services
from tests.helpers import ADMIN, INGEST, USER_SECRET, make_settings
from tests.integration.test_catchup import (
    NOW,
    Server,
    check_after_restart,
    pytestmark,  # noqa: F401 (the same marks: the machine's redis-server, once)
    reconnected,
)
from tests.integration.test_catchup import server as server  # the fixture
from tests.invariants import HintTap, check_erased_everywhere

WEEK = parse_season("2026-W49", zone="UTC")
COURSE = parse_season("course:a/points/UTC/2026-W49", zone="UTC")


def item(cid: str, uid: int, points: int, tagged: bool = True) -> dict[str, Any]:
    at = WEEK.starts_at + timedelta(hours=uid)
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": at.isoformat(), "tags": ["course:a"] if tagged else []}


async def runtime(tmp_path: Path, database_url: str, server: Server) -> Runtime:
    settings = make_settings(tmp_path, database_url, server.url, "past", redis_cluster=False)
    rt = Runtime(settings, Secrets(INGEST, ADMIN, USER_SECRET), database_url, server.url)
    await rt.open(run_migrations=False)
    return rt


async def kind_keys(svc: Services, kind: str = "") -> list[str]:
    """The keys Redis holds of boards of a kind (of any kind: ""), by a scan
    of their hash tags (`{kind:value/...}`)."""
    pattern = f"{svc.keys.prefix}:{{{kind}:*" if kind else f"{svc.keys.prefix}:{{*/*"
    return [str(k) async for k in svc.redis.scan_iter(match=pattern)]


async def top(svc: Services, season: Season) -> list[tuple[int | None, int]]:
    body = await svc.reads.top(season, 100)
    return [(e["user_id"], e["score"]) for e in body["entries"]]


async def built(svc: Services, season: Season) -> list[tuple[int | None, int]]:
    """The board once built (a read heals it)."""
    for _ in range(200):
        try:
            return await top(svc, season)
        except Exception as exc:  # 503 rebuilding until built
            if getattr(exc, "code", None) != "rebuilding":
                raise
            await asyncio.sleep(0.05)
    raise AssertionError(f"{season} was never built")


async def test_reads_refuse_a_redis_back_from_the_past_until_it_is_repaired(
        tmp_path: Path, database_url: str, server: Server) -> None:
    rt = await runtime(tmp_path, database_url, server)
    other: Runtime | None = None
    try:
        svc = rt.derive(clock=lambda: NOW)
        await svc.ingestor.record([item(f"a{u}", u, 10 * u, tagged=False) for u in (1, 2, 3)])
        await svc.rebuilder.run(WEEK)
        await svc.epoch.check()  # the run id proven
        server.snapshot()
        await svc.learners.erase(2)  # what the snapshot will not hold
        assert [u for u, _ in await top(svc, WEEK)] == [3, 1]
        server.stop()
        server.start()
        await reconnected(svc)  # a new connection: the server's run id is doubted
        # No epoch tick has run: the read itself refuses, never the past's board.
        with pytest.raises(Unproven):
            await svc.reads.top(WEEK, 100)
        with pytest.raises(StoreUnavailable):
            await svc.reads.around(WEEK, 2, 5)
        answer = response_for(Unproven({"a-run"}))
        assert answer.status_code == 503 and answer.headers["Retry-After"]
        assert b"run" not in answer.body  # the cause stays in the log
        # A process started now (an API process beside the projector) doubts too.
        other = await runtime(tmp_path, database_url, server)
        with pytest.raises(Unproven):
            await other.reads.top(WEEK, 100)
        async with HintTap(svc, [WEEK]) as tap:
            assert await check_after_restart(svc)  # the repair: erasure replayed, proven
            # Every process drops its cached pages of what the repair changed.
            assert {h.get("season") for h in await tap.drain()} >= {WEEK.name}
        assert await top(svc, WEEK) == [(3, 30), (1, 10)]
        for _ in range(100):  # the other process settles from PostgreSQL's record
            try:
                assert await top(other, WEEK) == [(3, 30), (1, 10)]
                break
            except Unproven:
                await asyncio.sleep(0.05)
        else:
            raise AssertionError("the other process never trusted the repaired Redis")
        await check_erased_everywhere(svc, {2})
    finally:
        if other is not None:
            await other.close()
        await rt.close()


@pytest.mark.parametrize("define_before_repair", [False, True])
async def test_a_deleted_kinds_boards_do_not_come_back_from_a_snapshot(
        tmp_path: Path, database_url: str, server: Server,
        define_before_repair: bool) -> None:
    rt = await runtime(tmp_path, database_url, server)
    try:
        svc = rt.derive(clock=lambda: NOW)
        await svc.board_kinds.define("course", {})
        await svc.ingestor.record([item("a1", 1, 30), item("a2", 2, 20)])
        assert await built(svc, COURSE) == [(1, 30), (2, 20)]
        await svc.epoch.check()
        server.snapshot()  # the kind's boards in it
        assert await svc.board_kinds.delete("course")
        assert await kind_keys(svc, "course") == []
        await svc.learners.erase(2)
        await svc.ingestor.record([item("a3", 1, 100)])  # kept, counts once defined
        server.stop()
        server.start()
        await reconnected(svc)
        assert await kind_keys(svc, "course")  # back from the past
        if define_before_repair:
            await svc.board_kinds.define("course", {})  # finds and drops them first
            assert await kind_keys(svc, "course") == []
            assert await check_after_restart(svc)
        else:
            assert await check_after_restart(svc)  # the repair scans Redis for them
            assert await kind_keys(svc) == []
            await svc.board_kinds.define("course", {})
        assert await built(svc, COURSE) == [(1, 130)]
        assert (await svc.verifier.verify(COURSE)).consistent
        await check_erased_everywhere(svc, {2})
    finally:
        await rt.close()


async def test_the_zone_pass_never_reads_a_board_from_the_past(
        tmp_path: Path, database_url: str, server: Server) -> None:
    """A suspicion of issue 63, disproved: the league zone pass run while a
    restarted Redis is doubted reads no board (the read refuses), so its
    transaction, the watermark of the cohorts it read among its writes,
    commits nothing; once proven, it notifies from the repaired board."""
    rt = await runtime(tmp_path, database_url, server)
    try:
        svc = rt.derive(clock=lambda: NOW, close_seasons=False,
                        league_tiers=("bronze", "silver"), league_size=5,
                        league_promote=(2,), league_demote=(1,))
        await svc.leagues.store_settings()
        await svc.ingestor.record([item(f"z{u}", u, u, tagged=False) for u in range(1, 6)])
        await svc.leagues.place(WEEK)
        await svc.projector.drain(min_age_seconds=0)
        await svc.leagues.zones(WEEK)
        await svc.epoch.check()
        server.snapshot()
        await svc.ingestor.record([item("z1b", 1, 100, tagged=False)])  # 1 enters the zone
        await svc.projector.drain(min_age_seconds=0)
        before = await svc.db.fetch("league_week", season=WEEK)
        server.stop()
        server.start()
        await reconnected(svc)
        with pytest.raises(StoreUnavailable):
            await svc.leagues.zones(WEEK)
        assert await svc.db.fetch("league_week", season=WEEK) == before  # nothing moved
        assert await check_after_restart(svc)
        assert await svc.leagues.zones(WEEK) >= 1
        zones = [n["data"]["zone"] for n in (await svc.notifications.newest(1))["notifications"]
                 if n["kind"] == "league_zone"]
        assert zones == ["promotion"]
    finally:
        await rt.close()
