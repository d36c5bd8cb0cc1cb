"""GET /v1/admin/board-kinds/{kind}/boards (issue 65, point 12: the console
lists a kind's boards): those with a counted completion in a season of the
kind, in its zone, by name, searched, paged; a voided completion's board
is gone; an unknown kind 404, a malformed one 422."""

from __future__ import annotations

from tests.api.conftest import ApiFactory
from tests.helpers import ADMIN, INGEST, assert_problem, completion


async def test_a_kinds_boards_are_listed_searched_and_paged(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    admin = api.client(ADMIN)
    assert (await admin.put("/v1/admin/board-kinds/course", json={
        "time_zone": "Asia/Tokyo"})).status_code == 201
    items = [(f"c{n}", n, f"course:{name}", at) for n, (name, at) in enumerate([
        ("python-101", "2025-12-02T10:00:00Z"), ("python-101", "2025-12-03T10:00:00Z"),
        ("python-201", "2025-12-02T10:00:00Z"), ("sql", "2025-12-02T10:00:00Z"),
        ("late", "2025-12-07T16:00:00Z")], start=1)]  # Tokyo's next week
    resp = await api.client(INGEST).post("/v1/completions/batch", json={"completions": [
        {**completion(cid, uid, 3, at), "tags": [tag]} for cid, uid, tag, at in items]})
    assert {r["status"] for r in resp.json()["results"]} == {"recorded"}

    async def boards(**params: str) -> dict[str, object]:
        got = await admin.get("/v1/admin/board-kinds/course/boards",
                              params={"season": "2025-W49", **params})
        assert got.status_code == 200, got.text
        return dict(got.json())

    every = await boards()
    assert every["season"] == "2025-W49" and every["next"] is None
    assert every["boards"] == [{"board": "course:python-101", "learners": 2},
                               {"board": "course:python-201", "learners": 1},
                               {"board": "course:sql", "learners": 1}]
    first = await boards(limit="2")
    assert [b["board"] for b in first["boards"]] == [  # type: ignore[attr-defined]
        "course:python-101", "course:python-201"] and first["next"] == "course:python-201"
    rest = await boards(limit="2", after="course:python-201")
    assert [b["board"] for b in rest["boards"]] == ["course:sql"]  # type: ignore[attr-defined]
    assert [b["board"] for b in (await boards(search="SQL"))["boards"]  # type: ignore[attr-defined]
            ] == ["course:sql"]
    assert (await admin.post("/v1/admin/completions/c4/void", json={"reason": "x"})
            ).status_code == 200
    assert "course:sql" not in str(await boards())
    assert_problem(await admin.get("/v1/admin/board-kinds/track/boards"), 404, "not_found")
    assert_problem(await admin.get("/v1/admin/board-kinds/Course/boards"), 422,
                   "validation_error")
    assert_problem(await admin.get("/v1/admin/board-kinds/course/boards",
                                   params={"season": "2025-12"}), 404, "not_found")
    assert_problem(await api.client(INGEST).get("/v1/admin/board-kinds/course/boards"), 403,
                   "forbidden")
