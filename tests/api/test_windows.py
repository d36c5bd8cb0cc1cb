"""Rolling windows over HTTP (CONTRACT.md, "Rolling windows"): `last-7d` and
`last-30d` read like any season, on the whole board and on a kind's boards;
at each local midnight the day leaving goes, and reads answer meanwhile;
a window not configured is 404."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import httpx

from laurels.core import failpoints
from tests.api.conftest import Api, ApiFactory
from tests.helpers import ADMIN, INGEST, assert_problem, completion, eventually

WINDOWS = ("week", "day", "7d", "30d")


def set_clock(api: Api, when: str) -> None:
    """Every clock a window's reads and moves follow, to `when` (UTC)."""
    moment = datetime.fromisoformat(when).replace(tzinfo=UTC)
    rt: Any = api.runtime
    for service in (rt.windows, rt.rebuilder, rt.reads, rt.projector, rt.ingestor):
        service.clock = lambda: moment


async def windowed(serve: ApiFactory, when: str) -> Api:
    api = await serve(periods=WINDOWS, close_seasons=False)
    await api.app.state.supervisor.stop_loop("windows")  # the test moves them
    set_clock(api, when)
    return api


async def post(c: httpx.AsyncClient, *items: tuple[str, int, int, str], **extra: Any) -> None:
    resp = await c.post("/v1/completions/batch", json={"completions": [
        {**completion(cid, uid, pts, at), **extra} for cid, uid, pts, at in items]})
    assert resp.status_code == 200, resp.text
    assert {r["status"] for r in resp.json()["results"]} == {"recorded"}, resp.text


async def board(api: Api, season: str, **params: Any) -> dict[str, Any]:
    await api.runtime.projector.drain(min_age_seconds=0)

    async def built() -> httpx.Response | None:  # a board built on first use answers 503
        resp = await api.get(f"/v1/leaderboards/{season}", params=params)
        if resp.status_code == 503:
            return None
        assert resp.status_code == 200, resp.text
        return resp

    body: dict[str, Any] = (await eventually(built, 20, f"the board of {season}")).json()
    return body


def scores(body: dict[str, Any]) -> list[tuple[int, int]]:
    return [(e["user_id"], e["score"]) for e in body["entries"]]


async def test_windows_read_like_any_season_and_move_at_midnight(serve: ApiFactory) -> None:
    api = await windowed(serve, "2026-12-09T12:00:00")
    c = api.client(INGEST)
    await post(c, ("old", 1, 50, "2026-12-02T23:00:00Z"), ("a", 1, 5, "2026-12-03T08:00:00Z"),
               ("b", 2, 9, "2026-12-09T08:00:00Z"))
    await api.runtime.windows.tick()
    week = await board(api, "last-7d")
    assert scores(week) == [(2, 9), (1, 5)]
    assert {k: week[k] for k in ("season", "period", "board", "starts_at", "ends_at")} == {
        "season": "last-7d", "period": "7d", "board": "global",
        "starts_at": "2026-12-03T00:00:00Z", "ends_at": "2026-12-10T00:00:00Z"}
    assert scores(await board(api, "last-30d")) == [(1, 55), (2, 9)]
    mine = await api.client(ADMIN).get("/v1/leaderboards/last-7d/users/1")
    assert mine.status_code == 200 and mine.json()["user"]["score"] == 5, mine.text

    set_clock(api, "2026-12-10T00:00:01")
    with failpoints.hold("window_batch_left") as held:
        moving = asyncio.ensure_future(api.runtime.windows.tick())
        await held.reached()
        during = await api.get("/v1/leaderboards/last-7d")  # mid-move: an answer, no 503
        assert during.status_code == 200, during.text
    await moving
    assert scores(await board(api, "last-7d")) == [(2, 9)]
    assert scores(await board(api, "last-30d")) == [(1, 55), (2, 9)]


async def test_a_kind_s_window_and_a_window_not_configured(serve: ApiFactory) -> None:
    api = await windowed(serve, "2026-12-09T12:00:00")
    admin = api.client(ADMIN)
    resp = await admin.put("/v1/admin/board-kinds/course",
                           json={"title": "Courses", "metric": "completions",
                                 "periods": ["week", "7d"]})
    assert resp.status_code == 201 and resp.json()["periods"] == ["week", "7d"], resp.text
    bad = await admin.put("/v1/admin/board-kinds/track", json={"periods": ["week", "14d"]})
    assert_problem(bad, 422, "validation_error")
    c = api.client(INGEST)
    await post(c, ("x", 1, 5, "2026-12-03T08:00:00Z"), ("y", 1, 5, "2026-12-08T08:00:00Z"),
               ("z", 2, 5, "2026-12-09T08:00:00Z"), tags=["course:sql"])
    await api.runtime.windows.tick()
    body = await board(api, "last-7d", board="course:sql")
    assert (body["board"], body["metric"], scores(body)) == ("course:sql", "completions",
                                                             [(1, 2), (2, 1)])
    set_clock(api, "2026-12-10T00:00:01")
    await api.runtime.windows.tick()
    assert scores(await board(api, "last-7d", board="course:sql")) == [(1, 1), (2, 1)]
    # The kind has no 30-day window, and a deployment without windows has none.
    assert_problem(await api.get("/v1/leaderboards/last-30d",
                                 params={"board": "course:sql"}), 404, "not_found")
    plain = await serve(periods=("week",))
    assert_problem(await plain.get("/v1/leaderboards/last-7d"), 404, "not_found")
    assert_problem(await plain.get("/v1/leaderboards/last-14d"), 422, "validation_error")
