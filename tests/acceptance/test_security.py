"""Hostile input at the HTTP boundary: tokens, limits, rate limits, no leaks."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import time
from typing import Any

import httpx
import jwt

from tests.helpers import ADMIN, INGEST, USER_SECRET, assert_problem, completion, wait_until


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: dict[str, Any], claims: dict[str, Any], key: bytes | None) -> str:
    head = _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(claims).encode())
    if key is None:
        return head + "."
    return head + "." + _b64(hmac.new(key, head.encode(), hashlib.sha256).digest())


def test_learner_tokens_must_be_hs256_with_exp_and_a_valid_sub(serve: Any) -> None:
    server = serve()
    server.client(INGEST).post("/v1/completions", json=completion("j1", 7, 1))
    exp = int(time.time()) + 600
    good = jwt.encode({"sub": "7", "exp": exp}, USER_SECRET, algorithm="HS256")
    assert server.client(good).get("/v1/leaderboards/current/users/7").status_code == 200
    bad = {
        "alg none": forge({"alg": "none", "typ": "JWT"}, {"sub": "7", "exp": exp}, None),
        "HS512": jwt.encode({"sub": "7", "exp": exp}, USER_SECRET * 2, algorithm="HS512"),
        "no exp": jwt.encode({"sub": "7"}, USER_SECRET, algorithm="HS256"),
        "expired": jwt.encode({"sub": "7", "exp": int(time.time()) - 10}, USER_SECRET,
                              algorithm="HS256"),
        "int sub": forge({"alg": "HS256", "typ": "JWT"}, {"sub": 7, "exp": exp},
                         USER_SECRET.encode()),
        "sub 0": jwt.encode({"sub": "0", "exp": exp}, USER_SECRET, algorithm="HS256"),
        "other secret": jwt.encode({"sub": "7", "exp": exp}, "x" * 40, algorithm="HS256"),
        "garbage": "not.a.token",
    }
    for name, tok in bad.items():
        resp = server.client(tok).get("/v1/leaderboards/current/users/7")
        assert resp.status_code == 401, name
        assert_problem(resp, 401, "unauthorized")
    log = server.log.read_text()
    for secret in (INGEST, ADMIN, USER_SECRET, good):
        assert secret not in log


def test_write_rate_limit_per_token(serve: Any) -> None:
    server = serve(LAURELS_WRITE_RATE_LIMIT="2")
    c = server.client(INGEST)
    statuses = [c.post("/v1/completions", json=completion(f"r{i}", 1, 1)) for i in range(8)]
    limited = [r for r in statuses if r.status_code == 429]
    assert limited and statuses[0].status_code == 201
    body = assert_problem(limited[0], 429, "rate_limited")
    assert int(limited[0].headers["Retry-After"]) >= 1 and body["detail"]
    # Another token has its own budget; reads are not limited.
    assert server.client(ADMIN).post("/v1/completions",
                                     json=completion("adm", 1, 1)).status_code == 201
    for _ in range(10):
        assert httpx.get(f"{server.url}/v1/leaderboards/current").status_code == 200
    # The bucket refills: within about a second the same token may write again.
    wait_until(lambda: c.post("/v1/completions", json=completion("later", 1, 1)
                              ).status_code == 201, seconds=3)


def test_body_and_header_limits(serve: Any) -> None:
    server = serve()

    def chunks() -> Any:  # no Content-Length: the limit holds while streaming
        yield b'{"completions": ['
        for _ in range(1100):
            yield b'{"completion_id": "' + b"x" * 1000 + b'", "user_id": 1, "points": 1},'
        yield b"]}"

    resp = httpx.post(f"{server.url}/v1/completions/batch", content=chunks(),
                      headers={"Authorization": f"Bearer {INGEST}",
                               "content-type": "application/json"})
    assert_problem(resp, 413, "payload_too_large")
    with socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1]))) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n")
        s.settimeout(10)
        reply = s.recv(100)
    assert reply.startswith(b"HTTP/1.1 4")
    assert httpx.get(f"{server.url}/healthz").status_code == 200  # still serving


def test_errors_never_leak_internals(serve: Any) -> None:
    server = serve()
    c = server.client(INGEST)
    probes = [
        c.post("/v1/completions", json={"completion_id": "'; DROP TABLE users; --",
                                        "user_id": 1, "points": 1}),
        c.post("/v1/completions", json={"completion_id": "a", "user_id": 2**64, "points": 1}),
        c.put("/v1/users/99999999999999999999", json={"display_name": "x"}),
        c.get("/v1/leaderboards/%00"),
        c.post("/v1/completions/batch", json={"completions": "nope"}),
        c.post("/v1/users/1/notifications/read", json={"ids": "x"}),
    ]
    for resp in probes:
        assert 400 <= resp.status_code < 500, resp.text
        assert resp.headers["content-type"].startswith("application/problem+json")
        for leak in ("Traceback", "psycopg", "SELECT", "INSERT", "redis.", INGEST, ADMIN):
            assert leak not in resp.text


def test_no_token_reaches_the_server_log(serve: Any) -> None:
    """The EventSource token in a query string, a bearer header, a forged
    token: none of them appears in the server's log, access log included."""
    from tests.helpers import leaks

    server = serve(LAURELS_ACCESS_LOG="true")
    exp = int(time.time()) + 600
    learner = jwt.encode({"sub": "7", "exp": exp}, USER_SECRET, algorithm="HS256")
    forged = jwt.encode({"sub": "7", "exp": exp}, "not-the-secret-" * 4, algorithm="HS256")
    server.client(INGEST).post("/v1/completions", json=completion("l1", 7, 1))
    for tok in (learner, forged):
        with httpx.stream("GET", f"{server.url}/v1/users/7/notifications/events",
                          params={"access_token": tok}, timeout=10) as resp:
            assert resp.status_code in (200, 401)
        server.client(tok).get("/v1/leaderboards/current/users/7")
    httpx.get(f"{server.url}/v1/users/7/notifications?access_token={learner}")
    server.client(ADMIN).get("/v1/admin/leaderboards/current/verify")
    server.stop()
    text = server.log.read_text()
    assert "access_token=[redacted]" in text  # the access log did record the requests
    assert leaks(text.splitlines()) == []


def test_one_client_holds_at_most_16_streams(serve: Any) -> None:
    """Issue 39: one client with no token opened 2,000 idle streams and the
    next viewer got 503. Now the 17th stream of one address is 429 with
    Retry-After; another client (behind a trusted proxy, the address its
    X-Forwarded-For names) is still served; a closed stream frees a place."""
    server = serve(LAURELS_MAX_STREAMS_PER_CLIENT="16", LAURELS_TRUSTED_PROXIES="127.0.0.1/32")
    url = f"{server.url}/v1/leaderboards/current/events"
    clients: list[httpx.Client] = []

    def open_stream(headers: dict[str, str] | None = None) -> httpx.Response:
        c = httpx.Client(timeout=10)
        clients.append(c)
        return c.send(c.build_request("GET", url, headers=headers), stream=True)

    try:
        mine = [open_stream() for _ in range(16)]
        assert [r.status_code for r in mine] == [200] * 16
        refused = httpx.get(url, timeout=5)
        assert_problem(refused, 429, "rate_limited")
        assert refused.headers["retry-after"] == "5"
        forged = open_stream({"X-Forwarded-For": "127.0.0.1"})
        assert forged.status_code == 429  # only proxies named: the leftmost, itself
        other = open_stream({"X-Forwarded-For": "203.0.113.9"})
        assert other.status_code == 200
        mine[0].close()

        def freed() -> bool:
            probe = open_stream()
            probe.close()
            return probe.status_code == 200

        wait_until(freed, 10, "a closed stream's place to be free again")
    finally:
        for c in clients:
            c.close()


def ended(stream: Any) -> bool:
    return not stream.thread.is_alive()


def test_a_stream_that_may_no_longer_be_read_ends(serve: Any) -> None:
    """Issue 39: access was checked only when a stream opened. A member
    removed from a members-only group, a stream of a public group turned
    members-only, an erased learner's cohort stream: each ends (within the
    5 s the contract allows), while a reader who still may keeps theirs."""
    from tests.helpers import Events, token_for

    server = serve(LAURELS_LEAGUE_TIERS="bronze,silver", LAURELS_LEAGUE_SIZE="5",
                   LAURELS_LEAGUE_PROMOTE="1", LAURELS_LEAGUE_DEMOTE="1")
    c = server.client(INGEST)
    assert c.put("/v1/groups/team", json={}).status_code == 200
    assert c.post("/v1/groups/team/members", json={"add": [1, 2]}).status_code == 200
    assert c.put("/v1/groups/open", json={"access": "public"}).status_code == 200
    base = f"{server.url}/v1/groups/{{}}/leaderboards/current/events"
    one, two = ({"Authorization": f"Bearer {token_for(server.env, u)}"} for u in (1, 2))
    removed, kept = Events(base.format("team"), one), Events(base.format("team"), two)
    anonymous = Events(base.format("open"))
    try:
        assert removed.status == kept.status == anonymous.status == 200
        assert c.post("/v1/groups/team/members", json={"remove": [1]}).status_code == 200
        wait_until(lambda: ended(removed), 5, "the removed member's stream to end")
        assert c.put("/v1/groups/open", json={"access": "members"}).status_code == 200
        wait_until(lambda: ended(anonymous), 5, "the anonymous stream of a closed group to end")
        assert not ended(kept)
        # An erased learner's cohort stream.
        for uid in (1, 2, 3):
            assert c.post("/v1/completions", json=completion(f"l{uid}", uid, uid)).status_code \
                == 201
        def placed(uid: int) -> Any:
            r = server.client(token_for(server.env, uid)).get(f"/v1/users/{uid}/league").json()
            return r["status"] == "placed" and r

        # Both must be placed (a placement pass may run between their joins);
        # three joins of one tier of size 5 fill one cohort.
        league = wait_until(lambda: placed(1), 10, "learner 1's placement")
        assert wait_until(lambda: placed(2), 10, "learner 2's placement")["cohort_id"] \
            == league["cohort_id"]
        cohort = f"{server.url}/v1/leagues/{league['season']}/cohorts/{league['cohort_id']}/events"
        mine, other = Events(cohort, one), Events(cohort, two)
        assert mine.status == other.status == 200
        assert server.client(ADMIN).delete("/v1/users/1").status_code == 204
        wait_until(lambda: ended(mine), 5, "the erased learner's cohort stream to end")
        assert not ended(other)
        other.close()
    finally:
        for s in (removed, kept, anonymous):
            s.close()


def test_a_hidden_learner_s_activity_wakes_no_stream(serve: Any) -> None:
    """Issue 39: a hidden member's completion sent `changed` to their
    group's (public: anyone may watch) and cohort's streams though neither
    board changed. Now it wakes no stream at all; a public member's does."""
    from tests.helpers import Events

    server = serve()
    c = server.client(INGEST)
    assert c.put("/v1/groups/club", json={"access": "public"}).status_code == 200
    assert c.post("/v1/groups/club/members", json={"add": [1, 2]}).status_code == 200
    assert c.put("/v1/users/2", json={"visibility": "hidden"}).status_code == 200
    group = Events(f"{server.url}/v1/groups/club/leaderboards/current/events")
    season = Events(f"{server.url}/v1/leaderboards/current/events")
    try:
        assert c.post("/v1/completions", json=completion("h2", 2, 50)).status_code == 201
        assert c.post("/v1/completions", json=completion("h1", 1, 5)).status_code == 201
        for stream in (group, season):
            wait_until(lambda s=stream: s.named("changed"), 10, "learner 1's hint")
            assert stream.named("changed") == [{"season": stream.named("changed")[0]["season"],
                                                "user_id": 1}]
    finally:
        group.close()
        season.close()
