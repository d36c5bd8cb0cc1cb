"""Challenges over HTTP (issue 67; CONTRACT.md, "Challenges: boards with a
start and an end"): defined, listed by status, joined, read live, decided
once with rewards, and what may change of one that started. The service's
clock for challenges is the test's (`at`)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api, ApiFactory, challenge_clock
from tests.helpers import ADMIN, INGEST, assert_problem, completion, token_for

WINDOW = {"starts_at": "2025-12-01T00:00:00Z", "ends_at": "2025-12-08T00:00:00Z"}




async def record(api: Api, items: list[tuple[str, int, int, str, list[str] | None]]) -> None:
    resp = await api.client(INGEST).post("/v1/completions/batch", json={"completions": [
        {**completion(cid, uid, pts, when), **({"tags": tags} if tags else {})}
        for cid, uid, pts, when, tags in items]})
    assert {r["status"] for r in resp.json()["results"]} == {"recorded"}, resp.text


async def define(api: Api, cid: str, **body: Any) -> dict[str, Any]:
    resp = await api.client(ADMIN).put(f"/v1/admin/challenges/{cid}",
                                       json={"title": cid.title(), **WINDOW, **body})
    assert resp.status_code in (200, 201), resp.text
    return dict(resp.json())


async def board(api: Api, cid: str, **params: Any) -> dict[str, Any]:
    resp = await api.get(f"/v1/challenges/{cid}/leaderboard", params=params)
    assert resp.status_code == 200, resp.text
    return dict(resp.json())





@pytest.fixture
def api(challenge_api: Api) -> Api:
    return challenge_api

async def test_a_challenge_runs_from_definition_to_decided_rewards(api: Api) -> None:
    admin = api.client(ADMIN)
    created = await admin.put("/v1/admin/challenges/sprint", json={
        "title": "December sprint", **WINDOW, "rewards": [
            {"from": 1, "to": 1, "reward": "gold"}, {"from": 2, "to": 3, "reward": "silver"}]})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body == {"challenge_id": "sprint", "title": "December sprint", "board": "global",
                    "metric": "points", **WINDOW, "join": "open", "max_size": None,
                    "participants": 0, "rewards": [
                        {"from": 1, "to": 1, "reward": "gold"},
                        {"from": 2, "to": 3, "reward": "silver"}],
                    "status": "upcoming", "decided": False, "notify": False,
                    "grace_seconds": 0}
    assert (await board(api, "sprint"))["total"] == 0
    await record(api, [("before", 1, 50, "2025-11-30T10:00:00Z", None),
                       ("a1", 1, 10, "2025-12-02T10:00:00Z", None),
                       ("b1", 2, 30, "2025-12-03T10:00:00Z", None),
                       ("c1", 3, 20, "2025-12-04T10:00:00Z", None),
                       ("a2", 1, 15, "2025-12-05T10:00:00Z", None),
                       ("after", 3, 99, "2025-12-08T00:00:00Z", None)])
    challenge_clock(api, "2025-12-06T00:00:00")
    live = await board(api, "sprint")
    assert live["status"] == "active" and not live["decided"] and live["total"] == 3
    assert [(e["user_id"], e["rank"], e["score"], e["reward"]) for e in live["entries"]] == [
        (2, 1, 30, None), (1, 2, 25, None), (3, 3, 20, None)]
    listed = (await api.get("/v1/challenges", params={"status": "active"})).json()
    assert [c["challenge_id"] for c in listed["challenges"]] == ["sprint"]
    assert listed["challenges"][0]["participants"] == 3
    assert (await api.get("/v1/challenges", params={"status": "upcoming"})).json()[
        "challenges"] == []
    # Joining an open challenge needs nothing.
    joined = await api.client(token_for(api.env, 1)).post("/v1/challenges/sprint/join")
    assert joined.status_code == 200 and joined.json() == {
        "challenge_id": "sprint", "user_id": 1, "joined_at": None}
    around = await api.client(token_for(api.env, 3)).get("/v1/challenges/sprint/users/3",
                                                         params={"radius": 1})
    assert around.status_code == 200, around.text
    assert [(n["user_id"], n["self"]) for n in around.json()["neighbors"]] == [
        (1, False), (3, True)]
    # Not due before its end: nothing decided.
    assert await api.runtime.decider.decide_due() == []
    challenge_clock(api, "2025-12-08T00:00:01")
    assert await api.runtime.decider.decide_due() == ["sprint"]
    assert await api.runtime.decider.decide_due() == []  # once
    # A completion voided after the decision changes nothing of it.
    assert (await admin.post("/v1/admin/completions/b1/void", json={"reason": "x"})
            ).status_code == 200
    decided = await board(api, "sprint")
    assert decided["decided"] and decided["status"] == "ended"
    assert [(e["user_id"], e["rank"], e["score"], e["reward"]) for e in decided["entries"]] == [
        (2, 1, 30, "gold"), (1, 2, 25, "silver"), (3, 3, 20, "silver")]
    notes = (await api.client(token_for(api.env, 2)).get("/v1/users/2/notifications")).json()
    result = [n for n in notes["notifications"] if n["kind"] == "challenge_result"]
    assert [n["data"] for n in result] == [{"challenge_id": "sprint", "title": "December sprint",
                                           "rank": 1, "score": 30, "reward": "gold"}]
    mine = (await api.client(token_for(api.env, 1)).get("/v1/users/1/challenges")).json()
    assert [(c["challenge_id"], c["rank"], c["score"], c["reward"])
            for c in mine["challenges"]] == [("sprint", 2, 25, "silver")]


async def test_joins_are_required_counted_from_the_join_and_capped(api: Api) -> None:
    await define(api, "duel", join="required", max_size=2, metric="completions",
                 board="course:sql")
    one, three = (api.client(token_for(api.env, u)) for u in (1, 3))
    first = await one.post("/v1/challenges/duel/join")
    assert first.status_code == 200 and first.json()["joined_at"] == "2025-11-30T12:00:00Z"
    challenge_clock(api, "2025-12-03T00:00:00")
    second = await api.client(INGEST).post("/v1/challenges/duel/join", json={"user_id": 2})
    assert second.status_code == 200, second.text
    assert (await one.post("/v1/challenges/duel/join")).json()["joined_at"] == \
        "2025-11-30T12:00:00Z"  # again: the first
    assert_problem(await three.post("/v1/challenges/duel/join"), 409, "challenge_full")
    await record(api, [("x1", 1, 5, "2025-12-02T10:00:00Z", ["course:sql"]),
                       ("x2", 2, 5, "2025-12-02T10:00:00Z", ["course:sql"]),  # before its join
                       ("x3", 2, 5, "2025-12-04T10:00:00Z", ["course:sql"]),
                       ("x4", 2, 5, "2025-12-04T11:00:00Z", ["course:sql"]),
                       ("x5", 3, 9, "2025-12-04T10:00:00Z", ["course:sql"]),  # not joined
                       ("x6", 1, 9, "2025-12-04T10:00:00Z", ["course:python"])])
    got = await board(api, "duel")
    assert [(e["user_id"], e["score"]) for e in got["entries"]] == [(2, 2), (1, 1)]
    challenge_clock(api, "2025-12-08T00:00:00")
    assert_problem(await three.post("/v1/challenges/duel/join"), 409, "challenge_ended")


async def test_what_may_change_once_started(api: Api) -> None:
    admin = api.client(ADMIN)
    await define(api, "c1")
    assert (await admin.put("/v1/admin/challenges/c1", json={
        "title": "C1", **WINDOW, "metric": "best"})).status_code == 200  # before the start
    challenge_clock(api, "2025-12-02T00:00:00")
    assert_problem(await admin.put("/v1/admin/challenges/c1", json={
        "title": "C1", **WINDOW, "metric": "points"}), 409, "challenge_conflict")
    later = {**WINDOW, "ends_at": "2025-12-09T00:00:00Z"}
    moved = await admin.put("/v1/admin/challenges/c1", json={
        "title": "Renamed", **later, "metric": "best"})
    assert moved.status_code == 200 and moved.json()["ends_at"] == "2025-12-09T00:00:00Z"
    assert_problem(await admin.put("/v1/admin/challenges/c1", json={
        "title": "Renamed", **WINDOW, "metric": "best"}), 409, "challenge_conflict")
    for bad in ({"title": ""}, {"title": "x", "starts_at": "2025-12-01"},
                {"title": "x", **WINDOW, "max_size": 3},
                {"title": "x", "starts_at": "2025-12-01T00:00:00Z",
                 "ends_at": "2026-04-01T00:00:00Z"},
                {"title": "x", **WINDOW, "rewards": [{"from": 1, "to": 3, "reward": "a"},
                                                     {"from": 3, "to": 4, "reward": "b"}]},
                {"title": "x", **WINDOW, "colour": "red"}):
        assert_problem(await admin.put("/v1/admin/challenges/c2", json=bad), 422,
                       "validation_error")
    assert_problem(await admin.put("/v1/admin/challenges/Bad!", json={"title": "x", **WINDOW}),
                   422, "validation_error")
    assert (await admin.delete("/v1/admin/challenges/c1")).status_code == 204
    assert_problem(await api.get("/v1/challenges/c1"), 404, "not_found")
    audit = (await admin.get("/v1/admin/audit")).json()["entries"]
    assert [e["action"] for e in audit][:3] == ["challenge_delete", "challenge_define",
                                                "challenge_define"]


@pytest.mark.parametrize("zone", ["UTC", "Pacific/Auckland"])
async def test_a_challenge_that_notifies_tells_top10_and_overtaken(serve: ApiFactory,
                                                                   zone: str) -> None:
    """While it runs, with `notify`: `top10` once per learner, `overtaken`
    naming who passed (by id, as on weekly boards), each with the challenge's
    id; a window is instants, whatever the deployment's zone."""
    api = await serve(close_seasons=False, time_zone=zone)
    await api.app.state.supervisor.stop_loop("challenges")
    challenge_clock(api, "2025-11-30T12:00:00")
    await define(api, "loud", notify=True, board="course:sql")
    challenge_clock(api, "2025-12-03T00:00:00")
    await record(api, [("n1", 1, 10, "2025-12-02T10:00:00Z", ["course:sql"]),
                       ("n2", 2, 5, "2025-12-02T11:00:00Z", ["course:sql"]),
                       ("n0", 3, 50, "2025-11-30T23:59:59Z", ["course:sql"])])  # before it
    assert await api.runtime.decider.watch() == 1
    await record(api, [("n3", 2, 20, "2025-12-02T12:00:00Z", ["course:sql"])])
    assert await api.runtime.decider.watch() == 1
    assert await api.runtime.decider.watch() == 0  # nothing new: no look

    async def notes(uid: int) -> list[tuple[str, dict[str, Any]]]:
        got = await api.client(token_for(api.env, uid)).get(f"/v1/users/{uid}/notifications")
        return sorted((n["kind"], n["data"]) for n in got.json()["notifications"])

    shown = {"board": "course:sql", "metric": "points", "board_title": "Course · sql"}
    assert await notes(1) == [
        ("overtaken", {"season": "challenge:loud", "by_user_id": 2, "by_display_name":
                       "Learner 2", "challenge_id": "loud", **shown}),
        ("top10", {"rank": 1, "score": 10, "challenge_id": "loud", **shown})]
    assert await notes(2) == [("top10", {"rank": 2, "score": 5, "challenge_id": "loud", **shown})]
    assert await notes(3) == []
    assert (await board(api, "loud"))["entries"][0]["user_id"] == 2
