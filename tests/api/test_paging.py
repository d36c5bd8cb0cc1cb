"""Cursor paging of the whole board (docs/contract.md, Reads: `after`,
`next`): positions, not offsets; an entry whose score does not change during
a scan appears exactly once, whatever else scores meanwhile."""

from __future__ import annotations

import base64
import random
from typing import Any

import pytest

from laurels.core.ranking import Standing, rank_all
from laurels.core.seasons import parse_season
from tests.api.conftest import Api, ApiFactory
from tests.helpers import INGEST, assert_problem, completion


async def scan(api: Api, path: str, limit: int, between: Any = None
               ) -> tuple[list[tuple[int, int | None, int]], int]:
    """Every entry of a board, page by page; `await between(page, seen)` runs
    between pages."""
    seen: list[tuple[int, int | None, int]] = []
    params: dict[str, Any] = {"limit": limit}
    pages = 0
    while True:
        resp = await api.get(path, params=params)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        seen += [(e["rank"], e["user_id"], e["score"]) for e in body["entries"]]
        pages += 1
        if body["next"] is None:
            return seen, pages
        if between is not None:
            await between(pages, seen)
        params = {"limit": limit, "after": body["next"]}


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_paging_the_whole_board_under_writes(serve: ApiFactory, policy: str) -> None:
    api = await serve(tie_policy=policy, close_seasons=False)
    c = api.client(INGEST)
    rnd = random.Random(11)
    scores = {uid: rnd.randint(1, 6) for uid in range(1, 81)}
    for uid in rnd.sample(sorted(scores), 8):
        await c.put(f"/v1/users/{uid}", json={"visibility": "hidden"})
    items = [completion(f"a{u}", u, p, f"2026-11-03T{u % 24:02d}:00:00Z")
             for u, p in scores.items()]
    resp = await c.post("/v1/completions/batch", json={"completions": items})
    assert all(r["status"] == "recorded" for r in resp.json()["results"])
    path = "/v1/leaderboards/2026-W45"
    quiet, pages = await scan(api, path, 1000)
    assert pages == 1 and len(quiet) == 72  # hidden learners take no place
    first = (await api.get(path, params={"limit": 10})).json()
    assert first["period"] == "week" and first["next"] is not None
    assert len(first["entries"]) == 10
    # Quiet, pages of 7 are the whole board cut in pieces: same order, same ranks.
    assert (await scan(api, path, 7))[0] == quiet
    # Pages of 9 while, between pages, a learner not reached yet gains points
    # and a newcomer arrives: every other learner appears exactly once, in order.
    changed: set[int | None] = set()

    async def write(page: int, seen: list[tuple[int, int | None, int]]) -> None:
        done = {u for _, u, _ in seen}
        ahead = [u for _, u, _ in quiet if u not in done and u not in changed]
        extra = [completion(f"n{page}", 500 + page, 1, "2026-11-03T12:00:00Z")]
        if ahead:
            changed.add(ahead[-1])
            extra.append(completion(f"b{page}", ahead[-1], 3, "2026-11-04T12:00:00Z"))
        resp = await c.post("/v1/completions/batch", json={"completions": extra})
        assert resp.status_code == 200

    paged, _ = await scan(api, path, 9, write)
    steady = [u for _, u, _ in quiet if u not in changed]
    assert changed and [u for _, u, _ in paged if u in set(steady)] == steady


def tampered(cursor: str) -> str:
    """The cursor with one bit of its sealed bytes flipped (replacing its
    last characters could leave the bytes as they were: base64 padding bits)."""
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    raw[len(raw) // 2] ^= 1
    return base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")


async def test_cursor_errors(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    c = api.client(INGEST)
    await c.post("/v1/completions/batch", json={"completions": [
        completion(f"e{u}", u, u, "2026-11-03T10:00:00Z") for u in range(1, 6)]})
    page = (await api.get("/v1/leaderboards/2026-W45", params={"limit": 2})).json()
    other = (await api.get("/v1/leaderboards/2026-W45", params={"limit": 4})).json()
    assert page["next"] and other["next"]
    for bad in ("x", "", "e30", tampered(page["next"])):
        assert_problem(await api.get("/v1/leaderboards/2026-W45",
                                     params={"after": bad}), 422, "validation_error")
    # A cursor of another season is refused.
    await c.post("/v1/completions", json=completion("w46", 1, 1, "2026-11-10T10:00:00Z"))
    assert_problem(await api.get("/v1/leaderboards/2026-W46", params={"after": page["next"]}),
                   422, "validation_error")
    rest = (await api.get("/v1/leaderboards/2026-W45",
                          params={"limit": 10, "after": page["next"]})).json()
    assert [(e["rank"], e["user_id"]) for e in rest["entries"]] == [(3, 3), (4, 2), (5, 1)]
    assert rest["next"] is None


async def test_paging_an_archived_season(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    c = api.client(INGEST)
    scores = {u: 1 + u % 4 for u in range(1, 26)}
    await c.post("/v1/completions/batch", json={"completions": [
        completion(f"z{u}", u, p, "2026-11-03T10:00:00Z") for u, p in scores.items()]})
    w45 = parse_season("2026-W45", zone=api.runtime.settings.time_zone)
    assert await api.runtime.lifecycle.finalize(w45)
    sk = api.runtime.keys.season("2026-W45")
    for version in await api.runtime.redis.smembers(sk.versions):
        await api.runtime.board.drop_version(w45, str(version))
    await api.runtime.redis.delete(sk.current)
    api.runtime.board.forget(w45)
    got, pages = await scan(api, "/v1/leaderboards/2026-W45", 4)
    want = [(r, s.user_id, s.score) for r, s in rank_all(
        [Standing(u, p) for u, p in scores.items()], "shared")]
    assert got == want and pages == 7


async def test_a_pages_etag_changes_only_with_the_page(serve: ApiFactory) -> None:
    """Two processes on one deployment (each with its own page cache, as
    after a refill) answer the same page, `next` cursor included, with the
    same body and ETag; a matching `If-None-Match` gets 304 from either.
    A random nonce in the cursor once made a new ETag at every refill."""
    one = await serve(close_seasons=False)
    two = await serve(close_seasons=False)
    c = one.client(INGEST)
    items = [completion(f"e{u}", u, u, "2026-11-03T10:00:00Z") for u in range(1, 8)]
    assert (await c.post("/v1/completions/batch", json={"completions": items})).status_code == 200
    path = "/v1/leaderboards/2026-W45"
    first = await one.get(path, params={"limit": 3})
    again = await two.get(path, params={"limit": 3})
    assert first.json()["next"] == again.json()["next"] is not None
    assert first.headers["etag"] == again.headers["etag"]
    later = {"limit": 3, "after": first.json()["next"]}
    page2 = await one.get(path, params=later)
    page2_again = await two.get(path, params=later)
    assert page2.json()["entries"] and page2.headers["etag"] == page2_again.headers["etag"]
    for api, resp in ((two, first), (one, page2)):
        params = {"limit": 3} if resp is first else later
        cached = await api.get(path, params=params,
                               headers={"If-None-Match": resp.headers["etag"]})
        assert cached.status_code == 304
