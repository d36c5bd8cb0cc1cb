"""Corrections (issue 15; docs/contract.md, Admin): void and restore on every
board, suspension, the learner's "why is my score" view and the audit log,
over HTTP in process against the real stores."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from laurels.core.seasons import parse_season
from tests.api.conftest import Api, ApiFactory
from tests.api.test_periods import ALL, post, scores
from tests.helpers import ADMIN, INGEST, assert_problem, completion, token_for

ITEMS = [("v1", 1, 10, "2025-12-01T10:00:00Z"), ("v2", 1, 5, "2025-12-02T10:00:00Z"),
         ("v3", 2, 12, "2025-12-01T11:00:00Z"), ("v4", 3, 7, "2025-12-03T09:00:00Z")]
BOARDS = ("2025-W49", "2025-12-01", "2025-12", "all")


async def void(api: Api, cid: str, reason: str = "cheating", status: int = 200) -> Any:
    resp = await api.client(ADMIN).post(f"/v1/admin/completions/{cid}/void",
                                        json={"reason": reason})
    assert resp.status_code == status, resp.text
    return resp.json()


async def restore(api: Api, cid: str) -> Any:
    resp = await api.client(ADMIN).post(f"/v1/admin/completions/{cid}/restore")
    assert resp.status_code == 200, resp.text
    return resp.json()


async def consistent(api: Api, *seasons: str) -> None:
    admin = api.client(ADMIN)
    for season in seasons:
        verdict = (await admin.get(f"/v1/admin/leaderboards/{season}/verify")).json()
        assert verdict["consistent"], (season, verdict)


async def audit(api: Api, **params: Any) -> Any:
    resp = await api.client(ADMIN).get("/v1/admin/audit", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()


async def test_void_and_restore_reach_every_board(serve: ApiFactory) -> None:
    api = await serve(periods=ALL, close_seasons=False)
    c = api.client(INGEST)
    await post(c, ITEMS)
    await c.put("/v1/groups/g", json={"access": "public"})
    await c.post("/v1/groups/g/members", json={"add": [1, 2]})
    body = await void(api, "v1", "answers copied")
    assert body == {"completion_id": "v1", "seq": body["seq"], "season": "2025-W49",
                    "status": "voided"}
    assert await void(api, "v1", "again") == body  # twice: the same, nothing changes
    assert await scores(api, "2025-W49") == [(2, 12), (3, 7), (1, 5)]
    assert await scores(api, "2025-12-01") == [(2, 12)]  # 1 had only v1 that day
    assert await scores(api, "2025-12") == [(2, 12), (3, 7), (1, 5)]
    assert await scores(api, "all") == [(2, 12), (3, 7), (1, 5)]
    group = (await api.get("/v1/groups/g/leaderboards/2025-12")).json()
    assert [(e["user_id"], e["score"]) for e in group["entries"]] == [(2, 12), (1, 5)]
    await consistent(api, *BOARDS)
    # A replay of the voided completion is a duplicate and counts nowhere.
    replay = await c.post("/v1/completions", json=completion(*ITEMS[0][:3], ITEMS[0][3]))
    assert replay.status_code == 200 and replay.json()["status"] == "duplicate"
    assert await scores(api, "2025-W49") == [(2, 12), (3, 7), (1, 5)]
    restored = await restore(api, "v1")
    assert restored == {**body, "status": "recorded"}
    assert await restore(api, "v1") == restored
    assert await scores(api, "2025-W49") == [(1, 15), (2, 12), (3, 7)]
    assert await scores(api, "2025-12-01") == [(2, 12), (1, 10)]
    await consistent(api, *BOARDS)
    entries = (await audit(api))["entries"]
    assert [(e["action"], e["target"], e["reason"]) for e in entries] == [
        ("restore", "v1", None), ("void", "v1", "answers copied")]
    # Errors change nothing.
    admin = api.client(ADMIN)
    assert_problem(await admin.post("/v1/admin/completions/nope/void",
                                    json={"reason": "x"}), 404, "not_found")
    assert_problem(await admin.post("/v1/admin/completions/v1/void", json={}), 422,
                   "validation_error")
    assert_problem(await admin.post("/v1/admin/completions/v1/void",
                                    json={"reason": "x" * 501}), 422, "validation_error")
    assert_problem(await admin.post("/v1/admin/completions/bad%20id/void",
                                    json={"reason": "x"}), 422, "validation_error")
    assert_problem(await c.post("/v1/admin/completions/v1/void", json={"reason": "x"}), 403,
                   "forbidden")
    assert_problem(await api.client().post("/v1/admin/completions/v1/void",
                                           json={"reason": "x"}), 401, "unauthorized")
    assert len((await audit(api))["entries"]) == 2
    assert await scores(api, "2025-W49") == [(1, 15), (2, 12), (3, 7)]


async def test_a_learner_with_nothing_counted_leaves_the_boards(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    await post(api.client(INGEST), ITEMS)
    await void(api, "v4")
    assert await scores(api, "2025-W49") == [(1, 15), (2, 12)]
    me = api.client(token_for(api.env, 3))
    assert_problem(await me.get("/v1/leaderboards/2025-W49/users/3"), 404, "not_ranked")
    await restore(api, "v4")
    assert await scores(api, "2025-W49") == [(1, 15), (2, 12), (3, 7)]
    assert (await me.get("/v1/leaderboards/2025-W49/users/3")).json()["user"]["rank"] == 3


async def test_a_void_gives_back_the_earlier_tie_time(serve: ApiFactory) -> None:
    """`first` policy: voiding a learner's latest completion makes their
    latest *counted* one decide ties again, on every board."""
    api = await serve(periods=ALL, close_seasons=False, tie_policy="first")
    await post(api.client(INGEST), [("x", 1, 10, "2025-12-01T08:00:00Z"),
                                    ("late", 1, 1, "2025-12-01T20:00:00Z"),
                                    ("w", 2, 10, "2025-12-01T09:00:00Z"),
                                    ("w2", 2, 1, "2025-12-01T10:00:00Z")])
    for season in BOARDS:  # 1 reached 11 last
        assert [u for u, _ in await scores(api, season)] == [2, 1], season
    await void(api, "late")
    await void(api, "w2")
    for season in BOARDS:  # now 1 reached 10 first (08:00, not 20:00)
        assert await scores(api, season) == [(1, 10), (2, 10)], season
    await restore(api, "late")
    for season in BOARDS:
        assert await scores(api, season) == [(1, 11), (2, 10)], season


async def test_rebuild_counts_what_is_not_voided_and_is_audited(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    await post(api.client(INGEST), ITEMS)
    await void(api, "v3")
    resp = await api.client(ADMIN).post("/v1/admin/leaderboards/2025-W49/rebuild")
    assert resp.status_code == 202
    rebuild_id = resp.json()["rebuild_id"]
    for _ in range(100):
        status = (await api.client(ADMIN).get(f"/v1/admin/rebuilds/{rebuild_id}")).json()
        if status["status"] != "running":
            break
    assert status["status"] == "succeeded", status
    assert await scores(api, "2025-W49") == [(1, 15), (3, 7)]
    await restore(api, "v3")  # converges on the rebuilt board too
    assert await scores(api, "2025-W49") == [(1, 15), (2, 12), (3, 7)]
    await consistent(api, "2025-W49")
    actions = [(e["action"], e["target"]) for e in (await audit(api))["entries"]]
    assert actions == [("restore", "v3"), ("rebuild", "2025-W49"), ("void", "v3")]


async def test_a_void_in_a_finalized_season_reranks_its_archive(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    await post(api.client(INGEST), ITEMS)
    await api.close_seasons()
    assert parse_season("2025-W49", zone=api.runtime.settings.time_zone) in (
        await api.runtime.lifecycle.finalize_due(datetime(2025, 12, 20, tzinfo=UTC)))
    mine = api.client(token_for(api.env, 1))
    before = (await mine.get("/v1/users/1/notifications")).json()["notifications"]
    assert [(n["kind"], n["data"]["rank"]) for n in before] == [("season_final", 1)]
    await void(api, "v2")  # 1 falls from 15 to 10: 2 (12) leads now
    [entry] = (await audit(api))["entries"]
    assert entry["details"]["final_ranks"] == [
        {"season": "2025-W49", "rank_before": 1, "rank_after": 2}]
    rows = await api.runtime.db.fetch("archive_of_users", season="2025-W49",
                                      user_ids=[1, 2, 3])
    assert sorted((r["user_id"], r["score"], r["rank"]) for r in rows) == [
        (1, 10, 2), (2, 12, 1), (3, 7, 3)]
    assert await scores(api, "2025-W49") == [(2, 12), (1, 10), (3, 7)]
    after = (await mine.get("/v1/users/1/notifications")).json()["notifications"]
    assert after == before  # the old season_final stays as it was


async def test_corrections_notify_nobody(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    await post(api.client(INGEST), [(f"n{u}", u, 10 * u, "2025-12-01T10:00:00Z")
                                    for u in range(1, 6)])
    await void(api, "n5")  # everyone moves up a place: no `overtaken`, no `top10`
    await restore(api, "n5")
    await api.runtime.notifier.consume()

    async def notes() -> list[Any]:
        return [await api.runtime.db.fetch("list_notifications", user_id=u, limit=1000)
                for u in range(1, 6)]

    before = await notes()
    await void(api, "n4")
    await restore(api, "n4")
    await api.runtime.notifier.consume()
    assert await notes() == before


async def test_suspension(serve: ApiFactory) -> None:
    api = await serve(periods=ALL, close_seasons=False)
    c, admin = api.client(INGEST), api.client(ADMIN)
    await post(c, ITEMS)
    await c.put("/v1/users/1", json={"display_name": "Mal", "visibility": "anonymous"})
    resp = await admin.post("/v1/admin/users/1/suspend", json={"reason": "bot account"})
    assert resp.json() == {"user_id": 1, "suspended": True}
    for season in BOARDS:
        assert 1 not in {u for u, _ in await scores(api, season)}
        assert None not in {u for u, _ in await scores(api, season)}  # not even anonymous
    # The platform cannot undo it; its change is kept for afterwards.
    put = await c.put("/v1/users/1", json={"visibility": "public"})
    assert put.status_code == 200 and put.json()["visibility"] == "public"
    assert 1 not in {u for u, _ in await scores(api, "2025-W49")}
    # Completions still count; the learner reads their would-be rank.
    await post(c, [("s1", 1, 100, "2025-12-02T12:00:00Z")])
    own = (await api.client(token_for(api.env, 1)).get("/v1/leaderboards/2025-W49/users/1"))
    assert own.json()["user"] == {"rank": 1, "user_id": 1, "display_name": "Mal",
                                  "score": 115, "visibility": "hidden"}
    await consistent(api, *BOARDS)
    resp = await admin.post("/v1/admin/users/1/unsuspend")
    assert resp.json() == {"user_id": 1, "suspended": False}
    assert (await scores(api, "2025-W49"))[0] == (1, 115)  # public, as last set
    entries = (await audit(api))["entries"]
    assert [(e["action"], e["target"], e["reason"]) for e in entries] == [
        ("unsuspend", "1", None), ("suspend", "1", "bot account")]
    assert_problem(await admin.post("/v1/admin/users/1/suspend", json={}), 422,
                   "validation_error")
    assert_problem(await c.post("/v1/admin/users/1/suspend", json={"reason": "x"}), 403,
                   "forbidden")
    await admin.delete("/v1/users/3")
    assert_problem(await admin.post("/v1/admin/users/3/suspend", json={"reason": "x"}), 410,
                   "user_erased")


async def test_the_why_view_pages_newest_first(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    c = api.client(INGEST)
    items = [(f"w{i}", 7, i + 1, f"2025-12-0{1 + i % 5}T{10 + i:02d}:00:00Z") for i in range(9)]
    await post(c, items)
    await void(api, "w3")
    me = api.client(token_for(api.env, 7))
    seen: list[dict[str, Any]] = []
    after = None
    while True:
        params: dict[str, Any] = {"limit": 4}
        if after:
            params["after"] = after
        resp = await me.get("/v1/leaderboards/2025-W49/users/7/completions", params=params)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["score"] == 45 - 4 and body["season"] == "2025-W49"
        seen += body["completions"]
        after = body["next"]
        if after is None:
            break
    assert [s["completed_at"] for s in seen] == sorted(
        (s["completed_at"] for s in seen), reverse=True)
    assert {s["completion_id"] for s in seen} == {cid for cid, *_ in items}
    assert [s["status"] for s in seen if s["completion_id"] == "w3"] == ["voided"]
    assert sum(s["points"] for s in seen if s["status"] == "counted") == 41
    assert (await scores(api, "2025-W49")) == [(7, 41)]
    assert_problem(await api.client(token_for(api.env, 8)).get(
        "/v1/leaderboards/2025-W49/users/7/completions"), 403, "forbidden")
    assert_problem(await me.get("/v1/leaderboards/2025-W49/users/7/completions",
                                params={"after": "bogus"}), 422, "validation_error")


async def test_the_why_view_adds_up_after_random_corrections(serve: ApiFactory) -> None:
    """A property, over seeded random runs: after any voids and restores, each
    learner's counted completions add up to their score on every board."""
    api = await serve(periods=("week", "all"), close_seasons=False)
    for run in range(8):
        rnd = random.Random(run)
        users = [10 * run + k for k in (1, 2, 3)]
        items = [(f"r{run}-{i}", users[i % 3], rnd.randint(1, 20),
                  f"2025-12-0{1 + i % 6}T{rnd.randint(0, 23):02d}:00:00Z") for i in range(8)]
        await post(api.client(INGEST), items)
        for _ in range(rnd.randint(1, 12)):
            cid = rnd.choice(items)[0]
            await (void(api, cid) if rnd.random() < 0.5 else restore(api, cid))
        board = dict(await scores(api, "2025-W49"))
        every = dict(await scores(api, "all"))
        for uid in users:
            body = (await api.client(ADMIN).get(
                f"/v1/leaderboards/2025-W49/users/{uid}/completions")).json()
            counted = sum(c["points"] for c in body["completions"]
                          if c["status"] == "counted")
            assert counted == body["score"] == board.get(uid, 0) == every.get(uid, 0), run
    await consistent(api, "2025-W49", "all")


async def test_the_audit_log_pages_and_is_append_only(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    c, admin = api.client(INGEST), api.client(ADMIN)
    await post(c, ITEMS)
    await c.put("/v1/groups/gone", json={})
    assert (await c.delete("/v1/groups/gone")).status_code == 204
    await c.put("/v1/users/2", json={"display_name": "Secret Name"})
    assert (await admin.delete("/v1/users/2")).status_code == 204
    rnd = random.Random(5)
    for i in range(5):
        await void(api, rnd.choice(["v1", "v4"]), f"reason {i}")
        await restore(api, "v1")
        await restore(api, "v4")
    everything = (await audit(api, limit=1000))["entries"]
    paged, after = [], None
    while True:
        body = await audit(api, limit=3, **({"after": after} if after else {}))
        paged += body["entries"]
        after = body["next"]
        if after is None:
            break
    assert paged == everything and len(everything) >= 7
    assert [e["id"] for e in everything] == sorted((e["id"] for e in everything), reverse=True)
    erase = [e for e in everything if e["action"] == "erase"]
    assert erase == [{"id": erase[0]["id"], "at": erase[0]["at"], "action": "erase",
                      "target": "2", "reason": None, "details": None}]
    assert "Secret" not in str(everything)
    assert [e["target"] for e in everything if e["action"] == "group_delete"] == ["gone"]
    # Append-only for the application's role: no UPDATE, DELETE or TRUNCATE.
    async with await psycopg.AsyncConnection.connect(api.runtime.database_url,
                                                     autocommit=True) as conn:
        for sql in ("UPDATE audit SET reason = 'x'", "DELETE FROM audit",
                    "TRUNCATE audit"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                await conn.execute(sql)
    assert (await audit(api, limit=1000))["entries"] == everything
