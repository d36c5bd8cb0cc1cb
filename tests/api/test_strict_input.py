"""Strict input over HTTP, in process (docs/contract.md, Errors; PUT /v1/users):
a malformed id in a path, a spoofing display name, a JSON body with a
duplicate key, a malformed query number or cursor: each is 422
`validation_error`, changes nothing, and logs no traceback."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.api.conftest import BASE_URL, Api, ApiFactory
from tests.helpers import ADMIN, INGEST, assert_problem, completion, token_for

pytestmark = pytest.mark.once

UUID = "12345678-1234-5678-1234-567812345678"
BAD_UUIDS = [f"urn:uuid:{UUID}", f"{{{UUID}}}", UUID.replace("-", ""), f"{UUID}%20",
             UUID[:-1] + "%EF%BC%98",  # a fullwidth 8, which uuid.UUID reads as 8
             UUID[:-1] + "g", "not-a-uuid", "0"]
# What int() (or FastAPI's int) would take but the contract's user_id is not.
BAD_USER_IDS = ["%2B5", "%205", "5%20", "5_000", quote("\u0665"), quote("\uff15"), "0x5", "05",
                "0", "-5", "5.0", "1e3", str(2**63), "99999999999999999999", "5%0A",
                quote("5\u200b")]
AT = "2026-11-30T10:00:00Z"


@pytest.fixture
def no_traceback(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Nothing in this test is an internal error: no record with a traceback."""
    with caplog.at_level(logging.WARNING):
        yield
    bad = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not bad, [r.getMessage() for r in bad]


async def count(api: Api, sql: str) -> int:
    async with api.runtime.db.connection() as conn:
        row = await (await conn.execute(sql)).fetchone()  # a dict (dict_row)
    assert row is not None
    return int(row["count"])


async def stored(api: Api) -> tuple[int, int, int]:
    return (await count(api, "SELECT count(*) FROM users"),
            await count(api, "SELECT count(*) FROM completions"),
            await count(api, "SELECT count(*) FROM audit"))


def fastapi_only(api: Api, token: str) -> httpx.AsyncClient:
    """A client of the FastAPI app behind the fast lane (its documented
    routes, which the lane otherwise answers first)."""
    lane: Any = api.transport.app
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=lane.app), base_url=BASE_URL,
                               headers={"Authorization": f"Bearer {token}"}, timeout=30)
    api.clients.append(client)
    return client


# -- ids in a path --------------------------------------------------------------------------

@pytest.mark.usefixtures("no_traceback")
async def test_malformed_uuids_are_422(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    admin = api.client(ADMIN)
    delivery = str(uuid.uuid4())
    async with api.runtime.db.connection() as conn:
        await conn.execute(
            "INSERT INTO webhook_deliveries (id, type, body, status, attempts) "
            "VALUES (%s, 'user.erased', '{}', 'failed', 3)", (delivery,))
    for bad in [*BAD_UUIDS, f"urn:uuid:{delivery}", f"{{{delivery}}}",
                delivery.replace("-", "")]:
        body = assert_problem(await admin.post(f"/v1/admin/webhooks/deliveries/{bad}/retry"),
                              422, "validation_error")
        assert "delivery_id" in body["detail"] and "8-4-4-4-12" in body["detail"], body
        body = assert_problem(await admin.get(f"/v1/admin/rebuilds/{bad}"), 422,
                              "validation_error")
        assert "rebuild_id" in body["detail"], body
    # Nothing was retried.
    assert await count(api, "SELECT count(*) FROM webhook_deliveries WHERE status = 'failed'") == 1
    # The canonical form, in either case, is the id.
    assert_problem(await admin.post(f"/v1/admin/webhooks/deliveries/{UUID}/retry"), 404,
                   "not_found")
    resp = await admin.post(f"/v1/admin/webhooks/deliveries/{delivery.upper()}/retry")
    assert resp.status_code == 202 and resp.json() == {"id": delivery, "status": "pending"}
    assert await count(api, "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'") == 1
    assert_problem(await admin.get(f"/v1/admin/rebuilds/{UUID}"), 404, "not_found")
    started = await admin.post("/v1/admin/leaderboards/2026-W49/rebuild")
    assert started.status_code == 202
    rebuild_id = started.json()["rebuild_id"]
    for form in (rebuild_id, rebuild_id.upper()):
        status = await admin.get(f"/v1/admin/rebuilds/{form}")
        assert status.status_code == 200 and status.json()["rebuild_id"] == rebuild_id
    # An unauthenticated caller learns nothing, malformed or not.
    assert_problem(await api.client().get(f"/v1/admin/rebuilds/urn:uuid:{UUID}"), 401,
                   "unauthorized")


@pytest.mark.usefixtures("no_traceback")
async def test_malformed_user_ids_are_422_on_every_route(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False, league_tiers=("bronze", "silver"))
    ingest, admin = api.client(INGEST), api.client(ADMIN)
    assert (await ingest.post("/v1/completions", json=completion("c1", 5, 3, AT))).status_code \
        == 201
    before = await stored(api)
    for bad in BAD_USER_IDS:
        calls = [
            ingest.put(f"/v1/users/{bad}", json={"display_name": "Mallory"}),
            admin.delete(f"/v1/users/{bad}"),
            admin.get(f"/v1/leaderboards/2026-W49/users/{bad}"),  # the fast lane
            admin.get(f"/v1/leaderboards/2026-W49/users/{bad}/completions"),
            admin.get(f"/v1/users/{bad}/notifications"),
            admin.post(f"/v1/users/{bad}/notifications/read", json={"ids": []}),
            admin.get(f"/v1/users/{bad}/notifications/events"),
            admin.get(f"/v1/users/{bad}/groups"),
            admin.get(f"/v1/users/{bad}/league"),
            admin.get(f"/v1/users/{bad}/league/history"),
            admin.get(f"/v1/groups/g1/leaderboards/2026-W49/users/{bad}"),
            admin.post(f"/v1/admin/users/{bad}/suspend", json={"reason": "spam"}),
            admin.post(f"/v1/admin/users/{bad}/unsuspend"),
            fastapi_only(api, ADMIN).get(f"/v1/leaderboards/2026-W49/users/{bad}"),
        ]
        for call in calls:
            resp = await call
            body = assert_problem(resp, 422, "validation_error")
            assert "user_id" in body["detail"], (bad, resp.request.url, body)
    assert await stored(api) == before
    # 5 itself is still 5.
    resp = await api.client(token_for(api.env, 5)).get("/v1/leaderboards/2026-W49/users/5")
    assert resp.status_code == 200 and resp.json()["user"]["score"] == 3


@pytest.mark.usefixtures("no_traceback")
async def test_malformed_completion_ids_and_seasons_are_422(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    ingest, admin = api.client(INGEST), api.client(ADMIN)
    assert (await ingest.post("/v1/completions", json=completion("c1", 5, 3, AT))).status_code \
        == 201
    before = await stored(api)
    for bad in ["a%20b", "x" * 129, quote("\u00e9"), "a%00", "a+b", quote("\uff41"),
                quote("c1\u200b"), "c1%0A"]:
        for action in ("void", "restore"):
            body = assert_problem(await admin.post(f"/v1/admin/completions/{bad}/{action}",
                                                   json={"reason": "cheat"}),
                                  422, "validation_error")
            assert "completion_id" in body["detail"]
    for bad in ["2026-W5", "2026-w49", "%EF%BC%92026-W49", "2026-W49%20", "2026-W00", "2026-W54",
                "2026-13", "0000-01", "2026-02-30", "%2B2026-W49", "Current"]:
        for call in (api.client().get(f"/v1/leaderboards/{bad}"),
                     api.client().get(f"/v1/leaderboards/{bad}?after=abc"),
                     admin.get(f"/v1/leaderboards/{bad}/users/5"),
                     admin.get(f"/v1/leaderboards/{bad}/users/5/completions"),
                     admin.post(f"/v1/leaderboards/{bad}/ranks", json={"user_ids": [5]}),
                     admin.post(f"/v1/admin/leaderboards/{bad}/rebuild"),
                     admin.get(f"/v1/admin/leaderboards/{bad}/verify")):
            assert_problem(await call, 422, "validation_error")
    assert await stored(api) == before


# -- query numbers and cursors ------------------------------------------------------------

@pytest.mark.usefixtures("no_traceback")
async def test_malformed_limits_radii_and_cursors_are_422(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    ingest, admin = api.client(INGEST), api.client(ADMIN)
    for i in range(1, 4):
        assert (await ingest.post("/v1/completions", json=completion(f"c{i}", i, i, AT))
                ).status_code == 201
    first = (await api.get("/v1/leaderboards/2026-W49?limit=1")).json()
    cursor = first["next"]
    assert cursor is not None
    page = await api.get(f"/v1/leaderboards/2026-W49?limit=1&after={cursor}")
    assert page.status_code == 200 and page.json()["entries"][0]["user_id"] == 2
    for bad in ["%2B5", "%205", "5_0", "5.0", quote("\u0665"), "0", "1001", "-1", "0x5", "",
                "1e2"]:
        for path in (f"/v1/leaderboards/2026-W49?limit={bad}",
                     f"/v1/leaderboards/2026-W49?limit={bad}&after={cursor}",
                     f"/v1/admin/audit?limit={bad}",
                     f"/v1/admin/webhooks/deliveries?limit={bad}",
                     f"/v1/leaderboards/2026-W49/users/1/completions?limit={bad}"):
            body = assert_problem(await admin.get(path), 422, "validation_error")
            assert body["detail"] == "limit: must be an integer from 1 to 1000", (path, body)
    for bad in ["%2B5", "%205", "5.0", quote("\u0665"), "51", "-1", ""]:
        for client in (admin, fastapi_only(api, ADMIN)):
            body = assert_problem(await client.get(
                f"/v1/leaderboards/2026-W49/users/1?radius={bad}"), 422, "validation_error")
            assert body["detail"] == "radius: must be an integer from 0 to 50", body
    # base64's decoder skips characters outside its alphabet: a cursor with
    # any of them is not a cursor, even if what is left would be one.
    for bad in [f"{cursor}!", f"{cursor}%0A", f"{cursor[:5]}.{cursor[5:]}", f"{cursor}==",
                f"%20{cursor}", "", "x" * 513]:
        for path in (f"/v1/leaderboards/2026-W49?after={bad}", f"/v1/admin/audit?after={bad}",
                     f"/v1/admin/webhooks/deliveries?after={bad}",
                     f"/v1/leaderboards/2026-W49/users/1/completions?after={bad}"):
            body = assert_problem(await admin.get(path), 422, "validation_error")
            assert body["detail"].startswith("after: not a cursor"), (path, body)


# -- display names --------------------------------------------------------------------------

SPOOFING = ["\u202eevil", "\u200b", "\u2028", "   ", "Anonymous", "anonymous", " ANONYMOUS ",
            "Ada\u200d", "\u2066Ada\u2069", "\ufeffAda", "Ada\u2029", "\u3164", "\u3000",
            "Anonymous\u00a0", "\uff21\uff4e\uff4f\uff4e\uff59\uff4d\uff4f\uff55\uff53", "",
            "x" * 65, "a\x1bb"]


@pytest.mark.usefixtures("no_traceback")
async def test_spoofing_display_names_are_refused(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    ingest = api.client(INGEST)
    assert (await ingest.post("/v1/completions", json=completion("c1", 7, 3, AT))).status_code \
        == 201
    for name in SPOOFING:
        resp = await ingest.put("/v1/users/7", json={"display_name": name,
                                                     "visibility": "hidden"})
        body = assert_problem(resp, 422, "validation_error")
        assert body["detail"].startswith("display_name: "), (name, body)
        resp = await ingest.put("/v1/users/8", json={"display_name": name})
        assert_problem(resp, 422, "validation_error")
    assert "blank" in assert_problem(await ingest.put("/v1/users/7", json={
        "display_name": "   "}), 422, "validation_error")["detail"]
    assert "Anonymous" in assert_problem(await ingest.put("/v1/users/7", json={
        "display_name": " ANONYMOUS "}), 422, "validation_error")["detail"]
    assert "U+202E" in assert_problem(await ingest.put("/v1/users/7", json={
        "display_name": "\u202eevil"}), 422, "validation_error")["detail"]
    # Nothing was stored: not the name, not the visibility sent beside it.
    assert await count(api, "SELECT count(*) FROM users WHERE display_name IS NOT NULL "
                            "OR visibility <> 'public' OR profile_version > 0 "
                            "OR user_id = 8") == 0
    [entry] = (await api.get("/v1/leaderboards/2026-W49")).json()["entries"]
    assert entry == {"rank": 1, "user_id": 7, "display_name": "Learner 7", "score": 3}
    # A name that only looks unusual is a name.
    for name in ("Zo\u00eb \u5c71\u7530", "Anonymous Ada", "\u0639\u0644\u064a", "Ada \U0001f600"):
        resp = await ingest.put("/v1/users/7", json={"display_name": name})
        assert resp.status_code == 200, resp.text
        assert resp.json() == {"user_id": 7, "display_name": name, "visibility": "public"}
        [entry] = (await api.get("/v1/leaderboards/2026-W49")).json()["entries"]
        assert entry["display_name"] == name


# -- duplicate keys ---------------------------------------------------------------------------

def raw(text: str) -> dict[str, Any]:
    return {"content": text.encode(), "headers": {"content-type": "application/json"}}


@pytest.mark.usefixtures("no_traceback")
async def test_duplicate_keys_are_refused(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    ingest, admin = api.client(INGEST), api.client(ADMIN)
    dup = ('{"completion_id": "dup-a", "completion_id": "dup-b", "user_id": 9, "points": 1, '
           f'"completed_at": "{AT}"}}')
    for client in (ingest, fastapi_only(api, INGEST)):  # the fast lane, then FastAPI's route
        body = assert_problem(await client.post("/v1/completions", **raw(dup)), 422,
                              "validation_error")
        assert '"completion_id"' in body["detail"] and "twice" in body["detail"], body
        for text in ('{"completion_id": "dup-c", "user_id": 9, "user_id": 9, "points": 1}',
                     '{"completion_id": "dup-c", "user_id": 9, "points": 1, '
                     '"extra": {"a": [{"b": 1, "b": 2}]}}',
                     '{"completion_id": "dup-c", "user_id": 9, "points": 1, '
                     '"\\u0070oints": 1}'):  # an escaped "points"
            assert_problem(await client.post("/v1/completions", **raw(text)), 422,
                           "validation_error")
    batch = ('{"completions": [{"completion_id": "b1", "user_id": 9, "points": 1}, '
             '{"completion_id": "b2", "user_id": 9, "points": 2, "points": 3}]}')
    body = assert_problem(await ingest.post("/v1/completions/batch", **raw(batch)), 422,
                          "validation_error")
    assert '"points"' in body["detail"], body
    assert_problem(await ingest.post("/v1/completions/batch", **raw(
        '{"completions": [], "completions": [{"completion_id": "b3", "user_id": 9, '
        '"points": 1}]}')), 422, "validation_error")
    assert_problem(await ingest.put("/v1/users/9", **raw(
        '{"display_name": "Ada", "display_name": "Mallory"}')), 422, "validation_error")
    assert_problem(await ingest.put("/v1/users/9", **raw(
        '{"visibility": "hidden", "display_name": "Ada", "visibility": "public"}')), 422,
        "validation_error")
    assert_problem(await admin.post("/v1/admin/completions/b1/void", **raw(
        '{"reason": "a", "reason": "b"}')), 422, "validation_error")
    assert_problem(await api.client(token_for(api.env, 9)).post(
        "/v1/users/9/notifications/read", **raw('{"ids": [], "ids": [1]}')), 422,
        "validation_error")
    # Nothing recorded, nothing stored.
    assert await stored(api) == (0, 0, 0)
    assert (await api.get("/v1/leaderboards/2026-W49")).json()["entries"] == []
    # The same bodies without the duplicate are fine, and mean what orjson reads.
    odd = (f'{{"completion_id": "dup-b", "user_id": 9, "points": 1, "completed_at": "{AT}", '
           '"extra": {"big": 18446744073709551616, "s": "\\u00e9\\ud83d\\ude00"}}')
    refused = await ingest.post("/v1/completions", **raw(odd))  # read whole, then refused
    assert refused.json()["detail"] == "unknown field 'extra'", refused.text  # (issue 65)
    ok = f'{{"completion_id": "dup-b", "user_id": 9, "points": 1, "completed_at": "{AT}"}}'
    assert (await ingest.post("/v1/completions", **raw(ok))).status_code == 201
    resp = await ingest.post("/v1/completions/batch", **raw(
        '{"completions": [{"completion_id": "b1", "user_id": 9, "points": 1}, '
        '{"completion_id": "b2", "user_id": 9, "points": 1, "x": {"points": 5}}]}'))
    assert [r["status"] for r in resp.json()["results"]] == ["recorded", "rejected"]
    assert resp.json()["results"][1]["error"]["detail"] == "unknown field 'x'"  # not its points
    for text in ('{"completion_id": "n", "user_id": 9, "points": NaN}',
                 '{"completion_id": "n", "user_id": 9, "points": 1, "x": "\\ud800"}'):
        body = assert_problem(await ingest.post("/v1/completions", **raw(text)), 422,
                              "validation_error")
        assert body["detail"] == "the body is not valid JSON"


async def test_openapi_documents_the_strict_forms(serve: ApiFactory) -> None:
    api = await serve()
    paths = (await api.get("/openapi.json")).json()["paths"]

    def param(path: str, method: str, name: str) -> dict[str, Any]:
        [p] = [p for p in paths[path][method]["parameters"] if p["name"] == name]
        return dict(p["schema"])

    uuid_pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    assert param("/v1/admin/rebuilds/{rebuild_id}", "get", "rebuild_id")["pattern"] \
        == uuid_pattern
    assert param("/v1/admin/webhooks/deliveries/{delivery_id}/retry", "post",
                 "delivery_id")["pattern"] == uuid_pattern
    assert "422" in paths["/v1/admin/rebuilds/{rebuild_id}"]["get"]["responses"]
    assert param("/v1/users/{user_id}", "put", "user_id")["pattern"] == "^[1-9][0-9]{0,18}$"
    assert param("/v1/admin/audit", "get", "limit") | {"description": ""} == {
        "type": "integer", "minimum": 1, "maximum": 1000, "default": 100, "title": "Limit",
        "description": ""}
    assert param("/v1/leaderboards/{season}", "get", "after")["pattern"] \
        == "^[A-Za-z0-9_-]{1,512}$"
