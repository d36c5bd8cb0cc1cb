"""`laurels serve` as a subprocess, spoken to over HTTP exactly as CONTRACT.md says."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import (
    ADMIN,
    INGEST,
    assert_problem,
    completion,
    free_port,
    laurels_bin,
    server_env,
    start_server,
    token_for,
)


def test_writes_statuses_and_errors(serve: Any) -> None:
    server = serve()
    c = server.client(INGEST)
    first = c.post("/v1/completions", json=completion("9001", 42, 1))
    assert first.status_code == 201
    body = first.json()
    assert body["status"] == "recorded" and body["completion_id"] == "9001"
    assert isinstance(body["seq"], int) and body["season"].count("-W") == 1
    again = c.post("/v1/completions", json=completion("9001", 42, 1))
    assert again.status_code == 200 and again.json() == {**body, "status": "duplicate"}
    assert_problem(c.post("/v1/completions", json=completion("9001", 42, 2)), 409,
                   "completion_conflict")
    assert_problem(c.post("/v1/completions", json=completion("old", 42, 1,
                                                              "2020-01-06T10:00:00Z")),
                   409, "season_closed")
    assert_problem(c.post("/v1/completions", json=completion("fut", 42, 1,
                                                              "2999-01-06T10:00:00Z")),
                   422, "validation_error")
    for bad in ({"completion_id": "a", "user_id": "42", "points": 1},
                {"completion_id": "a", "user_id": 42, "points": 1.5},
                {"completion_id": "a", "user_id": 42, "points": True},
                {"completion_id": "a", "user_id": 42, "points": 1,
                 "completed_at": "2026-11-30T10:00:00"},
                {"completion_id": "a b", "user_id": 42, "points": 1}, [], "x"):
        assert_problem(c.post("/v1/completions", json=bad), 422, "validation_error")
    assert_problem(c.post("/v1/completions", content=b"{nope",
                          headers={"content-type": "application/json"}), 422,
                   "validation_error")
    assert_problem(c.post("/v1/completions", content=b"{}",
                          headers={"content-type": "text/plain"}), 415,
                   "unsupported_media_type")
    big = b'{"completion_id": "' + b"x" * (1024 * 1024) + b'"}'
    assert_problem(c.post("/v1/completions", content=big,
                          headers={"content-type": "application/json"}), 413,
                   "payload_too_large")
    # Nothing above was recorded except 9001.
    top = httpx.get(f"{server.url}/v1/leaderboards/current").json()
    assert [(e["user_id"], e["score"]) for e in top["entries"]] == [(42, 1)]


def test_auth(serve: Any) -> None:
    server = serve()
    anon = server.client()
    assert_problem(anon.post("/v1/completions", json=completion("a", 1, 1)), 401,
                   "unauthorized")
    assert_problem(server.client("wrong").post("/v1/completions", json=completion("a", 1, 1)),
                   401, "unauthorized")
    learner = token_for(server.env, 1)
    assert_problem(server.client(learner).post("/v1/completions", json=completion("a", 1, 1)),
                   403, "forbidden")
    assert server.client(ADMIN).post("/v1/completions", json=completion("a", 1, 1)
                                     ).status_code == 201
    assert server.client(learner).get("/v1/leaderboards/current/users/1").status_code == 200
    assert_problem(server.client(learner).get("/v1/leaderboards/current/users/2"), 403,
                   "forbidden")
    assert_problem(server.client(INGEST).get("/v1/leaderboards/current/users/1"), 403,
                   "forbidden")
    assert_problem(anon.get("/v1/leaderboards/current/users/1"), 401, "unauthorized")
    expired = token_for(server.env, 1, ttl=-60)
    assert_problem(server.client(expired).get("/v1/leaderboards/current/users/1"), 401,
                   "unauthorized")
    assert server.client(ADMIN).get("/v1/leaderboards/current/users/1").status_code == 200


def test_batch(serve: Any) -> None:
    server = serve()
    c = server.client(INGEST)
    items = [completion("b1", 1, 3), completion("b2", 2, 5), completion("b1", 1, 3),
             completion("b1", 1, 4), {"completion_id": "b3", "user_id": 0, "points": 1}]
    resp = c.post("/v1/completions/batch", json={"completions": items})
    assert resp.status_code == 200
    results = resp.json()["results"]
    assert [r["status"] for r in results] == ["recorded", "recorded", "duplicate", "rejected",
                                              "rejected"]
    assert results[3]["error"]["code"] == "completion_conflict"
    assert results[4]["error"]["code"] == "validation_error" and results[4]["completion_id"] == "b3"
    assert_problem(c.post("/v1/completions/batch", json={"completions": []}), 422,
                   "validation_error")
    too_many = [completion(f"m{i}", 1, 1) for i in range(1001)]
    assert_problem(c.post("/v1/completions/batch", json={"completions": too_many}), 422,
                   "validation_error")


def test_privacy_and_neighbourhood(serve: Any) -> None:
    server = serve()
    c = server.client(INGEST)
    for uid, name, vis in [(1, "Hidden Hal", "hidden"), (2, "Anon Ann", "anonymous"),
                           (3, "Pub Pat", "public")]:
        resp = c.put(f"/v1/users/{uid}", json={"display_name": name, "visibility": vis})
        assert resp.status_code == 200
        assert resp.json() == {"user_id": uid, "display_name": name, "visibility": vis}
    for uid, pts in [(1, 50), (2, 40), (3, 30), (4, 30), (5, 10)]:
        assert c.post("/v1/completions", json=completion(f"p{uid}", uid, pts)).status_code == 201
    top = httpx.get(f"{server.url}/v1/leaderboards/current?limit=10").json()
    assert top["total"] == 4 and top["tie_policy"] == "shared" and top["status"] == "open"
    assert top["entries"] == [
        {"rank": 1, "user_id": None, "display_name": "Anonymous", "score": 40},
        {"rank": 2, "user_id": 3, "display_name": "Pub Pat", "score": 30},
        {"rank": 2, "user_id": 4, "display_name": "Learner 4", "score": 30},
        {"rank": 4, "user_id": 5, "display_name": "Learner 5", "score": 10}]
    assert "Hidden Hal" not in httpx.get(f"{server.url}/v1/leaderboards/current").text
    hal = server.client(token_for(server.env, 1)).get(
        "/v1/leaderboards/current/users/1?radius=1").json()
    assert hal["user"] == {"rank": 1, "user_id": 1, "display_name": "Hidden Hal", "score": 50,
                           "visibility": "hidden"}
    assert [(n["user_id"], n["self"]) for n in hal["neighbors"]] == [(1, True), (None, False)]
    ann = server.client(token_for(server.env, 2)).get(
        "/v1/leaderboards/current/users/2?radius=2").json()
    assert ann["neighbors"][0] == {"rank": 1, "user_id": 2, "display_name": "Anon Ann",
                                   "score": 40, "self": True}
    assert [n["user_id"] for n in ann["neighbors"]] == [2, 3, 4]
    assert_problem(server.client(ADMIN).get("/v1/leaderboards/current/users/9"), 404,
                   "not_ranked")
    assert_problem(server.client(ADMIN).get("/v1/leaderboards/current/users/1?radius=51"),
                   422, "validation_error")
    assert_problem(c.put("/v1/users/1", json={"display_name": "bad\u0007name"}), 422,
                   "validation_error")
    assert_problem(c.put("/v1/users/1", json={"visibility": "secret"}), 422, "validation_error")
    # Visibility changes show in the very next read.
    assert c.put("/v1/users/1", json={"visibility": "public"}).status_code == 200
    top = httpx.get(f"{server.url}/v1/leaderboards/current?limit=1").json()
    assert top["entries"] == [{"rank": 1, "user_id": 1, "display_name": "Hidden Hal",
                               "score": 50}]


@pytest.mark.parametrize("policy", ["shared", "first"])
def test_seed_exercise_top_three_ties(serve: Any, policy: str) -> None:
    """The seed's exercise: top-three ties under both tie policies."""
    server = serve(LAURELS_TIE_POLICY=policy, LAURELS_CLOSE_SEASONS="false")
    c = server.client(INGEST)
    # Users 30, 10, 20 tie on 10 points; 30 reached it first, 10 and 20 at the same instant.
    items = [completion("t1", 30, 10, "2026-11-03T09:00:00Z"),
             completion("t2", 20, 10, "2026-11-03T10:00:00+00:00"),
             completion("t3", 10, 10, "2026-11-03T11:00:00+01:00"),
             completion("t4", 40, 9, "2026-11-03T08:00:00Z")]
    assert all(r["status"] == "recorded" for r in c.post(
        "/v1/completions/batch", json={"completions": items}).json()["results"])
    top = httpx.get(f"{server.url}/v1/leaderboards/2026-W45").json()
    got = [(e["rank"], e["user_id"]) for e in top["entries"]]
    if policy == "shared":
        assert got == [(1, 10), (1, 20), (1, 30), (4, 40)]
    else:
        assert got == [(1, 30), (2, 10), (3, 20), (4, 40)]
    assert top["tie_policy"] == policy


def test_season_rollover(serve: Any) -> None:
    server = serve(LAURELS_CLOSE_SEASONS="false")
    c = server.client(INGEST)
    items = [completion("sun", 1, 5, "2026-11-29T23:59:59.999Z"),
             completion("mon", 1, 7, "2026-11-30T00:00:00Z"),
             completion("off", 2, 3, "2026-11-29T23:30:00-01:00"),  # 00:30Z Monday
             completion("w53", 3, 1, "2020-12-31T12:00:00Z"),
             completion("y21", 3, 2, "2021-01-04T00:00:00Z")]
    seasons = [r["season"] for r in c.post("/v1/completions/batch",
                                          json={"completions": items}).json()["results"]]
    assert seasons == ["2026-W48", "2026-W49", "2026-W49", "2020-W53", "2021-W01"]
    w48 = httpx.get(f"{server.url}/v1/leaderboards/2026-W48").json()
    w49 = httpx.get(f"{server.url}/v1/leaderboards/2026-W49").json()
    assert [(e["user_id"], e["score"]) for e in w48["entries"]] == [(1, 5)]
    assert [(e["user_id"], e["score"]) for e in w49["entries"]] == [(1, 7), (2, 3)]
    assert (w49["starts_at"], w49["ends_at"]) == ("2026-11-30T00:00:00Z", "2026-12-07T00:00:00Z")
    w53 = httpx.get(f"{server.url}/v1/leaderboards/2020-W53").json()
    assert w53["entries"][0]["score"] == 1
    empty = httpx.get(f"{server.url}/v1/leaderboards/2026-W40").json()
    assert empty["total"] == 0 and empty["entries"] == []
    for bad in ("2027-W53", "2026-W54", "2026-49", "week"):
        assert_problem(httpx.get(f"{server.url}/v1/leaderboards/{bad}"), 422, "validation_error")
    assert_problem(httpx.get(f"{server.url}/v1/leaderboards/current?limit=0"), 422,
                   "validation_error")
    assert_problem(httpx.get(f"{server.url}/v1/leaderboards/current?limit=1001"), 422,
                   "validation_error")


def test_operations_and_openapi(serve: Any) -> None:
    server = serve()
    assert httpx.get(f"{server.url}/healthz").status_code == 200
    assert httpx.get(f"{server.url}/readyz").status_code == 200
    metrics = httpx.get(f"{server.url}/metrics")
    assert metrics.status_code == 200 and "# TYPE" in metrics.text
    paths = httpx.get(f"{server.url}/openapi.json").json()["paths"]
    for path in ("/v1/completions", "/v1/completions/batch", "/v1/users/{user_id}",
                 "/v1/leaderboards/{season}", "/v1/leaderboards/{season}/users/{user_id}",
                 "/healthz", "/readyz", "/metrics"):
        assert path in paths, path
    assert_problem(httpx.get(f"{server.url}/nope"), 404, "not_found")
    assert_problem(httpx.delete(f"{server.url}/healthz"), 405, "method_not_allowed")
    # SIGTERM: a graceful stop with exit status 0.
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(20) == 0


def test_bad_configuration_is_one_clear_line(tmp_path: Path) -> None:
    for name, value in [("LAURELS_TIE_POLICY", "bogus"), ("LAURELS_PORT", "-1"),
                        ("LAURELS_REDIS_URL", "http://x"), ("LAURELS_LATE_GRACE_SECONDS", "-5")]:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("LAURELS_")},
               "LAURELS_DATA_DIR": str(tmp_path), name: value}
        out = subprocess.run([laurels_bin(), "serve"], env=env, capture_output=True, text=True,
                             timeout=60)
        assert out.returncode != 0
        assert name in out.stderr and "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_embedded_default(tmp_path: Path, data_dir: Path) -> None:
    """No URLs: a real embedded PostgreSQL and Valkey in the data dir, kept between runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAURELS_")}
    env["LAURELS_DATA_DIR"] = str(data_dir)
    server = start_server(env, tmp_path / "embedded.log")
    try:
        secrets = (data_dir / "secrets.json")
        assert secrets.stat().st_mode & 0o777 == 0o600
        import json
        ingest = json.loads(secrets.read_text())["ingest_token"]
        resp = server.client(ingest).post("/v1/completions", json=completion("e1", 5, 2))
        assert resp.status_code == 201
        # Another command on the same data dir joins the running servers...
        out = subprocess.run([laurels_bin(), "verify", "--season", "current"], env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "consistent (1 learners checked)" in out.stdout, out
        # ...and leaves them running when it exits.
        assert httpx.get(f"{server.url}/readyz").status_code == 200
        assert len(list((data_dir / "postgres").glob("postmaster.pid"))) == 1
    finally:
        server.stop()
    assert server.process.returncode == 0
    server = start_server(env, tmp_path / "embedded2.log")
    try:
        top = httpx.get(f"{server.url}/v1/leaderboards/current").json()
        assert [(e["user_id"], e["score"]) for e in top["entries"]] == [(5, 2)]
    finally:
        server.stop()


def test_cli_migrate_token_rebuild(tmp_path: Path, database_url: str, redis_url: str,
                                   key_prefix: str, serve: Any) -> None:
    env = server_env(database_url, redis_url, key_prefix, tmp_path / "cli")
    assert subprocess.run([laurels_bin(), "migrate"], env=env, timeout=60).returncode == 0
    server = serve(LAURELS_CLOSE_SEASONS="false")
    resp = server.client(INGEST).post("/v1/completions", json=completion(
        "r1", 3, 4, "2026-11-24T10:00:00Z"))
    assert resp.status_code == 201, resp.text
    out = subprocess.run([laurels_bin(), "rebuild", "--season", "2026-W48"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "rebuilt from 1 events" in out.stdout
    top = httpx.get(f"{server.url}/v1/leaderboards/2026-W48").json()
    assert [(e["user_id"], e["score"]) for e in top["entries"]] == [(3, 4)]
    bad = subprocess.run([laurels_bin(), "rebuild", "--season", "2026-W99"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr


def test_erasure_over_http(serve: Any, tmp_path: Path) -> None:
    server = serve()
    c = server.client(INGEST)
    for uid, pts in [(1, 9), (2, 5), (3, 1)]:
        assert c.post("/v1/completions", json=completion(f"e{uid}", uid, pts)).status_code == 201
    assert_problem(c.delete("/v1/users/2"), 403, "forbidden")
    assert_problem(httpx.delete(f"{server.url}/v1/users/2"), 401, "unauthorized")
    assert_problem(server.client(ADMIN).delete("/v1/users/0"), 422, "validation_error")
    resp = server.client(ADMIN).delete("/v1/users/2")
    assert resp.status_code == 204 and resp.content == b""
    top = httpx.get(f"{server.url}/v1/leaderboards/current").json()
    assert [(e["rank"], e["user_id"]) for e in top["entries"]] == [(1, 1), (2, 3)]
    assert_problem(c.post("/v1/completions", json=completion("e2", 2, 5)), 410, "user_erased")
    assert_problem(c.put("/v1/users/2", json={"display_name": "Back"}), 410, "user_erased")
    assert server.client(ADMIN).delete("/v1/users/2").status_code == 204
    # verify on the command line agrees: exit 0 and "consistent"
    out = subprocess.run([laurels_bin(), "verify", "--season", "current"], env=server.env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "consistent" in out.stdout, out.stderr


def test_an_old_redis_is_refused_at_start(tmp_path: Path, database_url: str) -> None:
    """A server answering as Redis 6.2 (a few lines of RESP on a loopback
    port, standing in for an old server): `serve` refuses it in one line."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                replies = []
                for command in data.split(b"*")[1:]:  # pipelined commands, one by one
                    if b"INFO" in command.upper():
                        body = b"# Server\r\nredis_version:6.2.14\r\nrun_id:abc\r\n"
                        replies.append(b"$%d\r\n%s\r\n" % (len(body), body))
                    elif b"PING" in command.upper():
                        replies.append(b"+PONG\r\n")
                    else:
                        replies.append(b"+OK\r\n")
                conn.sendall(b"".join(replies))

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        env = server_env(database_url, f"redis://127.0.0.1:{port}/0", "old", tmp_path / "d")
        env.pop("LAURELS_REDIS_CLUSTER", None)
        out = subprocess.run([laurels_bin(), "serve", "--port", str(free_port())], env=env,
                             capture_output=True, text=True, timeout=60)
    finally:
        listener.close()
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert lines[-1] == ("laurels: Redis 6.2.14 is too old: laurels needs Redis 7.0 or later, "
                         "or Valkey 7.2 or later (sharded Pub/Sub, SMISMEMBER)"), out.stderr
    assert "Traceback" not in out.stderr


def test_board_etag_and_read_your_writes(serve: Any) -> None:
    """The top of a board carries an ETag: unchanged, `If-None-Match` gets 304;
    a completion changes it at once for the writer's next read (the cache of
    this process drops before the 201 leaves)."""
    server = serve()
    c = server.client(INGEST)
    assert c.post("/v1/completions", json=completion("t1", 1, 5)).status_code == 201
    first = httpx.get(f"{server.url}/v1/leaderboards/current")
    etag = first.headers["etag"]
    again = httpx.get(f"{server.url}/v1/leaderboards/current", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.headers["etag"] == etag and again.content == b""
    for n in range(20):  # every write shows on the very next read
        assert c.post("/v1/completions", json=completion(f"t2-{n}", 2, 1)).status_code == 201
        board = httpx.get(f"{server.url}/v1/leaderboards/current")
        assert {e["user_id"]: e["score"] for e in board.json()["entries"]}[2] == n + 1
        assert board.headers["etag"] != etag
        etag = board.headers["etag"]
    assert httpx.get(f"{server.url}/v1/leaderboards/current?limit=0").status_code == 422
    bad = httpx.get(f"{server.url}/v1/leaderboards/2026-W99")
    assert bad.status_code == 422 and bad.json()["code"] == "validation_error"


def test_query_numbers_are_ascii_digits(serve: Any) -> None:
    """Found by schemathesis: `limit=³` is a digit to Python's str.isdigit()."""
    server = serve()
    for query in ("limit=%C2%B3", "limit=%EF%BC%91", "limit=-1", "limit=1e3"):
        resp = httpx.get(f"{server.url}/v1/leaderboards/current?{query}")
        assert_problem(resp, 422, "validation_error")
    token = token_for(server.env, 3)
    server.client(INGEST).post("/v1/completions", json=completion("q1", 3, 1))
    resp = server.client(token).get("/v1/leaderboards/current/users/3?radius=%C2%B2")
    assert_problem(resp, 422, "validation_error")


def test_several_workers_share_one_port(serve: Any) -> None:
    """`laurels serve --workers 2`: two processes on one port, one set of stores;
    a write through one is read through either, and both stop cleanly."""
    server = serve("--workers", "2")
    c = server.client(INGEST)
    for n in range(10):
        assert c.post("/v1/completions", json=completion(f"w{n}", 1 + n % 3, 2)).status_code == 201
    tops = {tuple((e["user_id"], e["score"]) for e in
                  httpx.get(f"{server.url}/v1/leaderboards/current").json()["entries"])
            for _ in range(10)}  # new connections: both workers answer
    assert tops == {((1, 8), (2, 6), (3, 6))}
    server.stop()
    assert server.process.returncode == 0
    log = server.log.read_text()
    assert log.count("Application startup complete") == 2, log[-2000:]
    assert "ERROR" not in log and "Traceback" not in log, log[-2000:]
