"""Team boards over HTTP (CONTRACT.md, "Team boards"): team kinds defined by
an operator, groups joining them, the board read by anyone with the
members-only rule held for every kind of token and none, a learner's own
teams, paging, a finalized season's board, and every error the contract
names."""

from __future__ import annotations

from typing import Any

import httpx

from tests.api.conftest import Api, ApiFactory
from tests.helpers import ADMIN, INGEST, assert_problem, completion, token_for

SEASON = "2025-W49"  # seasons never close in these tests (close_seasons off)
AT = "2025-12-03T10:00:00Z"


async def seeded(serve: ApiFactory, **settings: Any) -> Api:
    """Classes 7a (members-only: learners 1, 2) and 7b (public: 3, 4) of the
    kind `classes` (sum), and a group of no kind."""
    api = await serve(close_seasons=False, **settings)
    admin, ingest = api.client(ADMIN), api.client(INGEST)
    resp = await admin.put("/v1/admin/team-kinds/classes", json={"title": "Classes"})
    assert resp.status_code == 201, resp.text
    assert resp.json()["aggregate"] == "sum" and resp.json()["top"] is None
    for gid, access, members in (("7a", "members", [1, 2]), ("7b", "public", [3, 4]),
                                 ("chess", "public", [1, 3])):
        team = None if gid == "chess" else "classes"
        put = await ingest.put(f"/v1/groups/{gid}", json={"access": access, "team": team})
        assert put.status_code == 200 and put.json()["team"] == team, put.text
        added = await ingest.post(f"/v1/groups/{gid}/members", json={"add": members})
        assert added.status_code == 200, added.text
    resp = await ingest.post("/v1/completions/batch", json={"completions": [
        completion(f"c{uid}", uid, pts, AT) for uid, pts in ((1, 10), (2, 5), (3, 8), (4, 8))]})
    assert resp.status_code == 200, resp.text
    await api.runtime.projector.drain(min_age_seconds=0)
    return api


async def board(c: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    resp = await c.get(f"/v1/teams/classes/leaderboards/{SEASON}", params=params)
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


async def test_the_members_only_rule_for_every_caller(serve: ApiFactory) -> None:
    api = await seeded(serve)
    callers = {"no token": api.client(), "ingest": api.client(INGEST),
               "admin": api.client(ADMIN), "a member of 7a": api.client(token_for(api.env, 1)),
               "a member of 7b": api.client(token_for(api.env, 3)),
               "a learner in no group": api.client(token_for(api.env, 99))}
    named = {"no token": False, "ingest": True, "admin": True, "a member of 7a": True,
             "a member of 7b": False, "a learner in no group": False}
    for who, c in callers.items():
        body = await board(c)
        assert {k: body[k] for k in ("team", "title", "season", "board", "aggregate",
                                     "total")} == {
            "team": "classes", "title": "Classes", "season": SEASON, "board": "global",
            "aggregate": "sum", "total": 2}, who
        first, second = body["entries"]
        assert (first["rank"], first["group_id"], first["name"], first["score"],
                first["members"]) == (1, "7b", "7b", 16, 2), who
        assert (second["rank"], second["score"], second["members"]) == (2, 15, 2), who
        if named[who]:
            assert (second["group_id"], second["name"]) == ("7a", "7a"), who
        else:  # nothing of the group: no id, no name
            assert (second["group_id"], second["name"]) == (None, None), who
            assert "7a" not in str(body), who
    bad = await api.client("not-a-token").get(f"/v1/teams/classes/leaderboards/{SEASON}")
    assert_problem(bad, 401, "unauthorized")


async def test_a_learner_s_teams_and_errors(serve: ApiFactory) -> None:
    api = await seeded(serve)
    mine = await api.client(token_for(api.env, 2)).get(
        "/v1/users/2/teams", params={"season": SEASON})
    assert mine.status_code == 200, mine.text
    assert mine.json() == {"teams": [{"team": "classes", "group_id": "7a", "name": "7a",
                                      "rank": 2, "score": 15, "total": 2,
                                      "contribution": 5}]}
    assert_problem(await api.client(token_for(api.env, 3)).get("/v1/users/2/teams"),
                   403, "forbidden")
    assert_problem(await api.get("/v1/users/2/teams"), 401, "unauthorized")
    admin = api.client(ADMIN)
    assert_problem(await admin.put("/v1/admin/team-kinds/classes", json={"aggregate": "mean"}),
                   409, "kind_conflict")
    assert_problem(await admin.put("/v1/admin/team-kinds/squads",
                                   json={"aggregate": "top"}), 422, "validation_error")
    assert_problem(await admin.put("/v1/admin/team-kinds/squads",
                                   json={"aggregate": "top", "top": 101}),
                   422, "validation_error")
    assert_problem(await admin.put("/v1/admin/team-kinds/squads", json={"colour": "red"}),
                   422, "validation_error")
    assert_problem(await admin.put("/v1/admin/team-kinds/Bad!", json={}), 422,
                   "validation_error")
    assert_problem(await api.client(INGEST).put("/v1/admin/team-kinds/squads", json={}),
                   403, "forbidden")
    assert_problem(await api.client(INGEST).put("/v1/groups/7c", json={"team": "nope"}),
                   422, "validation_error")
    assert_problem(await api.get(f"/v1/teams/nope/leaderboards/{SEASON}"), 404, "not_found")
    assert_problem(await api.get("/v1/teams/classes/leaderboards/2025-W99"), 422,
                   "validation_error")
    listed = await admin.get("/v1/admin/team-kinds")
    assert [k["team"] for k in listed.json()["team_kinds"]] == ["classes"], listed.text
    retitled = await admin.put("/v1/admin/team-kinds/classes", json={"title": "Forms"})
    assert retitled.status_code == 200 and retitled.json()["title"] == "Forms"
    assert (await admin.delete("/v1/admin/team-kinds/classes")).status_code == 204
    assert_problem(await admin.delete("/v1/admin/team-kinds/classes"), 404, "not_found")
    group = await api.client(INGEST).get("/v1/groups/7a")
    assert group.json()["team"] is None, group.text


async def test_pages_follow_each_other_and_ties_share_a_rank(serve: ApiFactory) -> None:
    api = await seeded(serve)
    admin = api.client(ADMIN)
    first = await board(admin, limit=1)
    assert [e["group_id"] for e in first["entries"]] == ["7b"] and first["next"], first
    rest = await board(admin, limit=1, after=first["next"])
    assert [e["group_id"] for e in rest["entries"]] == ["7a"] and rest["next"] is None, rest
    other = await admin.get("/v1/teams/classes/leaderboards/2025-W48",
                            params={"after": first["next"]})
    assert_problem(other, 422, "validation_error")  # a cursor of another board
    ingest = api.client(INGEST)
    await ingest.post("/v1/completions", json=completion("tie", 2, 1, AT))
    await api.runtime.projector.drain(min_age_seconds=0)
    tied = await board(admin)
    assert [(e["rank"], e["group_id"], e["score"]) for e in tied["entries"]] == [
        (1, "7a", 16), (1, "7b", 16)]


async def test_a_kept_page_goes_with_the_change_that_makes_it_stale(serve: ApiFactory) -> None:
    """The pages kept for callers with no learner token go with a hint of
    their season (a completion), a group change (a membership) and a team
    kind's change (its title)."""
    api = await seeded(serve)
    anyone, ingest, admin = api.client(), api.client(INGEST), api.client(ADMIN)
    assert [e["score"] for e in (await board(anyone))["entries"]] == [16, 15]
    await ingest.post("/v1/completions", json=completion("more", 1, 4, AT))
    await api.runtime.projector.drain(min_age_seconds=0)
    assert [e["score"] for e in (await board(anyone))["entries"]] == [19, 16]
    await ingest.post("/v1/groups/7b/members", json={"remove": [4]})
    assert [(e["score"], e["members"]) for e in (await board(anyone))["entries"]] == [
        (19, 2), (8, 1)]
    await admin.put("/v1/admin/team-kinds/classes", json={"title": "Forms"})
    assert (await board(anyone))["title"] == "Forms"
