"""Boards of a course, a track or a skill over HTTP (CONTRACT.md): board
kinds defined, listed, retitled and deleted by an operator; `?board=` on the
board, a learner's neighbourhood, the admin rebuild and verify; a kind
defined late counts what was recorded before it; a deleted kind's boards
are gone from reads and from Redis."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.api.conftest import Api, ApiFactory
from tests.helpers import ADMIN, INGEST, assert_problem, token_for

pytestmark = pytest.mark.once

PARIS = "Europe/Paris"


async def eventually_ok(api: Api, path: str, tries: int = 100) -> dict[str, Any]:
    """A board read once it is built (`503 rebuilding` until then)."""
    for _ in range(tries):
        resp = await api.get(path)
        if resp.status_code == 200:
            body: dict[str, Any] = resp.json()
            return body
        assert_problem(resp, 503, "rebuilding")
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} was never built")


async def board_keys(api: Api, kind: str) -> list[str]:
    """The Redis keys of a kind's boards (their hash tags start with it)."""
    prefix = api.runtime.keys.prefix
    return [k async for k in api.runtime.redis.scan_iter(match=f"{prefix}:{{{kind}:*")]


def tagged(cid: str, user: int, points: int, at: str, *tags: str) -> dict[str, Any]:
    return {"completion_id": cid, "user_id": user, "points": points, "completed_at": at,
            "tags": list(tags)}


# Monday 00:30 in Paris is still Sunday (W48) in UTC.
ITEMS = [tagged("b1", 1, 5, "2026-12-01T10:00:00Z", "course:python-101", "track:data"),
         tagged("b2", 2, 7, "2026-12-01T11:00:00Z", "course:python-101"),
         tagged("b3", 2, 4, "2026-12-02T11:00:00Z", "course:python-101"),
         tagged("b4", 3, 9, "2026-12-02T12:00:00Z", "course:sql"),
         tagged("b5", 1, 1, "2026-12-03T12:00:00Z")]


async def test_kinds_are_defined_retitled_listed_and_refused(serve: ApiFactory) -> None:
    api = await serve()
    admin = api.client(ADMIN)
    made = await admin.put("/v1/admin/board-kinds/course", json={
        "title": "Courses", "periods": ["week", "all"], "time_zone": PARIS})
    assert made.status_code == 201, made.text
    body = made.json()
    assert {k: body[k] for k in ("kind", "title", "metric", "periods", "time_zone", "notify")} \
        == {"kind": "course", "title": "Courses", "metric": "points",
            "periods": ["week", "all"], "time_zone": PARIS, "notify": False}
    assert body["created_at"].endswith("Z")
    again = await admin.put("/v1/admin/board-kinds/course", json={"title": "Our courses"})
    assert again.status_code == 200 and again.json()["title"] == "Our courses"
    conflict = await admin.put("/v1/admin/board-kinds/course", json={"metric": "completions"})
    assert "metric" in assert_problem(conflict, 409, "kind_conflict")["detail"]
    for bad in ({"metric": "sum"}, {"periods": ["year"]}, {"time_zone": "Nowhere/City"},
                {"notify": "yes"}, {"title": ""}, ["not", "an", "object"]):
        assert_problem(await admin.put("/v1/admin/board-kinds/track", json=bad), 422,
                       "validation_error")
    assert_problem(await admin.put("/v1/admin/board-kinds/Bad!", json={}), 422,
                   "validation_error")
    listed = await admin.get("/v1/admin/board-kinds")
    assert [k["kind"] for k in listed.json()["kinds"]] == ["course"]
    assert_problem(await api.client(INGEST).get("/v1/admin/board-kinds"), 403, "forbidden")
    assert_problem(await api.client().put("/v1/admin/board-kinds/x", json={}), 401,
                   "unauthorized")


async def test_boards_are_read_by_name_in_their_own_zone(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    ingest, admin = api.client(INGEST), api.client(ADMIN)
    recorded = await ingest.post("/v1/completions/batch", json={"completions": ITEMS})
    assert recorded.status_code == 200, recorded.text
    # Defined after the completions: they count all the same (503 until built).
    await admin.put("/v1/admin/board-kinds/course", json={"time_zone": PARIS,
                                                          "periods": ["week", "all"]})
    await admin.put("/v1/admin/board-kinds/track", json={"metric": "completions"})
    board = await eventually_ok(api, "/v1/leaderboards/2026-W49?board=course:python-101")
    assert {k: board[k] for k in ("season", "board", "metric", "total")} == {
        "season": "2026-W49", "board": "course:python-101", "metric": "points", "total": 2}
    assert board["starts_at"] == "2026-11-29T23:00:00Z"  # Monday, midnight in Paris
    assert [(e["user_id"], e["score"]) for e in board["entries"]] == [(2, 11), (1, 5)]
    track = await eventually_ok(api, "/v1/leaderboards/2026-W49?board=track:data")
    assert track["metric"] == "completions" and track["season"] == "2026-W49"
    assert [(e["user_id"], e["score"]) for e in track["entries"]] == [(1, 1)]
    whole = (await api.get("/v1/leaderboards/2026-W49")).json()
    assert whole["board"] == "global" and whole["metric"] == "points" and whole["total"] == 3
    # A neighbourhood on a board.
    me = await api.client(token_for(api.env, 2)).get(
        "/v1/leaderboards/2026-W49/users/2?board=course:python-101")
    assert me.status_code == 200, me.text
    assert me.json()["board"] == "course:python-101" and me.json()["user"]["rank"] == 1
    # Live: a new completion reaches the board.
    await ingest.post("/v1/completions", json=tagged("b6", 3, 50, "2026-12-03T09:00:00Z",
                                                     "course:python-101"))
    board = (await api.get("/v1/leaderboards/2026-W49?board=course:python-101")).json()
    assert board["entries"][0] == {"rank": 1, "user_id": 3, "display_name": board["entries"][0][
        "display_name"], "score": 50}
    # Verify and rebuild name the board.
    verdict = await admin.get("/v1/admin/leaderboards/2026-W49/verify?board=course:python-101")
    assert verdict.status_code == 200 and verdict.json()["consistent"] is True
    assert verdict.json()["board"] == "course:python-101"
    rebuild = await admin.post("/v1/admin/leaderboards/all/rebuild?board=course:sql")
    assert rebuild.status_code == 202 and rebuild.json()["board"] == "course:sql"
    # Unknown, malformed, and periods a kind lacks.
    assert_problem(await api.get("/v1/leaderboards/2026-W49?board=skill:sql"), 404, "not_found")
    assert_problem(await api.get("/v1/leaderboards/2026-W49?board=course"), 422,
                   "validation_error")
    assert_problem(await api.get("/v1/leaderboards/2026-12-01?board=course:sql"), 404,
                   "not_found")
    empty = (await api.get("/v1/leaderboards/2026-W40?board=course:sql")).json()
    assert empty["total"] == 0 and empty["entries"] == []


async def test_a_deleted_kind_is_gone_and_comes_back_whole(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    ingest, admin = api.client(INGEST), api.client(ADMIN)
    await ingest.post("/v1/completions/batch", json={"completions": ITEMS})
    await admin.put("/v1/admin/board-kinds/course", json={})
    path = "/v1/leaderboards/2026-W49?board=course:python-101"
    assert (await eventually_ok(api, path))["total"] == 2
    keys = await board_keys(api, "course")
    assert keys, "the board is in Redis"
    gone = await admin.delete("/v1/admin/board-kinds/course")
    assert gone.status_code == 204
    assert_problem(await api.get(path), 404, "not_found")
    assert await board_keys(api, "course") == []
    assert (await admin.delete("/v1/admin/board-kinds/course")).status_code == 204  # no-op
    # While it was gone, completions went on: defined again, they count.
    await ingest.post("/v1/completions", json=tagged("b7", 4, 30, "2026-12-03T09:00:00Z",
                                                     "course:python-101"))
    await admin.put("/v1/admin/board-kinds/course", json={})
    board = await eventually_ok(api, path)
    assert [(e["user_id"], e["score"]) for e in board["entries"]] == [(4, 30), (2, 11), (1, 5)]


async def test_a_learner_sees_their_boards_and_why_their_score(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    ingest, admin = api.client(INGEST), api.client(ADMIN)
    await admin.put("/v1/admin/board-kinds/course", json={"title": "Courses",
                                                          "time_zone": PARIS})
    await admin.put("/v1/admin/board-kinds/track", json={"metric": "completions"})
    await ingest.post("/v1/completions/batch", json={"completions": ITEMS})
    # (built on first use: the boards' reads heal them)
    await eventually_ok(api, "/v1/leaderboards/2026-W49?board=course:python-101")
    await eventually_ok(api, "/v1/leaderboards/2026-W49?board=track:data")
    learner = api.client(token_for(api.env, 1))
    mine = await learner.get("/v1/users/1/boards?season=2026-W49")
    assert mine.status_code == 200, mine.text
    assert mine.json() == {"boards": [
        {"board": "global", "kind": "global", "title": "All learners", "metric": "points",
         "season": "2026-W49", "rank": 3, "score": 6, "total": 3},
        {"board": "course:python-101", "kind": "course", "title": "Courses",
         "metric": "points", "season": "2026-W49", "rank": 2, "score": 5, "total": 2},
        {"board": "track:data", "kind": "track", "title": "Track", "metric": "completions",
         "season": "2026-W49", "rank": 1, "score": 1, "total": 1}]}
    theirs = (await api.client(token_for(api.env, 3)).get("/v1/users/3/boards?season=2026-W49"))
    assert [b["board"] for b in theirs.json()["boards"]] == ["global", "course:sql"]
    assert_problem(await learner.get("/v1/users/2/boards"), 403, "forbidden")
    assert_problem(await learner.get("/v1/users/1/boards?season=2026-12-01"), 422,
                   "validation_error")
    # Why my score, on a board: only the completions tagged with it.
    why = await learner.get("/v1/leaderboards/2026-W49/users/1/completions"
                            "?board=course:python-101")
    assert why.status_code == 200, why.text
    assert [c["completion_id"] for c in why.json()["completions"]] == ["b1"]
    assert why.json()["score"] == 5


async def test_group_and_friends_boards_take_a_board(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    ingest, admin = api.client(INGEST), api.client(ADMIN)
    await admin.put("/v1/admin/board-kinds/course", json={"time_zone": PARIS})
    await ingest.post("/v1/completions/batch", json={"completions": ITEMS})
    await eventually_ok(api, "/v1/leaderboards/2026-W49?board=course:python-101")
    await ingest.put("/v1/groups/class", json={"access": "public"})
    await ingest.post("/v1/groups/class/members", json={"add": [1, 3]})
    board = await api.get("/v1/groups/class/leaderboards/2026-W49?board=course:python-101")
    assert board.status_code == 200, board.text
    assert board.json()["board"] == "course:python-101"
    assert [(e["user_id"], e["score"]) for e in board.json()["entries"]] == [(1, 5)]
    whole = (await api.get("/v1/groups/class/leaderboards/2026-W49")).json()
    assert [(e["user_id"], e["score"]) for e in whole["entries"]] == [(3, 9), (1, 6)]
    again = await api.get("/v1/groups/class/leaderboards/2026-W49?board=course:python-101")
    assert again.json()["entries"] == board.json()["entries"]  # not the cached whole board
    near = await api.client(token_for(api.env, 1)).get(
        "/v1/groups/class/leaderboards/2026-W49/users/1?board=course:python-101")
    assert near.status_code == 200 and near.json()["user"]["score"] == 5, near.text
    friends = await ingest.post("/v1/leaderboards/2026-W49/ranks?board=course:python-101",
                                json={"user_ids": [1, 2, 3]})
    assert friends.status_code == 200, friends.text
    assert [(e["user_id"], e["score"]) for e in friends.json()["entries"]] == [(2, 11), (1, 5)]
    assert_problem(await api.get("/v1/groups/class/leaderboards/2026-W49?board=skill:x"),
                   404, "not_found")


async def test_the_client_reads_a_board(serve: ApiFactory) -> None:
    from laurels.client import AsyncClient, NotFound
    from tests.api.conftest import BASE_URL

    api = await serve(close_seasons=False)
    await api.client(ADMIN).put("/v1/admin/board-kinds/course", json={"time_zone": PARIS})
    async with AsyncClient(BASE_URL, INGEST, transport=api.transport) as ingest:
        await ingest.post_completions(ITEMS)
    await eventually_ok(api, "/v1/leaderboards/2026-W49?board=course:python-101")
    async with AsyncClient(BASE_URL, ADMIN, transport=api.transport) as admin:
        board = await admin.board("2026-W49", board="course:python-101")
        assert board["board"] == "course:python-101" and board["total"] == 2
        me = await admin.around("2026-W49", 2, board="course:python-101")
        assert me["user"]["score"] == 11 and me["metric"] == "points"
        why = await admin.completions("2026-W49", 2, board="course:python-101")
        assert why["score"] == 11
        friends = await admin.friends("2026-W49", [1, 2], board="course:python-101")
        assert [e["user_id"] for e in friends["entries"]] == [2, 1]
        assert (await admin.verify("2026-W49", board="course:python-101"))["consistent"]
        mine = await admin.learner_boards(1, "2026-W49")
        assert [b["board"] for b in mine["boards"]] == ["global", "course:python-101"]
        with pytest.raises(NotFound):
            await admin.board("2026-W49", board="skill:sql")
