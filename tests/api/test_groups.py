"""Groups, group boards, friends boards and cursors, over HTTP in process
(docs/contract.md: Groups; POST /v1/leaderboards/{season}/ranks)."""

from __future__ import annotations

import base64
import random
from typing import Any

import httpx
import pytest

from laurels.core.ranking import Standing, rank_all
from laurels.core.seasons import parse_season
from tests.api.conftest import Api, ApiFactory
from tests.helpers import (
    ADMIN,
    INGEST,
    SEED_TIE_RANKS,
    SEED_TIES,
    assert_problem,
    completion,
    token_for,
)


async def board(api: Api, path: str, token: str | None = INGEST, **params: Any) -> Any:
    resp = await api.client(token).get(path, params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()


async def post_all(c: httpx.AsyncClient, scores: dict[int, int], at: str | None = None
                   ) -> None:
    items = [completion(f"c{uid}-{pts}", uid, pts, at) for uid, pts in scores.items()]
    resp = await c.post("/v1/completions/batch", json={"completions": items})
    assert all(r["status"] == "recorded" for r in resp.json()["results"]), resp.text


async def test_groups_and_members(serve: ApiFactory) -> None:
    api = await serve()
    c = api.client(INGEST)
    resp = await c.put("/v1/groups/class-7b", json={})
    assert resp.status_code == 200
    assert resp.json() == {"group_id": "class-7b", "name": "class-7b", "access": "members",
                           "members": 0, "team": None}  # (no team kind: Team boards)
    resp = await c.put("/v1/groups/class-7b", json={"name": "Class 7B", "access": "public"})
    assert resp.json() == {"group_id": "class-7b", "name": "Class 7B", "access": "public",
                           "members": 0, "team": None}
    resp = await c.post("/v1/groups/class-7b/members", json={"add": [1, 2, 3, 3]})
    assert resp.json() == {"group_id": "class-7b", "members": 3, "refused": []}
    again = await c.post("/v1/groups/class-7b/members", json={"add": [1], "remove": [3, 99]})
    assert again.json() == {"group_id": "class-7b", "members": 2, "refused": []}
    assert (await c.get("/v1/groups/class-7b")).json()["members"] == 2
    mine = await api.client(token_for(api.env, 1)).get("/v1/users/1/groups")
    assert mine.json() == {"groups": [{"group_id": "class-7b", "name": "Class 7B",
                                       "access": "public"}]}
    # Errors, and nothing changed by them.
    assert_problem(await c.get("/v1/groups/nope"), 404, "not_found")
    assert_problem(await c.post("/v1/groups/nope/members", json={"add": [1]}), 404,
                   "not_found")
    assert_problem(await c.put("/v1/groups/bad%20id", json={}), 422, "validation_error")
    assert_problem(await c.put("/v1/groups/g", json={"access": "everyone"}), 422,
                   "validation_error")
    assert_problem(await c.put("/v1/groups/g", json={"name": "a\u0007b"}), 422,
                   "validation_error")
    assert_problem(await c.put("/v1/groups/g", json={"name": "x" * 65}), 422,
                   "validation_error")
    assert_problem(await c.post("/v1/groups/class-7b/members", json={"add": [0]}), 422,
                   "validation_error")
    too_many = {"add": list(range(1, 6002)), "remove": list(range(10_000, 14_000))}
    assert_problem(await c.post("/v1/groups/class-7b/members", json=too_many), 422,
                   "validation_error")
    learner = api.client(token_for(api.env, 1))
    assert_problem(await learner.put("/v1/groups/g", json={}), 403, "forbidden")
    assert_problem(await api.client().put("/v1/groups/g", json={}), 401, "unauthorized")
    assert_problem(await api.client(token_for(api.env, 2)).get("/v1/users/1/groups"), 403,
                   "forbidden")
    assert (await c.get("/v1/groups/class-7b")).json()["members"] == 2
    assert_problem(await c.get("/v1/groups/g"), 404, "not_found")
    assert (await c.delete("/v1/groups/class-7b")).status_code == 204
    assert_problem(await c.get("/v1/groups/class-7b"), 404, "not_found")
    assert_problem(await c.delete("/v1/groups/class-7b"), 404, "not_found")
    assert (await learner.get("/v1/users/1/groups")).json() == {"groups": []}


async def test_a_group_board_ranks_its_members_with_privacy(serve: ApiFactory) -> None:
    api = await serve()
    c = api.client(INGEST)
    await c.put("/v1/users/2", json={"display_name": "Ann", "visibility": "anonymous"})
    await c.put("/v1/users/3", json={"display_name": "Hal", "visibility": "hidden"})
    await c.put("/v1/users/4", json={"display_name": "Pat"})
    await post_all(c, {1: 50, 2: 40, 3: 45, 4: 40, 5: 10, 6: 99})
    await c.put("/v1/groups/team", json={})
    await c.post("/v1/groups/team/members", json={"add": [2, 3, 4, 5, 7]})
    body = await board(api, "/v1/groups/team/leaderboards/current")
    assert body["group_id"] == "team" and body["tie_policy"] == "shared"
    assert body["period"] == "week" and body["season"].count("-W") == 1
    assert body["total"] == 3 and body["next"] is None
    assert body["entries"] == [  # hidden 3 takes no rank; 7 has no completions
        {"rank": 1, "user_id": None, "display_name": "Anonymous", "score": 40},
        {"rank": 1, "user_id": 4, "display_name": "Pat", "score": 40},
        {"rank": 3, "user_id": 5, "display_name": "Learner 5", "score": 10}]
    # A membership change shows on the next read.
    await c.post("/v1/groups/team/members", json={"add": [6], "remove": [5]})
    body = await board(api, "/v1/groups/team/leaderboards/current")
    assert [(e["rank"], e["user_id"]) for e in body["entries"]] == [(1, 6), (2, None), (2, 4)]
    # Access: a members group is read by its members, ingest or admin only.
    hal = api.client(token_for(api.env, 3))
    assert (await hal.get("/v1/groups/team/leaderboards/current")).status_code == 200
    # A caller who may not read it cannot tell it from no group
    # (test_group_oracle.py has the rest).
    outsider = api.client(token_for(api.env, 1))
    assert_problem(await outsider.get("/v1/groups/team/leaderboards/current"), 404,
                   "not_found")
    assert_problem(await api.get("/v1/groups/team/leaderboards/current"), 401,
                   "unauthorized")
    assert_problem(await api.get("/v1/groups/nope/leaderboards/current"), 401,
                   "unauthorized")
    assert_problem(await c.get("/v1/groups/nope/leaderboards/current"), 404, "not_found")
    # Its event stream has the same access (refused before any stream opens).
    assert_problem(await api.get("/v1/groups/team/leaderboards/current/events"), 401,
                   "unauthorized")
    assert_problem(await outsider.get("/v1/groups/team/leaderboards/current/events"), 404,
                   "not_found")
    assert_problem(await c.get("/v1/groups/nope/leaderboards/current/events"), 404,
                   "not_found")
    await c.put("/v1/groups/team", json={"access": "public"})
    assert (await api.get("/v1/groups/team/leaderboards/current")).status_code == 200
    assert "Hal" not in (await api.get("/v1/groups/team/leaderboards/current")).text


async def test_a_group_neighbourhood(serve: ApiFactory) -> None:
    api = await serve()
    c = api.client(INGEST)
    await c.put("/v1/users/3", json={"display_name": "Hal", "visibility": "hidden"})
    await post_all(c, {1: 50, 2: 40, 3: 45, 4: 30})
    await c.put("/v1/groups/g", json={})
    await c.post("/v1/groups/g/members", json={"add": [2, 3, 4]})
    hal = await board(api, "/v1/groups/g/leaderboards/current/users/3",
                      token_for(api.env, 3), radius=1)
    assert hal["user"] == {"rank": 1, "user_id": 3, "display_name": "Hal", "score": 45,
                           "visibility": "hidden"}
    # The others ranked as if Hal were on the board: no two rank-1 rows.
    assert [(n["rank"], n["user_id"], n["self"]) for n in hal["neighbors"]] == [
        (1, 3, True), (2, 2, False)]
    four = await board(api, "/v1/groups/g/leaderboards/current/users/4",
                       token_for(api.env, 4), radius=5)
    assert four["user"]["rank"] == 2  # hidden 3 pushes nobody down
    assert [(n["rank"], n["user_id"]) for n in four["neighbors"]] == [(1, 2), (2, 4)]
    one = api.client(token_for(api.env, 1))
    outside = assert_problem(await one.get("/v1/groups/g/leaderboards/current/users/1"), 404,
                             "not_found")  # not a member: as if there were no group
    assert outside["detail"] == "no group g"
    await post_all(c, {5: 1})
    await c.post("/v1/groups/g/members", json={"add": [6]})
    assert_problem(await api.client(token_for(api.env, 6)).get(
        "/v1/groups/g/leaderboards/current/users/6"), 404, "not_ranked")


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_ties_inside_a_group(serve: ApiFactory, policy: str) -> None:
    api = await serve(tie_policy=policy, close_seasons=False)
    c = api.client(INGEST)
    items = [completion(*item) for item in SEED_TIES]
    items.append(completion("t5", 50, 12, "2026-11-03T08:00:00Z"))  # not in the group
    await c.post("/v1/completions/batch", json={"completions": items})
    await c.put("/v1/groups/g", json={"access": "public"})
    await c.post("/v1/groups/g/members", json={"add": [10, 20, 30, 40]})
    body = await board(api, "/v1/groups/g/leaderboards/2026-W45", None)
    assert [(e["rank"], e["user_id"]) for e in body["entries"]] == SEED_TIE_RANKS[policy]
    assert body["tie_policy"] == policy


async def test_group_boards_match_a_reference_and_page_exactly_once(
        serve: ApiFactory) -> None:
    """Random scores and groups: each group's board equals the reference
    ranking of its visible members; paging with `next` returns each entry
    once, also while completions arrive; foreign cursors are 422."""
    api = await serve()
    c = api.client(INGEST)
    rnd = random.Random(7)
    scores = {uid: rnd.randint(1, 8) for uid in range(1, 121)}
    hidden = set(rnd.sample(sorted(scores), 10))
    for uid in hidden:
        await c.put(f"/v1/users/{uid}", json={"visibility": "hidden"})
    await post_all(c, scores)
    for g in range(3):
        members = rnd.sample([*sorted(scores), 500, 501], 40)
        await c.put(f"/v1/groups/g{g}", json={"access": "public"})
        await c.post(f"/v1/groups/g{g}/members", json={"add": members})
        want = [(r, s.user_id, s.score) for r, s in rank_all(
            [Standing(u, scores[u]) for u in members if u in scores and u not in hidden],
            "shared")]
        body = await board(api, f"/v1/groups/g{g}/leaderboards/current", None, limit=1000)
        assert [(e["rank"], e["user_id"], e["score"]) for e in body["entries"]] == want
        # Page by 7 while, between pages, a newcomer outside the group and one
        # member not seen yet score: every member whose score did not change
        # appears exactly once, in order.
        seen: list[int] = []
        changed: set[int] = set()
        params: dict[str, Any] = {"limit": 7}
        pages = 0
        while True:
            page = await board(api, f"/v1/groups/g{g}/leaderboards/current", None, **params)
            seen += [e["user_id"] for e in page["entries"]]
            pages += 1
            unseen = [u for _, u, _ in want if u not in seen and u not in changed]
            bump = {1000 + 100 * g + pages: 1}
            if unseen:
                bump[unseen[-1]] = 10 * (g + 1) + pages  # a fresh id: c<uid>-<pts>
                changed.add(unseen[-1])
                scores[unseen[-1]] += bump[unseen[-1]]
            await post_all(c, bump)
            if page["next"] is None:
                break
            params = {"limit": 7, "after": page["next"]}
        steady = [u for _, u, _ in want if u not in changed]
        assert [u for u in seen if u not in changed] == steady
    first = await board(api, "/v1/groups/g0/leaderboards/current", None, limit=2)
    assert_problem(await api.get("/v1/groups/g1/leaderboards/current",
                                 params={"after": first["next"]}), 422, "validation_error")
    for bad in ("x", "!!!", "e30", first["next"][:-3]):
        assert_problem(await api.get("/v1/groups/g0/leaderboards/current",
                                     params={"after": bad}), 422, "validation_error")


async def test_a_friends_board(serve: ApiFactory) -> None:
    api = await serve()
    c = api.client(INGEST)
    await c.put("/v1/users/2", json={"display_name": "Ann", "visibility": "anonymous"})
    await c.put("/v1/users/3", json={"display_name": "Hal", "visibility": "hidden"})
    await post_all(c, {1: 50, 2: 40, 3: 45, 4: 30, 5: 60})
    hal = api.client(token_for(api.env, 3))
    resp = await hal.post("/v1/leaderboards/current/ranks", json={"user_ids": [2, 3, 4, 9]})
    assert resp.status_code == 200
    # Hidden Hal sees themselves where they would stand, the others ranked
    # as if Hal were on the board; anonymous 2 is left out
    # (test_friends_privacy.py has the rest).
    assert resp.json()["entries"] == [
        {"rank": 1, "board_rank": 3, "user_id": 3, "display_name": "Hal", "score": 45,
         "self": True},
        {"rank": 2, "board_rank": 4, "user_id": 4, "display_name": "Learner 4", "score": 30}]
    other = await c.post("/v1/leaderboards/current/ranks", json={"user_ids": [1, 3, 5]})
    assert [(e["rank"], e["board_rank"], e["user_id"]) for e in other.json()["entries"]] == [
        (1, 1, 5), (2, 2, 1)]  # hidden 3 left out for anyone else
    assert_problem(await c.post("/v1/leaderboards/current/ranks", json={"user_ids": []}),
                   422, "validation_error")
    assert_problem(await c.post("/v1/leaderboards/current/ranks",
                                json={"user_ids": list(range(1, 1002))}),
                   422, "validation_error")
    assert_problem(await api.client().post("/v1/leaderboards/current/ranks",
                                           json={"user_ids": [1]}), 401, "unauthorized")
    many = await hal.post("/v1/leaderboards/current/ranks",
                          json={"user_ids": list(range(1, 1001))})
    assert [e["user_id"] for e in many.json()["entries"]] == [5, 1, 3, 4]


async def test_erasure_removes_a_learner_from_every_group(serve: ApiFactory) -> None:
    api = await serve()
    c = api.client(INGEST)
    await post_all(c, {1: 5, 2: 7})
    for g in ("a", "b"):
        await c.put(f"/v1/groups/{g}", json={"access": "public"})
        await c.post(f"/v1/groups/{g}/members", json={"add": [1, 2]})
    assert (await api.client(ADMIN).delete("/v1/users/2")).status_code == 204
    for g in ("a", "b"):
        assert (await c.get(f"/v1/groups/{g}")).json()["members"] == 1
        body = await board(api, f"/v1/groups/{g}/leaderboards/current", None)
        assert [e["user_id"] for e in body["entries"]] == [1]
    back = await c.post("/v1/groups/a/members", json={"add": [2, 3]})
    assert back.json() == {"group_id": "a", "members": 2,
                           "refused": [{"user_id": 2, "code": "user_erased"}]}
    friends = await c.post("/v1/leaderboards/current/ranks", json={"user_ids": [1, 2]})
    assert [e["user_id"] for e in friends.json()["entries"]] == [1]


async def test_a_finalized_season_s_group_board_reads_its_archive(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    c = api.client(INGEST)
    await c.put("/v1/users/3", json={"visibility": "hidden"})
    await post_all(c, {1: 5, 2: 9, 3: 7, 4: 9}, "2026-11-03T10:00:00Z")  # 2026-W45
    await c.put("/v1/groups/g", json={"access": "public"})
    await c.post("/v1/groups/g/members", json={"add": [2, 3, 4]})
    live = await board(api, "/v1/groups/g/leaderboards/2026-W45", None)
    w45 = parse_season("2026-W45", zone=api.runtime.settings.time_zone)
    assert await api.runtime.lifecycle.finalize(w45)
    for version in await api.runtime.redis.smembers(
            api.runtime.keys.season("2026-W45").versions):
        await api.runtime.board.drop_version(w45, str(version))
    await api.runtime.redis.delete(api.runtime.keys.season("2026-W45").current)
    api.runtime.board.forget(w45)
    archived = await board(api, "/v1/groups/g/leaderboards/2026-W45", None)
    assert archived["entries"] == live["entries"] == [
        {"rank": 1, "user_id": 2, "display_name": "Learner 2", "score": 9},
        {"rank": 1, "user_id": 4, "display_name": "Learner 4", "score": 9}]
    # Membership changes show on past seasons too.
    await c.post("/v1/groups/g/members", json={"add": [1], "remove": [4]})
    again = await board(api, "/v1/groups/g/leaderboards/2026-W45", None)
    assert [(e["rank"], e["user_id"]) for e in again["entries"]] == [(1, 2), (2, 1)]


async def test_group_boards_through_a_rebuild_during_traffic(serve: ApiFactory) -> None:
    """Completions arrive while an admin rebuild runs: afterwards each group's
    board equals the reference of its members' sums, and verify agrees."""
    api = await serve()
    c = api.client(INGEST)
    rnd = random.Random(3)
    totals: dict[int, int] = {}
    await c.put("/v1/groups/g", json={"access": "public"})
    await c.post("/v1/groups/g/members", json={"add": list(range(1, 60, 2))})

    async def send(batch: int) -> None:
        items = []
        for n in range(40):
            uid, pts = rnd.randint(1, 60), rnd.randint(1, 9)
            totals[uid] = totals.get(uid, 0) + pts
            items.append(completion(f"r{batch}-{n}", uid, pts))
        resp = await c.post("/v1/completions/batch", json={"completions": items})
        assert resp.status_code == 200

    await send(0)
    admin = api.client(ADMIN)
    started = await admin.post("/v1/admin/leaderboards/current/rebuild")
    assert started.status_code == 202
    for batch in range(1, 6):
        await send(batch)
    rid = started.json()["rebuild_id"]
    for _ in range(200):
        status = (await admin.get(f"/v1/admin/rebuilds/{rid}")).json()["status"]
        if status != "running":
            break
        await send(100 + _)
    assert status == "succeeded"
    want = [(r, s.user_id, s.score) for r, s in rank_all(
        [Standing(u, t) for u, t in totals.items() if u % 2 == 1], "shared")]
    body = await board(api, "/v1/groups/g/leaderboards/current", None, limit=1000)
    assert [(e["rank"], e["user_id"], e["score"]) for e in body["entries"]] == want
    verify = (await admin.get("/v1/admin/leaderboards/current/verify")).json()
    assert verify["consistent"] is True


async def test_a_cursor_reveals_nobody(serve: ApiFactory) -> None:
    """The last entry of a page may be an anonymous learner, whose id the
    board masks: its cursor is sealed, so it shows nothing of them."""
    api = await serve()
    c = api.client(INGEST)
    await c.put("/v1/users/987654", json={"visibility": "anonymous", "display_name": "Ann"})
    await post_all(c, {987654: 9, 2: 5})
    await c.put("/v1/groups/g", json={"access": "public"})
    await c.post("/v1/groups/g/members", json={"add": [987654, 2]})
    page = await board(api, "/v1/groups/g/leaderboards/current", None, limit=1)
    assert page["entries"] == [{"rank": 1, "user_id": None, "display_name": "Anonymous",
                                "score": 9}]
    raw = base64.urlsafe_b64decode(page["next"] + "=" * (-len(page["next"]) % 4))
    assert b"987654" not in raw and b"Ann" not in raw
    rest = await board(api, "/v1/groups/g/leaderboards/current", None, limit=1,
                       after=page["next"])
    assert [e["user_id"] for e in rest["entries"]] == [2] and rest["next"] is None
