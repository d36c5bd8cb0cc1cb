"""The whole board in a time zone (CONTRACT.md, `LAURELS_TIME_ZONE`): the
season of a completion is its week (day, month) in the local calendar,
over HTTP against the real stores: recording, every period's board, its
bounds in UTC, verify, a rebuild, a void and an erasure."""

from __future__ import annotations

import pytest

from tests.api.conftest import ApiFactory
from tests.api.test_periods import ALL, post, read, scores
from tests.helpers import ADMIN, INGEST, completion, eventually

PARIS = "Europe/Paris"
ITEMS = [
    ("p1", 1, 5, "2026-11-22T22:59:59.999999Z"),  # Sunday 23:59 in Paris: 2026-W47
    ("p2", 1, 7, "2026-11-22T23:00:00Z"),  # Monday 00:00 in Paris: 2026-W48, Nov 23
    ("p3", 2, 11, "2026-11-30T23:30:00Z"),  # Dec 1 00:30 in Paris: W49, December
    ("p4", 2, 13, "2026-10-25T00:30:00Z"),  # the 25-hour day (02:30 CEST)
    ("p5", 3, 17, "2026-10-25T01:30:00Z"),  # the same day (02:30 CET, the hour again)
    ("p6", 3, 1, "2026-10-25T23:30:00Z"),  # Oct 26 00:30 in Paris
]


async def test_seasons_follow_the_local_calendar(serve: ApiFactory) -> None:
    api = await serve(periods=ALL, close_seasons=False, time_zone=PARIS)
    c = api.client(INGEST)
    first = await c.post("/v1/completions", json=completion(*ITEMS[1]))
    assert first.json()["season"] == "2026-W48"  # in UTC it is still Sunday, 2026-W47
    await post(c, [ITEMS[0], *ITEMS[2:]])
    assert await scores(api, "2026-W47") == [(1, 5)]
    assert await scores(api, "2026-W48") == [(1, 7)]
    assert await scores(api, "2026-W49") == [(2, 11)]
    assert await scores(api, "2026-11-23") == [(1, 7)]
    assert await scores(api, "2026-11-22") == [(1, 5)]
    assert await scores(api, "2026-11-30") == []
    assert await scores(api, "2026-12") == [(2, 11)]
    assert await scores(api, "2026-11") == [(1, 12)]
    assert await scores(api, "2026-10-25") == [(3, 17), (2, 13)]
    assert await scores(api, "2026-10-26") == [(3, 1)]
    day = await read(api, "2026-10-25")
    assert (day["starts_at"], day["ends_at"]) == ("2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z")
    week = await read(api, "2026-W48")
    assert (week["starts_at"], week["ends_at"]) == ("2026-11-22T23:00:00Z", "2026-11-29T23:00:00Z")
    admin = api.client(ADMIN)
    for season in ("2026-W47", "2026-11-22", "2026-12", "2026-10-25", "2026-10", "all"):
        verdict = (await admin.get(f"/v1/admin/leaderboards/{season}/verify")).json()
        assert verdict["consistent"], (season, verdict)
    # A rebuild from PostgreSQL finds the same local seasons.
    for season in ("2026-12", "2026-10-25"):
        before = await scores(api, season)
        started = await admin.post(f"/v1/admin/leaderboards/{season}/rebuild")
        assert started.status_code == 202

        async def done(rid: str = started.json()["rebuild_id"]) -> bool:
            status = (await admin.get(f"/v1/admin/rebuilds/{rid}")).json()["status"]
            assert status != "failed"
            return status == "succeeded"

        await eventually(done, 30, f"the rebuild of {season}")
        assert await scores(api, season) == before
    # A void leaves the local day's board; an erasure every board.
    resp = await admin.post("/v1/admin/completions/p5/void", json={"reason": "test"})
    assert resp.status_code == 200, resp.text
    assert await scores(api, "2026-10-25") == [(2, 13)]
    assert (await admin.delete("/v1/users/2")).status_code == 204
    for season in ("2026-W49", "2026-12", "2026-10-25", "2026-10", "all"):
        assert all(u != 2 for u, _ in await scores(api, season)), season
        verdict = (await admin.get(f"/v1/admin/leaderboards/{season}/verify")).json()
        assert verdict["consistent"], (season, verdict)


pytestmark = pytest.mark.once
