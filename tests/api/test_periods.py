"""Daily, monthly and all-time boards from the same events (issue 14;
docs/contract.md, Domain: periods), over HTTP in process against the real
stores: every completion counts once on the season of each configured
period, and every read, check and correction follows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from laurels.core.seasons import parse_season, season_of
from tests.api.conftest import Api, ApiFactory
from tests.helpers import ADMIN, INGEST, assert_problem, completion, eventually, token_for

ALL = ("week", "day", "month", "all")
# Each learner's completions around a month's, a year's and a leap day's ends.
ITEMS = [
    ("a1", 1, 5, "2025-11-30T23:59:59.999999Z"),  # 2025-W48, Nov 30, Nov
    ("a2", 1, 7, "2025-12-01T00:00:00Z"),  # 2025-W49, Dec 1, Dec
    ("b1", 2, 11, "2020-12-31T23:59:59.999999Z"),  # 2020-W53, Dec 31, Dec
    ("b2", 2, 13, "2021-01-01T00:30:00+01:00"),  # 2020-12-31 23:30 UTC: the same day
    ("c1", 3, 17, "2024-02-29T12:00:00Z"),  # 2024-W09, leap day, Feb 2024
    ("c2", 2, 1, "2021-01-01T00:00:00Z"),  # 2020-W53, but 2021-01-01 and 2021-01
]


async def post(c: httpx.AsyncClient, items: list[tuple[str, int, int, str]],
               status: str = "recorded") -> None:
    resp = await c.post("/v1/completions/batch", json={"completions": [
        completion(cid, uid, pts, at) for cid, uid, pts, at in items]})
    assert resp.status_code == 200, resp.text
    assert {r["status"] for r in resp.json()["results"]} == {status}, resp.text


async def scores(api: Api, season: str) -> list[tuple[int, int]]:
    body = await read(api, season)
    return [(e["user_id"], e["score"]) for e in body["entries"]]


async def read(api: Api, season: str, **params: Any) -> Any:
    async def built() -> httpx.Response | None:
        resp = await api.get(f"/v1/leaderboards/{season}", params=params)
        if resp.status_code == 503:  # a board built on first use answers 503 meanwhile
            return None
        assert resp.status_code == 200, resp.text
        return resp

    return (await eventually(built, 20, f"the board of {season}")).json()


async def test_every_completion_counts_once_on_each_period_s_board(serve: ApiFactory) -> None:
    api = await serve(periods=ALL, close_seasons=False)
    c = api.client(INGEST)
    await post(c, ITEMS)
    await post(c, ITEMS[:2], "duplicate")  # replays count nowhere
    assert await scores(api, "2025-W48") == [(1, 5)]
    assert await scores(api, "2025-W49") == [(1, 7)]
    assert await scores(api, "2020-W53") == [(2, 25)]
    assert await scores(api, "2025-11-30") == [(1, 5)]
    assert await scores(api, "2025-12-01") == [(1, 7)]
    assert await scores(api, "2020-12-31") == [(2, 24)]
    assert await scores(api, "2021-01-01") == [(2, 1)]
    assert await scores(api, "2025-11") == [(1, 5)]
    assert await scores(api, "2025-12") == [(1, 7)]
    assert await scores(api, "2020-12") == [(2, 24)]
    assert await scores(api, "2021-01") == [(2, 1)]
    assert await scores(api, "2024-02") == [(3, 17)]
    assert await scores(api, "2024-02-29") == [(3, 17)]
    assert await scores(api, "all") == [(2, 25), (3, 17), (1, 12)]
    body = await read(api, "all")
    assert (body["period"], body["starts_at"], body["ends_at"], body["status"]) == (
        "all", None, None, "open")
    body = await read(api, "2020-12")
    assert (body["period"], body["starts_at"], body["ends_at"]) == (
        "month", "2020-12-01T00:00:00Z", "2021-01-01T00:00:00Z")
    assert (await read(api, "2024-02-29"))["period"] == "day"
    admin = api.client(ADMIN)
    for season in ("2025-W48", "2020-W53", "2020-12-31", "2020-12", "2024-02", "all"):
        verdict = (await admin.get(f"/v1/admin/leaderboards/{season}/verify")).json()
        assert verdict["consistent"], (season, verdict)
    assert (await api.runtime.db.fetch_one("outbox_depth") or {})["depth"] == 0


async def test_aliases_and_periods_that_are_not_configured(serve: ApiFactory) -> None:
    api = await serve(periods=("week", "month"))
    c = api.client(INGEST)
    now = datetime.now(UTC)
    assert (await c.post("/v1/completions", json=completion("n1", 9, 3))).status_code == 201
    month = await read(api, "current-month")
    assert month["season"] in {season_of(now, "month", zone="UTC").name,
                               season_of(datetime.now(UTC), "month", zone="UTC").name}
    assert [(e["user_id"], e["score"]) for e in month["entries"]] == [(9, 3)]
    # A period that is not configured is 404; a malformed season 422.
    for path in ("/v1/leaderboards/current-day", "/v1/leaderboards/all",
                 "/v1/leaderboards/2026-11-30", "/v1/leaderboards/all/users/9",
                 "/v1/leaderboards/all/events"):
        token = token_for(api.env, 9)
        assert_problem(await api.client(token).get(path), 404, "not_found")
    assert_problem(await api.get("/v1/leaderboards/2026-13"), 422, "validation_error")
    assert_problem(await api.get("/v1/leaderboards/2026-02-30"), 422, "validation_error")
    assert_problem(await api.client(ADMIN).get("/v1/admin/leaderboards/all/verify"), 404,
                   "not_found")


async def test_first_policy_orders_ties_across_a_month_and_all_time(serve: ApiFactory) -> None:
    """Tie times far beyond a week's 12 digits keep their order."""
    api = await serve(periods=ALL, close_seasons=False, tie_policy="first")
    c = api.client(INGEST)
    await post(c, [("t1", 1, 10, "2025-12-30T10:00:00Z"),  # 1 reached 10 last
                   ("t2", 2, 10, "2025-12-02T10:00:00Z"),
                   ("t3", 3, 4, "2025-12-01T00:00:00Z"), ("t4", 3, 6, "2025-12-29T00:00:00Z"),
                   ("t5", 4, 10, "1999-12-31T23:59:59.999999Z")])
    want = [(1, 2, 10), (2, 3, 10), (3, 1, 10)]
    board = await read(api, "2025-12")
    assert [(e["rank"], e["user_id"], e["score"]) for e in board["entries"]] == want
    board = await read(api, "all")
    assert [(e["rank"], e["user_id"], e["score"]) for e in board["entries"]] == [
        (1, 4, 10), *[(r + 1, u, s) for r, u, s in want]]
    # Paging by cursor over all time keeps that order.
    first = await read(api, "all", limit=2)
    rest = (await api.get("/v1/leaderboards/all", params={"limit": 2,
                                                          "after": first["next"]})).json()
    assert [e["user_id"] for e in first["entries"] + rest["entries"]] == [4, 2, 3, 1]


async def test_privacy_erasure_groups_and_friends_on_every_period(serve: ApiFactory) -> None:
    api = await serve(periods=ALL, close_seasons=False)
    c = api.client(INGEST)
    await post(c, ITEMS)
    await c.put("/v1/users/1", json={"visibility": "hidden"})
    await c.put("/v1/users/3", json={"visibility": "anonymous", "display_name": "Cy"})
    assert await scores(api, "all") == [(2, 25), (None, 17)]
    assert await scores(api, "2020-12") == [(2, 24)]
    await c.put("/v1/groups/g", json={"access": "public"})
    await c.post("/v1/groups/g/members", json={"add": [1, 2, 3]})
    group = (await api.get("/v1/groups/g/leaderboards/all")).json()
    assert group["period"] == "all"
    assert [(e["rank"], e["user_id"], e["score"]) for e in group["entries"]] == [
        (1, 2, 25), (2, None, 17)]
    friends = (await c.post("/v1/leaderboards/2020-12/ranks",
                            json={"user_ids": [1, 2, 3]})).json()
    assert [(e["rank"], e["user_id"], e["board_rank"]) for e in friends["entries"]] == [
        (1, 2, 1)]
    # Erasure: off every board of every period, for good.
    assert (await api.client(ADMIN).delete("/v1/users/2")).status_code == 204
    for season in ("2020-W53", "2020-12-31", "2021-01-01", "2020-12", "2021-01", "all"):
        assert all(u != 2 for u, _ in await scores(api, season)), season
    admin = api.client(ADMIN)
    for season in ("2020-W53", "2020-12", "all", "2024-02-29"):
        assert (await admin.get(f"/v1/admin/leaderboards/{season}/verify")).json()["consistent"]


async def test_a_period_switched_on_later_builds_its_past_seasons(serve: ApiFactory) -> None:
    before = await serve(close_seasons=False)
    await post(before.client(INGEST), ITEMS)
    after = await serve(periods=ALL, close_seasons=False)
    assert await scores(after, "2020-12") == [(2, 24)]
    assert await scores(after, "2025-12-01") == [(1, 7)]
    assert await scores(after, "all") == [(2, 25), (3, 17), (1, 12)]
    # New completions count on the new boards too, once.
    await post(after.client(INGEST), [("d1", 1, 100, "2025-12-15T00:00:00Z")])
    assert await scores(after, "2025-12") == [(1, 107)]
    assert await scores(after, "2025-W51") == [(1, 100)]


async def test_an_outbox_row_goes_only_when_every_board_has_it(serve: ApiFactory) -> None:
    """A crash between boards (here: the week applied, the process gone before
    the other boards) is finished by the projector, once on each."""
    api = await serve(periods=ALL, close_seasons=False)
    rt = api.runtime
    await post(api.client(INGEST), [("x0", 5, 1, "2025-12-10T00:00:00Z")])  # boards exist
    week_only = rt.projector.periods
    rt.projector.periods = ("week",)  # as if the process died after the first board
    try:
        await post(api.client(INGEST), [("x1", 5, 2, "2025-12-10T01:00:00Z")])
    finally:
        rt.projector.periods = week_only
    assert await scores(api, "2025-W50") == [(5, 3)]
    assert await scores(api, "2025-12") == [(5, 1)]  # not yet

    async def outbox_empty() -> bool:
        return not (await rt.db.fetch_one("outbox_depth") or {})["depth"]

    await eventually(outbox_empty, what="the week's path to let its outbox row go")
    # The projector re-applies from the outbox: recreate the row the crash left.
    x1 = await rt.db.fetch_one("find_completion", completion_id="x1")
    assert x1 is not None
    await rt.db.run("insert_outbox", seqs=[x1["seq"]])
    await rt.projector.drain(min_age_seconds=0)
    assert await scores(api, "2025-W50") == [(5, 3)]  # not twice
    assert await scores(api, "2025-12") == [(5, 3)]
    assert await scores(api, "all") == [(5, 3)]


async def test_day_seasons_close_and_are_archived_without_season_final(
        serve: ApiFactory) -> None:
    api = await serve(periods=ALL, close_seasons=False)
    c = api.client(INGEST)
    await post(c, ITEMS[:2])
    lifecycle = api.runtime.lifecycle
    await api.close_seasons()
    seasons = [parse_season(name, zone=api.runtime.settings.time_zone)
               for name in ("2025-11-30", "2025-12-01", "2025-11", "2025-W48")]
    done = await lifecycle.finalize_due(datetime(2025, 12, 4, tzinfo=UTC))
    assert set(done) == set(seasons)  # the seasons loop is stopped: this call did all
    assert set(await lifecycle.finalized(seasons)) == set(seasons)
    body = await read(api, "2025-11-30")
    assert body["status"] == "closed" and [(e["user_id"], e["score"]) for e in
                                           body["entries"]] == [(1, 5)]
    mine = await api.client(token_for(api.env, 1)).get("/v1/users/1/notifications")
    assert mine.status_code == 200
    finals = {n["season"] for n in mine.json()["notifications"] if n["kind"] == "season_final"}
    # Weeks only (the service's loop may have closed 2025-W49, a week, too).
    assert "2025-W48" in finals and all("-W" in s for s in finals), finals


async def test_a_neighbourhood_on_every_period_and_keep_seasons_per_period(
        serve: ApiFactory) -> None:
    api = await serve(periods=ALL, close_seasons=False, keep_seasons=2)
    await post(api.client(INGEST), ITEMS)
    me = api.client(token_for(api.env, 2))
    for season, rank in (("2020-12", 1), ("all", 1), ("2021-01-01", 1), ("2020-W53", 1)):
        resp = await me.get(f"/v1/leaderboards/{season}/users/2", params={"radius": 1})
        assert resp.status_code == 200, resp.text
        assert resp.json()["user"]["rank"] == rank
    assert_problem(await me.get("/v1/leaderboards/2024-02/users/2"), 404, "not_ranked")
    lifecycle = api.runtime.lifecycle  # closed seasons stay 2 of their period, then expire
    zone = api.runtime.settings.time_zone
    assert lifecycle.expires_at(parse_season("2020-12-31", zone=zone)) == datetime(
        2021, 1, 5, tzinfo=UTC)
    assert lifecycle.expires_at(parse_season("2020-12", zone=zone)) == datetime(
        2021, 3, 3, tzinfo=UTC)
    assert lifecycle.expires_at(parse_season("2020-W53", zone=zone)) == datetime(
        2021, 1, 20, tzinfo=UTC)
    assert lifecycle.expires_at(parse_season("all", zone=zone)).year == 9999


EDGES = {  # the first and the last instant a board can hold, and their seasons
    "first": ("0001-01-01T00:00:00Z", ["0001-W01", "0001-01-01", "0001-01", "all"]),
    "last": ("9999-12-31T23:59:59.999998Z", ["9999-W52", "9999-12-31", "9999-12", "all"]),
}


@pytest.mark.parametrize("edge", sorted(EDGES))
async def test_the_first_and_last_seasons_of_every_period_work_end_to_end(
        serve: ApiFactory, edge: str) -> None:
    """A completion at the first (or last) representable instant is recorded,
    counts on the season of every period, and each of those boards can be
    read, rebuilt, verified and corrected: no date arithmetic reaches past
    year 1 or 9999 (a tombstone margin before 0001-W01 once made every
    rebuild of it fail, and its reads answer 503 for ever)."""
    at, seasons = EDGES[edge]
    api = await serve(periods=ALL, close_seasons=False, max_future_skew_seconds=10**12)
    c, admin = api.client(INGEST), api.client(ADMIN)
    await post(c, [("edge-1", 1, 5, at), ("edge-2", 2, 3, at)])
    for beyond in ("9999-12-31T23:59:59.999999Z", "0001-01-01T00:30:00+01:00"):
        resp = await c.post("/v1/completions", json=completion("edge-x", 1, 1, beyond))
        assert_problem(resp, 422, "validation_error")  # the last microsecond ends the boards
    learner = api.client(token_for(api.env, 2))
    for season in seasons:
        assert await scores(api, season) == [(1, 5), (2, 3)], season
        resp = await admin.post(f"/v1/admin/leaderboards/{season}/rebuild")
        assert resp.status_code == 202, resp.text
        rebuild_id = resp.json()["rebuild_id"]

        async def ended(rebuild_id: str = rebuild_id) -> Any:
            status = (await admin.get(f"/v1/admin/rebuilds/{rebuild_id}")).json()
            return status if status["status"] != "running" else None

        status = await eventually(ended, 20, f"the rebuild of {season} to end")
        assert status["status"] == "succeeded", status
        resp = await admin.get(f"/v1/admin/leaderboards/{season}/verify")
        assert resp.json()["consistent"] is True, resp.text
        me = await learner.get(f"/v1/leaderboards/{season}/users/2")
        assert me.status_code == 200 and me.json()["user"]["rank"] == 2, me.text
    resp = await admin.post("/v1/admin/completions/edge-1/void", json={"reason": "test"})
    assert resp.status_code == 200, resp.text
    for season in seasons:
        assert await scores(api, season) == [(2, 3)], season
    await api.runtime.projector.drain(min_age_seconds=0)
    depth = await api.runtime.db.fetch_one("outbox_depth")
    assert depth is not None and depth["depth"] == 0
    async with api.runtime.db.connection() as conn:
        cur = await conn.execute("SELECT season, error FROM rebuilds WHERE status <> 'succeeded'")
        assert await cur.fetchall() == []
