"""A learner's completions voided and restored in one call (issue 44;
CONTRACT.md, Admin: `POST /v1/admin/users/{id}/void` and `/restore`): each
as its own void would be (every board, the archive, webhooks), one audit
entry with the count, all or none."""

from __future__ import annotations

from typing import Any

import pytest

from laurels.ingest.corrections import Corrections
from tests.api.conftest import Api, ApiFactory
from tests.api.test_periods import ALL, post, scores
from tests.helpers import ADMIN, INGEST, assert_problem, completion

# Learner 1 cheated all week 2025-W49 (three completions, two days), and
# once the week before; 2 and 3 did not.
ITEMS = [("a1", 1, 10, "2025-12-01T10:00:00Z"), ("a2", 1, 20, "2025-12-02T10:00:00Z"),
         ("a3", 1, 30, "2025-12-02T11:00:00Z"), ("b1", 2, 12, "2025-12-01T11:00:00Z"),
         ("c1", 3, 7, "2025-12-03T09:00:00Z"), ("old", 1, 4, "2025-11-26T09:00:00Z")]


async def bulk(api: Api, uid: int, action: str, body: Any = None, status: int = 200) -> Any:
    kw = {} if body is None else {"json": body}
    resp = await api.client(ADMIN).post(f"/v1/admin/users/{uid}/{action}", **kw)
    assert resp.status_code == status, resp.text
    return resp.json()


async def rows(api: Api, sql: str) -> list[tuple[Any, ...]]:
    async with api.runtime.db.connection() as conn:
        cur = await conn.execute(sql)  # type: ignore[arg-type]
        return [tuple(r.values()) for r in await cur.fetchall()]


async def test_a_cheaters_week_is_voided_and_restored_in_one_call(serve: ApiFactory) -> None:
    api = await serve(periods=ALL, close_seasons=False, webhook_url="http://127.0.0.1:9/hooks")
    await post(api.client(INGEST), ITEMS)
    assert await scores(api, "2025-W49") == [(1, 60), (2, 12), (3, 7)]
    done = await bulk(api, 1, "void", {"reason": "a week of copied answers",
                                       "season": "2025-W49"})
    assert done == {"user_id": 1, "voided": 3}
    # Every board of the week's completions: the week, its days, the month, all time.
    assert await scores(api, "2025-W49") == [(2, 12), (3, 7)]
    assert await scores(api, "2025-12-02") == []
    assert await scores(api, "2025-12") == [(2, 12), (3, 7)]
    assert await scores(api, "all") == [(2, 12), (3, 7), (1, 4)]  # the week before stays
    assert await scores(api, "2025-W48") == [(1, 4)]
    for season in ("2025-W49", "2025-12-01", "2025-12-02", "2025-12", "all"):
        verdict = (await api.client(ADMIN).get(
            f"/v1/admin/leaderboards/{season}/verify")).json()
        assert verdict["consistent"], (season, verdict)
    # One audit entry with the count; a completion.voided webhook each.
    audit = (await api.client(ADMIN).get("/v1/admin/audit")).json()["entries"]
    assert [(e["action"], e["target"], e["reason"], e["details"]["count"])
            for e in audit] == [("void", "1", "a week of copied answers", 3)]
    assert await rows(api, "SELECT count(*) FROM webhook_deliveries"
                           " WHERE type = 'completion.voided' AND user_id = 1") == [(3,)]
    # Again: nothing left to void, nothing written.
    assert await bulk(api, 1, "void", {"reason": "again", "season": "2025-W49"}) == {
        "user_id": 1, "voided": 0}
    assert len((await api.client(ADMIN).get("/v1/admin/audit")).json()["entries"]) == 1
    # Restored in one call (no body: every voided one), then all of them voided.
    assert await bulk(api, 1, "restore") == {"user_id": 1, "restored": 3}
    assert await scores(api, "2025-W49") == [(1, 60), (2, 12), (3, 7)]
    assert await bulk(api, 1, "void", {"reason": "banned"}) == {"user_id": 1, "voided": 4}
    assert await scores(api, "all") == [(2, 12), (3, 7)]
    assert await bulk(api, 1, "restore", {"season": "current"}) == {"user_id": 1,
                                                                    "restored": 0}


async def test_bad_bulk_corrections_change_nothing(serve: ApiFactory,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    api = await serve(periods=ALL, close_seasons=False)
    await post(api.client(INGEST), ITEMS)
    for body, status, code in (({}, 422, "validation_error"),
                               ({"reason": ""}, 422, "validation_error"),
                               ({"reason": "x", "season": "2025-W99"}, 422, "validation_error"),
                               ({"reason": "x", "season": 49}, 422, "validation_error"),
                               ("nope", 422, "validation_error")):
        assert_problem(await api.client(ADMIN).post("/v1/admin/users/1/void", json=body),
                       status, code)
    for token, status in ((None, 401), (INGEST, 403)):
        assert_problem(await api.client(token).post("/v1/admin/users/1/void",
                                                    json={"reason": "x"}), status,
                       "unauthorized" if status == 401 else "forbidden")
    assert_problem(await api.client(ADMIN).post("/v1/admin/users/0/void",
                                                json={"reason": "x"}), 422, "validation_error")

    # All or none: a failure after the completions are written leaves them counted.
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the archives' step fails")

    monkeypatch.setattr(Corrections, "_correct_archives", broken)
    with pytest.raises(RuntimeError, match="archives"):
        await api.runtime.corrections.correct_learner(1, True, "x", None)
    monkeypatch.undo()
    assert await rows(api, "SELECT count(*) FROM completions WHERE voided_at IS NOT NULL"
                      ) == [(0,)]
    assert await rows(api, "SELECT count(*) FROM audit") == [(0,)]
    assert await scores(api, "2025-W49") == [(1, 60), (2, 12), (3, 7)]
    # An erased learner's completions are gone: 410.
    assert (await api.client(ADMIN).delete("/v1/users/1")).status_code in (200, 202, 204)
    assert_problem(await api.client(ADMIN).post("/v1/admin/users/1/void",
                                                json={"reason": "x"}), 410, "user_erased")


async def test_a_board_of_a_kind_is_corrected_in_its_own_week(serve: ApiFactory) -> None:
    """Issue 65, point 6: "void all of this week" took the whole board's week
    (and ignored `board`): a Tokyo course's week runs Sunday 15:00 to Sunday
    15:00 UTC, and the completions of its last nine hours kept counting.
    With `board`, the season is that board's, in its zone, and only the
    completions on that board change."""
    api = await serve(close_seasons=False)
    admin = api.client(ADMIN)
    assert (await admin.put("/v1/admin/board-kinds/course", json={
        "time_zone": "Asia/Tokyo"})).status_code == 201
    tokyo = [  # learner 1 on course:sql: Tokyo's 2025-W49 runs 2025-11-30T15:00Z to 12-07T15:00Z
        ("t1", 1, 10, "2025-11-30T16:00:00Z"),  # Tokyo W49, UTC W48
        ("t2", 1, 20, "2025-12-07T14:00:00Z"),  # Tokyo W49's last hour, UTC W49
        ("t3", 1, 40, "2025-12-07T16:00:00Z"),  # Tokyo W50, UTC W49
        ("t4", 2, 5, "2025-12-02T10:00:00Z")]
    resp = await api.client(INGEST).post("/v1/completions/batch", json={"completions": [
        {**completion(cid, uid, pts, at), "tags": ["course:sql"]} for cid, uid, pts, at in tokyo]
        + [completion("g1", 1, 7, "2025-12-03T10:00:00Z")]})  # the whole board only
    assert {r["status"] for r in resp.json()["results"]} == {"recorded"}, resp.text
    done = await bulk(api, 1, "void", {"reason": "copied", "season": "2025-W49",
                                       "board": "course:sql"})
    assert done == {"user_id": 1, "voided": 2}  # t1 and t2: Tokyo's week, the course's
    left = await rows(api, "SELECT k.completion_id FROM completions c JOIN completion_ids k"
                           " USING (seq) WHERE c.user_id = 1 AND c.voided_at IS NULL"
                           " ORDER BY 1")
    assert left == [("g1",), ("t3",)]
    board = (await api.get("/v1/leaderboards/2025-W49", params={"board": "course:sql"})).json()
    assert [(e["user_id"], e["score"]) for e in board["entries"]] == [(2, 5)]
    audit = (await admin.get("/v1/admin/audit")).json()["entries"][0]
    assert (audit["details"]["board"], audit["details"]["count"]) == ("course:sql", 2)
    # Restored on that board alone, with no season: every voided one there.
    assert await bulk(api, 1, "restore", {"board": "course:sql"}) == {"user_id": 1,
                                                                      "restored": 2}
    for body, status, code in (({"reason": "x", "board": "track:sql"}, 404, "not_found"),
                               ({"reason": "x", "board": "Course:sql"}, 422,
                                "validation_error"),
                               ({"reason": "x", "board": "course:sql", "season": "2025-12"},
                                404, "not_found")):
        assert_problem(await admin.post("/v1/admin/users/1/void", json=body), status, code)
