"""Issue 65, point 8: defining and deleting kinds wrote no audit entry; a
rebuild's entry named the season but not the board; erasing an erased
learner wrote a second entry (and a second `user.erased` webhook)."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api, ApiFactory
from tests.api.test_learner_corrections import rows
from tests.helpers import ADMIN, INGEST, completion, eventually


async def entries(api: Api) -> list[tuple[Any, ...]]:
    body = (await api.client(ADMIN).get("/v1/admin/audit")).json()
    return [(e["action"], e["target"], e["details"]) for e in body["entries"]]


async def test_kinds_are_audited_when_they_change(serve: ApiFactory) -> None:
    api = await serve()
    admin = api.client(ADMIN)
    assert (await admin.put("/v1/admin/board-kinds/course", json={
        "metric": "best", "time_zone": "Asia/Tokyo"})).status_code == 201
    defined = {"title": "Course", "metric": "best", "periods": ["week"],
               "time_zone": "Asia/Tokyo", "notify": False}
    assert await entries(api) == [("kind_define", "course", defined)]
    assert (await admin.put("/v1/admin/board-kinds/course", json={})).status_code == 200
    assert len(await entries(api)) == 1  # defined again the same way: no change, no entry
    assert (await admin.put("/v1/admin/board-kinds/course", json={
        "title": "Courses"})).status_code == 200
    assert (await entries(api))[0] == ("kind_define", "course", {**defined, "title": "Courses"})
    assert (await admin.delete("/v1/admin/board-kinds/course")).status_code == 204
    assert (await entries(api))[0] == ("kind_delete", "course", {**defined, "title": "Courses"})
    assert (await admin.delete("/v1/admin/board-kinds/course")).status_code == 204  # again
    assert [a for a, _, _ in await entries(api)] == ["kind_delete", "kind_define",
                                                     "kind_define"]


async def test_a_rebuild_names_its_board(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    admin = api.client(ADMIN)
    assert (await admin.put("/v1/admin/board-kinds/course", json={})).status_code == 201
    resp = await api.client(INGEST).post("/v1/completions", json={
        **completion("r1", 4, 3, "2025-12-02T10:00:00Z"), "tags": ["course:sql"]})
    assert resp.status_code == 201, resp.text
    for params in ({"board": "course:sql"}, {}):
        started = await admin.post("/v1/admin/leaderboards/2025-W49/rebuild", params=params)
        assert started.status_code == 202, started.text

        async def done(rebuild_id: str = started.json()["rebuild_id"]) -> bool:
            got = await admin.get(f"/v1/admin/rebuilds/{rebuild_id}")
            return bool(got.json()["status"] == "succeeded")

        await eventually(done, 20, "the rebuild to switch")
    rebuilt = [(t, d["board"]) for a, t, d in await entries(api) if a == "rebuild"]
    assert rebuilt == [("2025-W49", "global"), ("2025-W49 of course:sql", "course:sql")]


async def test_erasing_an_erased_learner_writes_nothing_twice(serve: ApiFactory) -> None:
    api = await serve(webhook_url="http://127.0.0.1:9/hooks")
    admin = api.client(ADMIN)
    assert (await api.client(INGEST).put("/v1/users/5", json={
        "display_name": "Ada"})).status_code == 200
    for _ in range(2):
        assert (await admin.delete("/v1/users/5")).status_code == 204
    assert [(a, t) for a, t, _ in await entries(api)] == [("erase", "5")]
    assert await rows(api, "SELECT count(*) FROM webhook_deliveries"
                           " WHERE type = 'user.erased'") == [(1,)]
