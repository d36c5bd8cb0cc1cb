"""Tags on completions (CONTRACT.md, "Boards of a course, a track or a
skill"): part of the idempotent payload, in any order; malformed tags are a
`422` (single post) or a rejected item (batch), and nothing is recorded."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import ApiFactory
from tests.helpers import INGEST, assert_problem, completion

pytestmark = pytest.mark.once


def tagged(cid: str, user: int, points: int, *tags: Any) -> dict[str, Any]:
    return {**completion(cid, user, points), "tags": list(tags)}


async def stored_tags(server: Any, cid: str) -> list[str] | None:
    rows = await server.runtime.db.fetch("find_completions", completion_ids=[cid])
    assert len(rows) == 1
    tags: list[str] | None = rows[0]["tags"]
    return tags


async def test_tags_are_part_of_the_payload(serve: ApiFactory) -> None:
    server = await serve()
    c = server.client(INGEST)
    first = await c.post("/v1/completions",
                         json=tagged("t1", 7, 5, "track:data", "course:python-101"))
    assert first.status_code == 201, first.text
    assert await stored_tags(server, "t1") == ["course:python-101", "track:data"]
    # their order does not matter: the same payload is a duplicate
    again = await c.post("/v1/completions",
                         json=tagged("t1", 7, 5, "course:python-101", "track:data"))
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    # other tags, fewer tags, or none: another payload
    for tags in (["course:python-101"], ["course:python-101", "track:ml"], []):
        assert_problem(await c.post("/v1/completions", json=tagged("t1", 7, 5, *tags)), 409,
                       "completion_conflict")
    assert_problem(await c.post("/v1/completions", json=completion("t1", 7, 5)), 409,
                   "completion_conflict")
    # no tags and an empty list are the same payload
    assert (await c.post("/v1/completions", json=completion("t2", 7, 1))).status_code == 201
    assert await stored_tags(server, "t2") is None
    dup = await c.post("/v1/completions", json=tagged("t2", 7, 1))
    assert dup.status_code == 200 and dup.json()["status"] == "duplicate"
    assert_problem(await c.post("/v1/completions", json=tagged("t2", 7, 1, "skill:sql")), 409,
                   "completion_conflict")
    # the batch compares the same way, within a batch too
    resp = await c.post("/v1/completions/batch", json={"completions": [
        tagged("t1", 7, 5, "track:data", "course:python-101"),
        tagged("t3", 8, 2, "skill:sql"), tagged("t3", 8, 2, "skill:sql"),
        tagged("t3", 8, 2, "skill:sql-2")]})
    assert [r["status"] for r in resp.json()["results"]] == [
        "duplicate", "recorded", "duplicate", "rejected"]
    assert resp.json()["results"][3]["error"]["code"] == "completion_conflict"


BAD_TAGS: list[Any] = [
    "course:python-101",  # not a list
    ["course"], ["course:"], [":x"], ["Course:x"], ["1course:x"], ["course:a b"],
    ["course:a,b"], ["course:x\n"], ["c" * 33 + ":x"], ["course:" + "x" * 65],
    ["course:x", "course:x"], [f"course:{i}" for i in range(17)], [1], [None],
    [["course:x"]], {"course": "x"}, 0, "",
]


@pytest.mark.parametrize("tags", BAD_TAGS)
async def test_malformed_tags_record_nothing(serve: ApiFactory, tags: Any) -> None:
    server = await serve()
    c = server.client(INGEST)
    body = {**completion("bad", 9, 3), "tags": tags}
    resp = await c.post("/v1/completions", json=body)
    assert_problem(resp, 422, "validation_error")
    assert "tags" in resp.json()["detail"]
    batch = await c.post("/v1/completions/batch", json={"completions": [body]})
    assert batch.status_code == 200
    assert batch.json()["results"][0]["error"]["code"] == "validation_error"
    assert await server.runtime.db.fetch("find_completions", completion_ids=["bad"]) == []


async def test_the_longest_tags_are_kept(serve: ApiFactory) -> None:
    server = await serve()
    tags = sorted(f"{'k' * 31}{i % 10}:{'v' * 63}{chr(65 + i)}" for i in range(16))
    resp = await server.client(INGEST).post("/v1/completions",
                                            json=tagged("long", 3, 1, *reversed(tags)))
    assert resp.status_code == 201, resp.text
    assert await stored_tags(server, "long") == tags
