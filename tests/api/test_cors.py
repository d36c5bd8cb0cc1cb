"""CORS for reads, and only reads (LAURELS_CORS_ORIGINS; api/cors.py)."""

from __future__ import annotations

import pytest

from laurels.process.settings import parse_origins
from tests.api.conftest import ApiFactory
from tests.helpers import INGEST, completion, token_for

pytestmark = pytest.mark.once

SITE = "https://platform.test"


async def test_reads_get_cors_headers_writes_never(serve: ApiFactory) -> None:
    api = await serve(cors_origins=(SITE,))
    c = api.client(INGEST)
    origin = {"Origin": SITE}
    resp = await c.post("/v1/completions", json=completion("x", 1, 5), headers=origin)
    assert resp.status_code == 201 and "access-control-allow-origin" not in resp.headers
    board = await api.get("/v1/leaderboards/current", headers=origin)
    assert board.headers["access-control-allow-origin"] == SITE
    assert "etag" in board.headers["access-control-expose-headers"].lower()
    mine = await api.client(token_for(api.env, 1)).get("/v1/leaderboards/current/users/1",
                                                       headers=origin)
    assert mine.status_code == 200 and mine.headers["access-control-allow-origin"] == SITE
    # A preflight for a learner's read with its token is allowed...
    pre = await api.client().options("/v1/leaderboards/current/users/1", headers={
        **origin, "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "authorization"})
    assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == SITE
    assert "authorization" in pre.headers["access-control-allow-headers"].lower()
    # The friends board is a read with a body.
    pre = await api.client().options("/v1/leaderboards/current/ranks", headers={
        **origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == SITE
    friends = await c.post("/v1/leaderboards/current/ranks", json={"user_ids": [1]},
                           headers=origin)
    assert friends.status_code == 200
    assert friends.headers["access-control-allow-origin"] == SITE
        # ...one for a write or an admin call is not.
    for path in ("/v1/completions", "/v1/admin/audit", "/v1/users/1"):
        pre = await api.client().options(path, headers={
            **origin, "Access-Control-Request-Method": "POST"})
        assert "access-control-allow-origin" not in pre.headers, path
    # Another origin gets nothing.
    other = await api.get("/v1/leaderboards/current", headers={"Origin": "https://evil.test"})
    assert "access-control-allow-origin" not in other.headers


async def test_no_cors_unless_configured(serve: ApiFactory) -> None:
    api = await serve()
    resp = await api.get("/v1/leaderboards/current", headers={"Origin": SITE})
    assert resp.status_code == 200 and "access-control-allow-origin" not in resp.headers
    js = await api.get("/embed.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert "customElements.define" in js.text


def test_origins_setting() -> None:
    assert parse_origins("https://a.test, http://127.0.0.1:8080/") == (
        "https://a.test", "http://127.0.0.1:8080")
    assert parse_origins("*") == ("*",)
    with pytest.raises(ValueError, match="not an origin"):
        parse_origins("javascript:alert(1)")
