"""A caller who may not read a group cannot tell it from no group (issue
25, item 6; docs/contract.md: Groups), over HTTP in process against the
real stores: without a token both are 401, with a learner token of a
non-member both are 404 with the same detail, on the group's board (from
the full route and with its body in the fast lane's cache), its
neighbourhood and its events stream, after the same queries.
"""

from __future__ import annotations

from collections.abc import Awaitable
from contextvars import ContextVar
from typing import Any

import httpx
import pytest

from tests.api.conftest import Api, ApiFactory
from tests.api.test_group_cache import fill
from tests.api.test_groups import post_all
from tests.helpers import ADMIN, INGEST, assert_problem, token_for

MEMBER, OUTSIDER, STRANGER = 1, 5, 999  # in gm; in no group; never seen
ROUTES = ("/v1/groups/{}/leaderboards/current",
          "/v1/groups/{}/leaderboards/current/events",
          "/v1/groups/{}/leaderboards/current/users/{}")


async def groups(api: Api) -> None:
    c = api.client(INGEST)
    await post_all(c, {1: 10, 2: 20, 5: 30})
    await c.put("/v1/groups/gm", json={"name": "Class 7B"})  # members only
    await c.post("/v1/groups/gm/members", json={"add": [MEMBER, 2]})
    await c.put("/v1/groups/pub", json={"access": "public"})
    await c.post("/v1/groups/pub/members", json={"add": [MEMBER]})


def path(route: str, gid: str, uid: int) -> str:
    return route.format(gid, uid)


def same_problem(known: httpx.Response, unknown: httpx.Response) -> dict[str, Any]:
    """The two answers are one answer: status, headers that matter, body
    (the group's id, which the caller sent, aside)."""
    assert known.status_code == unknown.status_code, (known.text, unknown.text)
    for header in ("content-type", "www-authenticate", "etag"):
        assert known.headers.get(header) == unknown.headers.get(header), header
    body: dict[str, Any] = known.json()
    assert known.text.replace("gm", "nosuch") == unknown.text
    assert "Class 7B" not in known.text and "member" not in known.text
    return body


RECORDING: ContextVar[list[str] | None] = ContextVar("recording", default=None)


class Queries:
    """The named queries a request runs, in order: each statement executed
    on a connection (Database.fetch, which fetch_one calls, and run, each
    calling itself again with a connection), from the request's own
    context: the background loops' queries are not counted."""

    def __init__(self, api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
        db = api.runtime.db
        for method in ("fetch", "run"):
            real = getattr(db, method)

            async def counted(name: str, conn: Any = None, _real: Any = real,
                              **kw: Any) -> Any:
                names = RECORDING.get()
                if names is not None and conn is not None:
                    names.append(name)
                return await _real(name, conn, **kw)

            monkeypatch.setattr(db, method, counted)

    async def of(self, call: Awaitable[httpx.Response]) -> tuple[httpx.Response, list[str]]:
        names: list[str] = []
        token = RECORDING.set(names)
        try:
            return await call, names
        finally:
            RECORDING.reset(token)


@pytest.mark.parametrize("cached", [False, True])
async def test_a_members_group_is_no_group_to_whoever_may_not_read_it(
        serve: ApiFactory, monkeypatch: pytest.MonkeyPatch, cached: bool) -> None:
    api = await serve()
    await groups(api)
    if cached:  # gm's first page is in the fast lane's cache, filled by a member
        await fill(api, "gm", token=token_for(api.env, MEMBER))
    queries = Queries(api, monkeypatch)
    no_token = api.client()
    callers = {
        "no token": (no_token, 401, "unauthorized"),
        "garbage token": (api.client("not-a-token"), 401, "unauthorized"),
        "expired token": (api.client(token_for(api.env, OUTSIDER, -60)), 401,
                          "unauthorized"),
        "outsider": (api.client(token_for(api.env, OUTSIDER)), 404, "not_found"),
        "stranger": (api.client(token_for(api.env, STRANGER)), 404, "not_found"),
    }
    for who, (client, status, code) in callers.items():
        uid = STRANGER if who == "stranger" else OUTSIDER
        for route in ROUTES:
            known, ran = await queries.of(client.get(path(route, "gm", uid)))
            unknown, ran_unknown = await queries.of(client.get(path(route, "nosuch", uid)))
            assert_problem(known, status, code)
            body = same_problem(known, unknown)
            assert ran == ran_unknown, (who, route)  # the same round trips
            if status == 401:
                assert ran == [] or ran == ["group_read_access"], (who, route)
            else:
                assert body["detail"] == "no group gm", (who, route)
                assert ran == ["group_read_access"], (who, route)
    # A member reads it, and the fast lane still serves the cached body.
    member = api.client(token_for(api.env, MEMBER))
    board = await member.get(path(ROUTES[0], "gm", MEMBER))
    assert board.status_code == 200 and [e["user_id"] for e in board.json()["entries"]] == [
        2, 1]
    around = await member.get(path(ROUTES[2], "gm", MEMBER))
    assert around.status_code == 200 and around.json()["user"]["rank"] == 2


async def test_those_who_may_read_every_group_are_told_it_does_not_exist(
        serve: ApiFactory) -> None:
    api = await serve()
    await groups(api)
    for token in (INGEST, ADMIN):
        client = api.client(token)
        for route in ROUTES[:2]:
            gone = assert_problem(await client.get(path(route, "nosuch", 0)), 404, "not_found")
            assert gone["detail"] == "no group nosuch"
        assert (await client.get(path(ROUTES[0], "gm", 0))).status_code == 200
    admin = api.client(ADMIN)
    gone = assert_problem(await admin.get(path(ROUTES[2], "nosuch", OUTSIDER)), 404,
                          "not_found")
    assert gone["detail"] == "no group nosuch"
    around = await admin.get(path(ROUTES[2], "gm", MEMBER))
    assert around.status_code == 200 and around.json()["user"]["user_id"] == MEMBER
    # The neighbourhood is the learner's own (or the admin's), as on the whole board.
    assert_problem(await api.client(INGEST).get(path(ROUTES[2], "gm", MEMBER)), 403,
                   "forbidden")
    assert_problem(await api.client(token_for(api.env, 2)).get(
        path(ROUTES[2], "gm", MEMBER)), 403, "forbidden")


async def test_a_public_group_is_read_by_anyone(serve: ApiFactory) -> None:
    api = await serve()
    await groups(api)
    for client in (api.client(), api.client("not-a-token"),
                   api.client(token_for(api.env, OUTSIDER))):
        resp = await client.get(path(ROUTES[0], "pub", 0))
        assert resp.status_code == 200, resp.text
        assert [e["user_id"] for e in resp.json()["entries"]] == [MEMBER]
    # Its existence is no secret: a learner not in it is told so.
    outsider = api.client(token_for(api.env, OUTSIDER))
    resp = await outsider.get(path(ROUTES[2], "pub", OUTSIDER))
    assert assert_problem(resp, 404, "not_found")["detail"] == (
        f"learner {OUTSIDER} is not in group pub")
    # Turned members-only, it is no group to them any more.
    await api.client(INGEST).put("/v1/groups/pub", json={"access": "members"})
    for route in ROUTES:
        known = await outsider.get(path(route, "pub", OUTSIDER))
        unknown = await outsider.get(path(route, "nosuch", OUTSIDER))
        assert_problem(known, 404, "not_found")
        assert known.text.replace("pub", "nosuch") == unknown.text
    assert_problem(await api.get(path(ROUTES[0], "pub", 0)), 401, "unauthorized")
