"""The contract's request/response cases, in process (tests/api/conftest.py):
each status, problem code, privacy rule and header of docs/contract.md that needs
no server process."""

from __future__ import annotations

import pytest

from tests.api.conftest import ApiFactory
from tests.helpers import (
    ADMIN,
    INGEST,
    SEED_TIE_RANKS,
    SEED_TIES,
    assert_problem,
    completion,
    token_for,
)


async def test_writes_statuses_and_errors(serve: ApiFactory) -> None:
    server = await serve()
    c = server.client(INGEST)
    first = await c.post("/v1/completions", json=completion("9001", 42, 1))
    assert first.status_code == 201
    body = first.json()
    assert body["status"] == "recorded" and body["completion_id"] == "9001"
    assert isinstance(body["seq"], int) and body["season"].count("-W") == 1
    again = await c.post("/v1/completions", json=completion("9001", 42, 1))
    assert again.status_code == 200 and again.json() == {**body, "status": "duplicate"}
    assert_problem(await c.post("/v1/completions", json=completion("9001", 42, 2)), 409,
                   "completion_conflict")
    assert_problem(await c.post("/v1/completions", json=completion("old", 42, 1,
                                                              "2020-01-06T10:00:00Z")),
                   409, "season_closed")
    assert_problem(await c.post("/v1/completions", json=completion("fut", 42, 1,
                                                              "2999-01-06T10:00:00Z")),
                   422, "validation_error")
    for bad in ({"completion_id": "a", "user_id": "42", "points": 1},
                {"completion_id": "a", "user_id": 42, "points": 1.5},
                {"completion_id": "a", "user_id": 42, "points": True},
                {"completion_id": "a", "user_id": 42, "points": 1,
                 "completed_at": "2026-11-30T10:00:00"},
                {"completion_id": "a b", "user_id": 42, "points": 1}, [], "x"):
        assert_problem(await c.post("/v1/completions", json=bad), 422, "validation_error")
    assert_problem(await c.post("/v1/completions", content=b"{nope",
                          headers={"content-type": "application/json"}), 422,
                   "validation_error")
    assert_problem(await c.post("/v1/completions", content=b"{}",
                          headers={"content-type": "text/plain"}), 415,
                   "unsupported_media_type")
    big = b'{"completion_id": "' + b"x" * (1024 * 1024) + b'"}'
    assert_problem(await c.post("/v1/completions", content=big,
                          headers={"content-type": "application/json"}), 413,
                   "payload_too_large")
    # Nothing above was recorded except 9001.
    top = (await server.get("/v1/leaderboards/current")).json()
    assert [(e["user_id"], e["score"]) for e in top["entries"]] == [(42, 1)]


async def test_auth(serve: ApiFactory) -> None:
    server = await serve()
    anon = server.client()
    assert_problem(await anon.post("/v1/completions", json=completion("a", 1, 1)), 401,
                   "unauthorized")
    assert_problem(await server.client("wrong").post("/v1/completions", json=completion("a", 1, 1)),
                   401, "unauthorized")
    learner = token_for(server.env, 1)
    assert_problem(await server.client(learner).post("/v1/completions", json=completion("a", 1, 1)),
                   403, "forbidden")
    assert (await server.client(ADMIN).post("/v1/completions", json=completion("a", 1, 1)
                                     )).status_code == 201
    assert (await server.client(learner).get("/v1/leaderboards/current/users/1")).status_code == 200
    assert_problem(await server.client(learner).get("/v1/leaderboards/current/users/2"), 403,
                   "forbidden")
    assert_problem(await server.client(INGEST).get("/v1/leaderboards/current/users/1"), 403,
                   "forbidden")
    assert_problem(await anon.get("/v1/leaderboards/current/users/1"), 401, "unauthorized")
    expired = token_for(server.env, 1, ttl=-60)
    assert_problem(await server.client(expired).get("/v1/leaderboards/current/users/1"), 401,
                   "unauthorized")
    assert (await server.client(ADMIN).get("/v1/leaderboards/current/users/1")).status_code == 200


async def test_batch(serve: ApiFactory) -> None:
    server = await serve()
    c = server.client(INGEST)
    items = [completion("b1", 1, 3), completion("b2", 2, 5), completion("b1", 1, 3),
             completion("b1", 1, 4), {"completion_id": "b3", "user_id": 0, "points": 1}]
    resp = await c.post("/v1/completions/batch", json={"completions": items})
    assert resp.status_code == 200
    results = resp.json()["results"]
    assert [r["status"] for r in results] == ["recorded", "recorded", "duplicate", "rejected",
                                              "rejected"]
    assert results[3]["error"]["code"] == "completion_conflict"
    assert results[4]["error"]["code"] == "validation_error" and results[4]["completion_id"] == "b3"
    assert_problem(await c.post("/v1/completions/batch", json={"completions": []}), 422,
                   "validation_error")
    too_many = [completion(f"m{i}", 1, 1) for i in range(1001)]
    assert_problem(await c.post("/v1/completions/batch", json={"completions": too_many}), 422,
                   "validation_error")


async def test_privacy_and_neighbourhood(serve: ApiFactory) -> None:
    server = await serve()
    c = server.client(INGEST)
    for uid, name, vis in [(1, "Hidden Hal", "hidden"), (2, "Anon Ann", "anonymous"),
                           (3, "Pub Pat", "public")]:
        resp = await c.put(f"/v1/users/{uid}", json={"display_name": name, "visibility": vis})
        assert resp.status_code == 200
        assert resp.json() == {"user_id": uid, "display_name": name, "visibility": vis}
    for uid, pts in [(1, 50), (2, 40), (3, 30), (4, 30), (5, 10)]:
        resp = await c.post("/v1/completions", json=completion(f"p{uid}", uid, pts))
        assert resp.status_code == 201
    top = (await server.get("/v1/leaderboards/current?limit=10")).json()
    assert top["total"] == 4 and top["tie_policy"] == "shared" and top["status"] == "open"
    assert top["entries"] == [
        {"rank": 1, "user_id": None, "display_name": "Anonymous", "score": 40},
        {"rank": 2, "user_id": 3, "display_name": "Pub Pat", "score": 30},
        {"rank": 2, "user_id": 4, "display_name": "Learner 4", "score": 30},
        {"rank": 4, "user_id": 5, "display_name": "Learner 5", "score": 10}]
    assert "Hidden Hal" not in (await server.get("/v1/leaderboards/current")).text
    hal = (await server.client(token_for(server.env, 1)).get(
        "/v1/leaderboards/current/users/1?radius=1")).json()
    assert hal["user"] == {"rank": 1, "user_id": 1, "display_name": "Hidden Hal", "score": 50,
                           "visibility": "hidden"}
    assert [(n["user_id"], n["self"]) for n in hal["neighbors"]] == [(1, True), (None, False)]
    ann = (await server.client(token_for(server.env, 2)).get(
        "/v1/leaderboards/current/users/2?radius=2")).json()
    assert ann["neighbors"][0] == {"rank": 1, "user_id": 2, "display_name": "Anon Ann",
                                   "score": 40, "self": True}
    assert [n["user_id"] for n in ann["neighbors"]] == [2, 3, 4]
    assert_problem(await server.client(ADMIN).get("/v1/leaderboards/current/users/9"), 404,
                   "not_ranked")
    assert_problem(await server.client(ADMIN).get("/v1/leaderboards/current/users/1?radius=51"),
                   422, "validation_error")
    assert_problem(await c.put("/v1/users/1", json={"display_name": "bad\u0007name"}), 422,
                   "validation_error")
    assert_problem(await c.put("/v1/users/1", json={"visibility": "secret"}), 422,
                   "validation_error")
    # Visibility changes show in the very next read.
    assert (await c.put("/v1/users/1", json={"visibility": "public"})).status_code == 200
    top = (await server.get("/v1/leaderboards/current?limit=1")).json()
    assert top["entries"] == [{"rank": 1, "user_id": 1, "display_name": "Hidden Hal",
                               "score": 50}]


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_seed_exercise_top_three_ties(serve: ApiFactory, policy: str) -> None:
    """The seed's exercise: top-three ties under both tie policies."""
    server = await serve(tie_policy=policy, close_seasons=False)
    c = server.client(INGEST)
    items = [completion(*item) for item in SEED_TIES]
    assert all(r["status"] == "recorded" for r in (await c.post(
        "/v1/completions/batch", json={"completions": items})).json()["results"])
    top = (await server.get("/v1/leaderboards/2026-W45")).json()
    assert [(e["rank"], e["user_id"]) for e in top["entries"]] == SEED_TIE_RANKS[policy]
    assert top["tie_policy"] == policy


async def test_season_rollover(serve: ApiFactory) -> None:
    server = await serve(close_seasons=False)
    c = server.client(INGEST)
    items = [completion("sun", 1, 5, "2026-11-29T23:59:59.999Z"),
             completion("mon", 1, 7, "2026-11-30T00:00:00Z"),
             completion("off", 2, 3, "2026-11-29T23:30:00-01:00"),  # 00:30Z Monday
             completion("w53", 3, 1, "2020-12-31T12:00:00Z"),
             completion("y21", 3, 2, "2021-01-04T00:00:00Z")]
    seasons = [r["season"] for r in (await c.post("/v1/completions/batch",
                                          json={"completions": items})).json()["results"]]
    assert seasons == ["2026-W48", "2026-W49", "2026-W49", "2020-W53", "2021-W01"]
    w48 = (await server.get("/v1/leaderboards/2026-W48")).json()
    w49 = (await server.get("/v1/leaderboards/2026-W49")).json()
    assert [(e["user_id"], e["score"]) for e in w48["entries"]] == [(1, 5)]
    assert [(e["user_id"], e["score"]) for e in w49["entries"]] == [(1, 7), (2, 3)]
    assert (w49["starts_at"], w49["ends_at"]) == ("2026-11-30T00:00:00Z", "2026-12-07T00:00:00Z")
    w53 = (await server.get("/v1/leaderboards/2020-W53")).json()
    assert w53["entries"][0]["score"] == 1
    empty = (await server.get("/v1/leaderboards/2026-W40")).json()
    assert empty["total"] == 0 and empty["entries"] == []
    for bad in ("2027-W53", "2026-W54", "2026-49", "week"):
        assert_problem(await server.get(f"/v1/leaderboards/{bad}"), 422, "validation_error")
    assert_problem(await server.get("/v1/leaderboards/current?limit=0"), 422,
                   "validation_error")
    assert_problem(await server.get("/v1/leaderboards/current?limit=1001"), 422,
                   "validation_error")


async def test_board_etag_and_read_your_writes(serve: ApiFactory) -> None:
    """The top of a board carries an ETag: unchanged, `If-None-Match` gets 304;
    a completion changes it at once for the writer's next read (the cache of
    this process drops before the 201 leaves)."""
    server = await serve()
    c = server.client(INGEST)
    assert (await c.post("/v1/completions", json=completion("t1", 1, 5))).status_code == 201
    first = await server.get("/v1/leaderboards/current")
    etag = first.headers["etag"]
    again = await server.get("/v1/leaderboards/current", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.headers["etag"] == etag and again.content == b""
    for n in range(20):  # every write shows on the very next read
        resp = await c.post("/v1/completions", json=completion(f"t2-{n}", 2, 1))
        assert resp.status_code == 201
        board = await server.get("/v1/leaderboards/current")
        assert {e["user_id"]: e["score"] for e in board.json()["entries"]}[2] == n + 1
        assert board.headers["etag"] != etag
        etag = board.headers["etag"]
    assert (await server.get("/v1/leaderboards/current?limit=0")).status_code == 422
    bad = await server.get("/v1/leaderboards/2026-W99")
    assert bad.status_code == 422 and bad.json()["code"] == "validation_error"


async def test_query_numbers_are_ascii_digits(serve: ApiFactory) -> None:
    """Found by schemathesis: `limit=³` is a digit to Python's str.isdigit()."""
    server = await serve()
    for query in ("limit=%C2%B3", "limit=%EF%BC%91", "limit=-1", "limit=1e3"):
        resp = await server.get(f"/v1/leaderboards/current?{query}")
        assert_problem(resp, 422, "validation_error")
    token = token_for(server.env, 3)
    await server.client(INGEST).post("/v1/completions", json=completion("q1", 3, 1))
    resp = await server.client(token).get("/v1/leaderboards/current/users/3?radius=%C2%B2")
    assert_problem(resp, 422, "validation_error")
