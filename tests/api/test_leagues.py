"""Weekly leagues over HTTP, in process (docs/contract.md, Leagues; issue
28): a learner's league (none, pending, placed), cohort boards with zones,
their hints, the history with its cursors, the week's summary; who may read
what; every league endpoint 404 while leagues are off.

Placement and the decision are made by calling the service
(`runtime.leagues.place` / `decide`) rather than waiting for the loop; the
league grace is set far beyond the test so that the loop decides nothing
behind its back (it may still place: placing twice changes nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, MutableMapping
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from laurels.core.seasons import parse_season, season_of
from tests.api.conftest import Api, ApiFactory
from tests.helpers import ADMIN, INGEST, assert_problem, eventually, token_for

LEAGUES: dict[str, Any] = {
    "league_tiers": ("bronze", "silver", "gold"), "league_size": 5, "league_promote": (2,),
    "league_demote": (1,),
    # Past weeks are accepted, and no week is due while the test runs.
    "close_seasons": False, "late_grace_seconds": 10**9, "league_grace_seconds": 10**9}
W40, W41 = "2026-W40", "2026-W41"
S40, S41 = (parse_season(w, zone="UTC") for w in (W40, W41))  # (as Seasons)
SITE = "https://platform.test"

LEAGUE_KEYS = {"season", "status", "tier", "tier_index", "cohort_id", "ends_at", "decides_at",
               "promote", "demote", "entries", "self", "result", "reason", "waiting_for"}
ENTRY_KEYS = {"rank", "user_id", "display_name", "score", "zone", "self"}
COHORT_KEYS = {"season", "tier", "cohort_id", "decided", "entries"}
RECORD_KEYS = {"season", "tier", "cohort_id", "rank", "outcome", "new_tier"}
TIER_KEYS = {"tier", "cohorts", "members", "promoted", "demoted"}


def this_week() -> str:
    return season_of(datetime.now(UTC), "week", zone="UTC").name


def at(season: str, minutes: int) -> str:
    return (parse_season(season, zone="UTC").starts_at + timedelta(minutes=minutes)).isoformat()


async def record(api: Api, uid: int, points: int, season: str | None = None) -> None:
    """One completion of `uid` (now, or in `season`), recorded."""
    body: dict[str, Any] = {"completion_id": f"{season or 'now'}-{uid}-{points}",
                            "user_id": uid, "points": points}
    if season is not None:
        body["completed_at"] = at(season, uid)
    resp = await api.client(INGEST).post("/v1/completions", json=body)
    assert resp.status_code == 201, resp.text


async def applied(api: Api, season: str, scores: dict[int, int]) -> None:
    """Wait until the week's board shows these scores (cohort boards are
    read from it)."""
    async def shown() -> bool:
        body = (await api.get(f"/v1/leaderboards/{season}", params={"limit": 1000})).json()
        have = {e["user_id"]: e["score"] for e in body["entries"]}
        return all(have.get(uid) == score for uid, score in scores.items())

    await eventually(shown, what=f"the board of {season} to show {scores}")


async def get(api: Api, path: str, token: str | None, **params: Any) -> Any:
    resp = await api.client(token).get(path, params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()


def rows(entries: list[dict[str, Any]], decided: bool = False) -> list[tuple[Any, ...]]:
    """(rank, user_id, score, zone) of each entry, whose keys are checked:
    `outcome` once the week is decided, never before."""
    keys = ENTRY_KEYS | {"outcome"} if decided else ENTRY_KEYS
    assert all(e.keys() == keys for e in entries), entries
    return [(e["rank"], e["user_id"], e["score"], e["zone"]) for e in entries]


async def six_learners_this_week(api: Api) -> str:
    """Learners 1 to 6 join this week with 10 points per id, in order: cohort
    0 holds 1 to 5, cohort 1 holds 6."""
    week = this_week()
    for uid in range(1, 7):
        await record(api, uid, 10 * uid)
    await applied(api, week, {uid: 10 * uid for uid in range(1, 7)})
    await api.runtime.leagues.place(parse_season(week, zone="UTC"))
    return week


# -- a learner's league --------------------------------------------------------------------

async def test_a_learners_league_none_then_placed_with_zones(serve: ApiFactory) -> None:
    api = await serve(**LEAGUES)
    me = api.client(token_for(api.env, 3))
    week = this_week()
    none = await get(api, "/v1/users/3/league", token_for(api.env, 3))
    assert none.keys() == LEAGUE_KEYS
    starts = parse_season(week, zone="UTC").starts_at
    assert none == {
        "season": week, "status": "none", "tier": "bronze", "tier_index": 0, "cohort_id": None,
        "ends_at": none["ends_at"], "decides_at": none["decides_at"], "promote": 2, "demote": 1,
        "entries": [], "self": None, "result": None, "reason": "no_completion",
        "waiting_for": None}
    assert none["ends_at"] == (starts + timedelta(days=7)).isoformat().replace("+00:00", "Z")
    assert none["decides_at"] > none["ends_at"]

    week = await six_learners_this_week(api)
    mine = (await me.get("/v1/users/3/league", params={"season": "current"})).json()
    assert mine.keys() == LEAGUE_KEYS
    assert (mine["status"], mine["tier"], mine["cohort_id"]) == ("placed", "bronze",
                                                                 f"{week}.0.0")
    # Bronze is the lowest tier: the best two are promoted, nobody demoted.
    assert rows(mine["entries"]) == [(1, 5, 50, "promotion"), (2, 4, 40, "promotion"),
                                     (3, 3, 30, None), (4, 2, 20, None), (5, 1, 10, None)]
    assert mine["self"] == {"rank": 3, "score": 30, "zone": None}
    assert [e["self"] for e in mine["entries"]] == [False, False, True, False, False]
    assert (mine["result"], mine["reason"], mine["waiting_for"]) == (None, None, None)
    assert (mine["promote"], mine["demote"]) == (2, 1)  # a full cohort: PROMOTE and DEMOTE
    alone = await get(api, f"/v1/users/6/league?season={week}", token_for(api.env, 6))
    assert (alone["cohort_id"], rows(alone["entries"])) == (f"{week}.0.1",
                                                            [(1, 6, 60, "promotion")])
    # One member: ceil(2 * 1 / 5) = 1 promotes, floor(1 * 1 / 5) = 0 demotes.
    assert (alone["promote"], alone["demote"]) == (1, 0)
    assert await get(api, "/v1/users/3/league", ADMIN) == mine  # admin reads any learner's

    # An anonymous member is masked on the board for the others, and finds
    # their own row with their real name (issue 43).
    assert (await api.client(INGEST).put("/v1/users/4", json={
        "visibility": "anonymous", "display_name": "Quiet Four"})).status_code == 200

    async def masked() -> Any:
        body = await get(api, "/v1/users/3/league", token_for(api.env, 3))
        return body if body["entries"][1]["user_id"] is None else None

    others = await eventually(masked, what="learner 4 masked on the cohort board")
    assert (others["entries"][1]["display_name"], others["entries"][1]["self"]) == (
        "Anonymous", False)
    anonymous = await get(api, "/v1/users/4/league", token_for(api.env, 4))
    assert anonymous["entries"][1] == {"rank": 2, "user_id": 4, "display_name": "Quiet Four",
                                       "score": 40, "zone": "promotion", "self": True}
    assert [e["self"] for e in anonymous["entries"]].count(True) == 1
    assert anonymous["self"] == {"rank": 2, "score": 40, "zone": "promotion"}
    # On the cohort's own board too, read with their token; not with the platform's.
    cohort = await get(api, f"/v1/leagues/{week}/cohorts/{week}.0.0", token_for(api.env, 4))
    assert cohort["entries"][1]["display_name"] == "Quiet Four" and cohort["entries"][1]["self"]
    platform = await get(api, f"/v1/leagues/{week}/cohorts/{week}.0.0", INGEST)
    assert not any(e["self"] for e in platform["entries"])
    assert platform["entries"][1]["display_name"] == "Anonymous"

    # Any week; only weeks.
    other = await get(api, "/v1/users/3/league", token_for(api.env, 3), season=W40)
    assert (other["season"], other["status"], other["entries"]) == (W40, "none", [])
    for season in ("2026-11", "2026-11-30", "all", "current-day", "current-month", "2026-W54",
                   "W49", ""):
        assert_problem(await me.get("/v1/users/3/league", params={"season": season}), 422,
                       "validation_error")
    # Who may read it.
    assert_problem(await api.get("/v1/users/3/league"), 401, "unauthorized")
    assert_problem(await api.client(token_for(api.env, 3, ttl=-10)).get("/v1/users/3/league"),
                   401, "unauthorized")
    assert_problem(await api.client(token_for(api.env, 2)).get("/v1/users/3/league"), 403,
                   "forbidden")
    # The platform's own servers read it with the ingest token (issue 44).
    assert await get(api, "/v1/users/3/league", INGEST) == await get(
        api, "/v1/users/3/league", token_for(api.env, 3))
    assert_problem(await api.client(ADMIN).get("/v1/users/0/league"), 422, "validation_error")
    assert_problem(await api.client(ADMIN).get("/v1/users/x/league"), 422, "validation_error")


async def test_a_learner_in_no_league_is_told_why(serve: ApiFactory) -> None:
    """Issue 43, point 2: a hidden learner with points, and a suspended one,
    are `none` with their reason, never "complete a tutorial"; one with no
    completion is told that."""
    api = await serve(**LEAGUES)
    week = this_week()
    assert (await api.client(INGEST).put("/v1/users/7", json={"visibility": "hidden"})
            ).status_code == 200
    await record(api, 7, 50)
    assert (await api.client(INGEST).put("/v1/users/8", json={"display_name": "Eight"})
            ).status_code == 200
    resp = await api.client(ADMIN).post("/v1/admin/users/8/suspend", json={"reason": "test"})
    assert resp.status_code == 200, resp.text
    await record(api, 8, 40)
    await api.runtime.leagues.place(parse_season(week, zone="UTC"))
    for uid, reason in ((7, "hidden"), (8, "suspended"), (9, "no_completion")):
        body = await get(api, f"/v1/users/{uid}/league", token_for(api.env, uid))
        assert (body["status"], body["reason"], body["waiting_for"], body["cohort_id"]) == (
            "none", reason, None, None), (uid, body)


async def test_a_decided_cohort_board_is_the_decision(serve: ApiFactory) -> None:
    """Issue 43, point 4: once the week is decided, voiding the winner's
    completions changes the week's board, not the cohort's: every entry
    keeps its decided rank, score and zone, with its outcome, and the
    learner's own standing agrees with their result."""
    api = await serve(**LEAGUES)
    for uid in range(1, 6):
        await record(api, uid, 10 * uid, W40)
    await applied(api, W40, {uid: 10 * uid for uid in range(1, 6)})
    await api.runtime.leagues.place(S40)
    assert await api.runtime.leagues.decide(S40)
    path = f"/v1/leagues/{W40}/cohorts/{W40}.0.0"
    before = await get(api, path, INGEST)
    decided = [(1, 5, 50, "promotion"), (2, 4, 40, "promotion"), (3, 3, 30, None),
               (4, 2, 20, None), (5, 1, 10, None)]
    assert before["decided"] and rows(before["entries"], decided=True) == decided
    resp = await api.client(ADMIN).post(f"/v1/admin/completions/{W40}-5-50/void",
                                        json={"reason": "copied"})
    assert resp.status_code == 200, resp.text

    async def voided() -> bool:
        body = await get(api, f"/v1/leaderboards/{W40}", None)
        return 5 not in [e["user_id"] for e in body["entries"]]

    await eventually(voided, what="the void on the week's board")
    assert await get(api, path, INGEST) == before
    three = await get(api, "/v1/users/3/league", token_for(api.env, 3), season=W40)
    assert rows(three["entries"], decided=True) == decided
    assert three["self"] == {"rank": 3, "score": 30, "zone": None}
    assert three["result"] == {"rank": 3, "outcome": "stayed", "new_tier": "bronze"}
    assert [e["outcome"] for e in three["entries"]] == ["promoted", "promoted", "stayed",
                                                        "stayed", "stayed"]
    assert [e["self"] for e in three["entries"]] == [False, False, True, False, False]
    assert (three["promote"], three["demote"]) == (2, 1)


# -- cohorts --------------------------------------------------------------------------------

async def test_a_cohorts_board_is_for_its_members_and_the_platform(serve: ApiFactory) -> None:
    api = await serve(**LEAGUES)
    week = await six_learners_this_week(api)
    path = f"/v1/leagues/{week}/cohorts/{week}.0.0"
    board = await get(api, path, INGEST)
    assert board.keys() == COHORT_KEYS
    assert (board["season"], board["tier"], board["cohort_id"], board["decided"]) == (
        week, "bronze", f"{week}.0.0", False)
    assert rows(board["entries"]) == [(1, 5, 50, "promotion"), (2, 4, 40, "promotion"),
                                      (3, 3, 30, None), (4, 2, 20, None), (5, 1, 10, None)]
    assert await get(api, f"/v1/leagues/current/cohorts/{week}.0.0", ADMIN) == board
    mine = await get(api, path, token_for(api.env, 2))
    assert [e["self"] for e in mine["entries"]] == [False, False, False, True, False]
    assert rows(mine["entries"]) == rows(board["entries"])

    for suffix in ("", "/events"):  # the board and its hints: the same access
        here = path + suffix
        assert_problem(await api.get(here), 401, "unauthorized")
        assert_problem(await api.client("not-a-token").get(here), 401, "unauthorized")
        assert_problem(await api.client(token_for(api.env, 6)).get(here), 403, "forbidden")
        # The notifications stream alone takes the token in the query string.
        assert_problem(await api.get(here, params={"access_token": token_for(api.env, 2)}),
                       401, "unauthorized")
        for unknown in (f"{week}.0.2", f"{week}.1.0", f"{week}.7.0", f"{W40}.0.0", "nope",
                        "2026-W49.0.0.0"):
            assert_problem(await api.client(ADMIN).get(
                f"/v1/leagues/{week}/cohorts/{unknown}{suffix}"), 404, "not_found")
        assert_problem(await api.client(token_for(api.env, 6)).get(
            f"/v1/leagues/{week}/cohorts/{week}.0.9{suffix}"), 404, "not_found")
        assert_problem(await api.client(ADMIN).get(
            f"/v1/leagues/{week}/cohorts/{'x' * 65}{suffix}"), 422, "validation_error")
        for season in ("2026-11", "nope", "all"):
            assert_problem(await api.client(ADMIN).get(
                f"/v1/leagues/{season}/cohorts/{week}.0.0{suffix}"), 422, "validation_error")


@contextlib.asynccontextmanager
async def stream(api: Api, path: str, token: str) -> AsyncIterator[asyncio.Queue[Any]]:
    """The server-sent events of `path`, as (event, data) pairs on a queue.
    httpx's ASGITransport reads a whole body before it answers, so the app
    is driven here as a server would: the client goes away on exit."""
    events: asyncio.Queue[Any] = asyncio.Queue()
    gone = asyncio.Event()
    asked = False
    buffer = b""

    async def receive() -> dict[str, Any]:
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal buffer
        if message["type"] == "http.response.start":
            assert message["status"] == 200, message
            return
        buffer += message.get("body", b"")
        while b"\r\n\r\n" in buffer:
            frame, buffer = buffer.split(b"\r\n\r\n", 1)
            lines = dict(line.split(b": ", 1) for line in frame.split(b"\r\n")
                         if not line.startswith(b":"))
            if lines:
                await events.put((lines[b"event"].decode(), orjson.loads(lines[b"data"])))

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": path, "raw_path": path.encode(),
             "root_path": "", "query_string": b"", "client": ("127.0.0.1", 50000),
             "server": ("laurels.test", 80),
             "headers": [(b"host", b"laurels.test"),
                         (b"authorization", f"Bearer {token}".encode())]}
    async def run() -> None:
        await api.transport.app(scope, receive, send)

    task = asyncio.create_task(run())
    try:
        yield events
    finally:
        gone.set()
        await asyncio.wait_for(task, 10)


async def test_a_cohorts_hints_come_for_its_members(serve: ApiFactory) -> None:
    api = await serve(**LEAGUES)
    week = await six_learners_this_week(api)
    cohort = f"{week}.0.0"
    async with stream(api, f"/v1/leagues/{week}/cohorts/{cohort}/events",
                      token_for(api.env, 1)) as events:
        ready = await asyncio.wait_for(events.get(), 10)
        assert ready == ("ready", {"season": week, "cohort_id": cohort})
        # Learner 6 is in the other cohort: their completion is not this one's hint.
        await record(api, 6, 1)
        await applied(api, week, {6: 61})
        await record(api, 3, 5)
        seen: list[tuple[str, dict[str, Any]]] = []
        while not any(data.get("user_id") == 3 for _, data in seen):
            event, data = await asyncio.wait_for(events.get(), 10)
            assert event == "changed" and data["season"] == week, (event, data)
            seen.append((event, data))
        assert all(data.get("user_id") != 6 for _, data in seen), seen
    changed = await get(api, f"/v1/leagues/{week}/cohorts/{cohort}", INGEST)
    assert (changed["entries"][2]["user_id"], changed["entries"][2]["score"]) == (3, 35)


# -- decisions, pending learners, history, the week's summary ------------------------------

async def test_decisions_pending_history_and_summary(serve: ApiFactory) -> None:
    api = await serve(**LEAGUES)
    leagues = api.runtime.leagues
    admin = api.client(ADMIN)
    for uid in range(1, 11):  # two bronze cohorts: 1 to 5, 6 to 10
        await record(api, uid, uid, W40)
    await applied(api, W40, {uid: uid for uid in range(1, 11)})
    await leagues.place(S40)
    # Learner 10 plays W41 before W40 is decided: pending until it is.
    await record(api, 10, 40, W41)
    await leagues.place(S41)
    pending = await get(api, "/v1/users/10/league", token_for(api.env, 10), season=W41)
    assert (pending["status"], pending["tier"], pending["cohort_id"], pending["entries"],
            pending["self"], pending["result"]) == ("pending", "bronze", None, [], None, None)
    assert (pending["reason"], pending["waiting_for"]) == (None, W40)

    summary = await get(api, f"/v1/admin/leagues/{W40}", ADMIN)
    assert summary.keys() == {"season", "decided", "tiers"}
    assert all(t.keys() == TIER_KEYS for t in summary["tiers"])
    assert summary == {"season": W40, "decided": False, "tiers": [
        {"tier": "bronze", "cohorts": 2, "members": 10, "promoted": 0, "demoted": 0},
        {"tier": "silver", "cohorts": 0, "members": 0, "promoted": 0, "demoted": 0},
        {"tier": "gold", "cohorts": 0, "members": 0, "promoted": 0, "demoted": 0}]}
    assert await leagues.decide(S40)
    summary = await get(api, f"/v1/admin/leagues/{W40}", ADMIN)
    assert summary["decided"] and summary["tiers"][0] == {
        "tier": "bronze", "cohorts": 2, "members": 10, "promoted": 4, "demoted": 0}
    five = await get(api, "/v1/users/5/league", ADMIN, season=W40)
    assert five["result"] == {"rank": 1, "outcome": "promoted", "new_tier": "silver"}
    assert (await get(api, "/v1/users/1/league", ADMIN, season=W40))["result"] == {
        "rank": 5, "outcome": "stayed", "new_tier": "bronze"}
    decided = await get(api, f"/v1/leagues/{W40}/cohorts/{W40}.0.0", INGEST)
    assert decided["decided"] is True
    assert rows(decided["entries"], decided=True) == [
        (1, 5, 5, "promotion"), (2, 4, 4, "promotion"), (3, 3, 3, None), (4, 2, 2, None),
        (5, 1, 1, None)]
    assert [e["outcome"] for e in decided["entries"]] == ["promoted", "promoted", "stayed",
                                                          "stayed", "stayed"]

    # W41: the four promoted play silver (10, pending until now, among them).
    for uid, points in ((9, 30), (5, 20), (4, 10), (1, 5)):
        await record(api, uid, points, W41)
    await applied(api, W41, {10: 40, 9: 30, 5: 20, 4: 10, 1: 5})
    await leagues.place(S41)
    four = await get(api, "/v1/users/4/league", token_for(api.env, 4), season=W41)
    assert (four["status"], four["tier"], four["tier_index"], four["cohort_id"]) == (
        "placed", "silver", 1, f"{W41}.1.0")
    # Four of five: ceil(2 * 4 / 5) = 2 promote, floor(1 * 4 / 5) = 0 demote.
    assert rows(four["entries"]) == [(1, 10, 40, "promotion"), (2, 9, 30, "promotion"),
                                     (3, 5, 20, None), (4, 4, 10, None)]
    assert (four["promote"], four["demote"]) == (2, 0)
    assert four["self"] == {"rank": 4, "score": 10, "zone": None}
    assert await leagues.decide(S41)
    assert (await get(api, f"/v1/admin/leagues/{W41}", ADMIN))["tiers"] == [
        {"tier": "bronze", "cohorts": 1, "members": 1, "promoted": 1, "demoted": 0},
        {"tier": "silver", "cohorts": 1, "members": 4, "promoted": 2, "demoted": 0},
        {"tier": "gold", "cohorts": 0, "members": 0, "promoted": 0, "demoted": 0}]

    # Learner 4's history, newest first, one week a page.
    mine = api.client(token_for(api.env, 4))
    first = (await mine.get("/v1/users/4/league/history", params={"limit": 1})).json()
    assert first.keys() == {"results", "next"} and first["next"]
    assert [r.keys() == RECORD_KEYS for r in first["results"]] == [True]
    assert first["results"] == [{"season": W41, "tier": "silver", "cohort_id": f"{W41}.1.0",
                                 "rank": 4, "outcome": "stayed", "new_tier": "silver"}]
    second = (await mine.get("/v1/users/4/league/history",
                             params={"limit": 1, "after": first["next"]})).json()
    assert second == {"results": [{"season": W40, "tier": "bronze", "cohort_id": f"{W40}.0.0",
                                   "rank": 2, "outcome": "promoted", "new_tier": "silver"}],
                      "next": None}
    whole = await get(api, "/v1/users/4/league/history", token_for(api.env, 4))
    assert whole == {"results": first["results"] + second["results"], "next": None}
    assert await get(api, "/v1/users/99/league/history", ADMIN) == {"results": [], "next": None}
    # Cursors are sealed to their learner; malformed ones and limits are 422.
    for params in ({"after": "not a cursor"}, {"after": "AAAA"}, {"limit": 0},
                   {"limit": "x"}, {"limit": 1001}):
        assert_problem(await mine.get("/v1/users/4/league/history", params=params), 422,
                       "validation_error")
    assert_problem(await admin.get("/v1/users/5/league/history",
                                   params={"after": first["next"]}), 422, "validation_error")
    assert await get(api, "/v1/users/4/league/history", INGEST) == whole  # the platform
    assert_problem(await api.get("/v1/users/4/league/history"), 401, "unauthorized")
    assert_problem(await api.client(token_for(api.env, 5)).get("/v1/users/4/league/history"),
                   403, "forbidden")
    # The summary is the operators'.
    for token, status, code in ((None, 401, "unauthorized"), (INGEST, 403, "forbidden"),
                                (token_for(api.env, 4), 403, "forbidden")):
        assert_problem(await api.client(token).get(f"/v1/admin/leagues/{W41}"), status, code)
    for season in ("2026-11", "all", "nope"):
        assert_problem(await admin.get(f"/v1/admin/leagues/{season}"), 422, "validation_error")


async def test_a_weeks_cohorts_are_listed_for_operators(serve: ApiFactory) -> None:
    """`GET /v1/admin/leagues/{season}/cohorts` (issue 44): by tier then
    cohort, a page at a time, one tier's alone; the operators' only."""
    api = await serve(**LEAGUES)
    for uid in range(1, 13):  # bronze: cohorts of 5, 5 and 2
        await record(api, uid, uid, W40)
    await applied(api, W40, {uid: uid for uid in range(1, 13)})
    await api.runtime.leagues.place(S40)
    path = f"/v1/admin/leagues/{W40}/cohorts"
    whole = await get(api, path, ADMIN)
    assert whole == {"cohorts": [
        {"cohort_id": f"{W40}.0.{n}", "tier": "bronze", "members": m, "decided": False}
        for n, m in ((0, 5), (1, 5), (2, 2))], "next": None}
    first = await get(api, path, ADMIN, limit=2)
    assert first["cohorts"] == whole["cohorts"][:2] and first["next"]
    rest = await get(api, path, ADMIN, limit=2, after=first["next"])
    assert rest == {"cohorts": whole["cohorts"][2:], "next": None}
    assert await get(api, path, ADMIN, tier="silver") == {"cohorts": [], "next": None}
    assert await get(api, path, ADMIN, tier="bronze") == whole
    assert await get(api, path, ADMIN, tier="") == whole  # `?tier=`: every tier
    assert await api.runtime.leagues.decide(S40)
    assert all(c["decided"] for c in (await get(api, path, ADMIN))["cohorts"])
    admin = api.client(ADMIN)
    for params in ({"tier": "platinum"}, {"limit": 0}, {"after": "nope"},
                   {"tier": "silver", "after": first["next"]}):  # a cursor of another list
        assert_problem(await admin.get(path, params=params), 422, "validation_error")
    assert_problem(await admin.get("/v1/admin/leagues/2026-11/cohorts"), 422,
                   "validation_error")
    for token, status, code in ((None, 401, "unauthorized"), (INGEST, 403, "forbidden"),
                                (token_for(api.env, 1), 403, "forbidden")):
        assert_problem(await api.client(token).get(path), status, code)


# -- leagues off, CORS, the OpenAPI document -----------------------------------------------

async def test_every_league_endpoint_is_not_found_while_leagues_are_off(
        serve: ApiFactory) -> None:
    api = await serve()
    week = this_week()
    paths = ["/v1/users/1/league", "/v1/users/1/league?season=2026-11",
             "/v1/users/1/league/history", "/v1/users/1/league/history?limit=0",
             f"/v1/leagues/current/cohorts/{week}.0.0",
             f"/v1/leagues/current/cohorts/{week}.0.0/events", "/v1/admin/leagues/current",
             "/v1/admin/leagues/current/cohorts", "/v1/admin/leagues/current/cohorts?tier=x"]
    for token in (None, ADMIN, INGEST, token_for(api.env, 1)):
        for path in paths:
            assert_problem(await api.client(token).get(path), 404, "not_found")


async def test_league_reads_are_cors_reads_and_the_summary_is_not(serve: ApiFactory) -> None:
    api = await serve(cors_origins=(SITE,), **LEAGUES)
    origin = {"Origin": SITE}
    mine = await api.client(token_for(api.env, 1)).get("/v1/users/1/league", headers=origin)
    assert mine.status_code == 200 and mine.headers["access-control-allow-origin"] == SITE
    for path in ("/v1/users/1/league/history", "/v1/leagues/current/cohorts/x",
                 "/v1/leagues/current/cohorts/x/events"):
        pre = await api.client().options(path, headers={
            **origin, "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization"})
        assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == SITE
    summary = await api.client(ADMIN).get("/v1/admin/leagues/current", headers=origin)
    assert summary.status_code == 200 and "access-control-allow-origin" not in summary.headers


async def test_the_openapi_document_describes_the_league_bodies(serve: ApiFactory) -> None:
    api = await serve()
    doc = (await api.get("/openapi.json")).json()
    schemas = doc["components"]["schemas"]

    def body(path: str) -> dict[str, Any]:
        ref = doc["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
        return schemas[ref["schema"]["$ref"].rsplit("/", 1)[1]]  # type: ignore[no-any-return]

    def keys(schema: dict[str, Any]) -> set[str]:
        return set(schema["properties"])

    league = body("/v1/users/{user_id}/league")
    assert keys(league) == LEAGUE_KEYS
    entry = schemas[league["properties"]["entries"]["items"]["$ref"].rsplit("/", 1)[1]]
    assert keys(entry) == ENTRY_KEYS | {"outcome"}  # (once decided)
    assert "outcome" not in entry.get("required", [])
    assert keys(body("/v1/leagues/{season}/cohorts/{cohort_id}")) == COHORT_KEYS
    assert keys(body("/v1/users/{user_id}/league/history")) == {"results", "next"}
    assert keys(schemas["LeagueRecordOut"]) == RECORD_KEYS
    assert keys(body("/v1/admin/leagues/{season}")) == {"season", "decided", "tiers"}
    assert keys(schemas["LeagueTierOut"]) == TIER_KEYS
    events = doc["paths"]["/v1/leagues/{season}/cohorts/{cohort_id}/events"]["get"]
    assert "text/event-stream" in events["responses"]["200"]["content"]
