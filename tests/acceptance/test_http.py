"""`laurels serve` as a subprocess, spoken to over HTTP exactly as docs/contract.md says."""

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
    ADMIN_AUTH,
    INGEST,
    assert_problem,
    completion,
    free_port,
    laurels_bin,
    server_env,
    start_server,
    token_for,
)


def test_operations_and_openapi(serve: Any) -> None:
    server = serve()
    assert httpx.get(f"{server.url}/healthz").status_code == 200
    assert httpx.get(f"{server.url}/readyz").status_code == 200
    metrics = httpx.get(f"{server.url}/metrics", headers=ADMIN_AUTH)
    assert metrics.status_code == 200 and "# TYPE" in metrics.text
    assert_problem(httpx.get(f"{server.url}/metrics"), 401, "unauthorized")
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


@pytest.mark.once
@pytest.mark.slow
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


@pytest.mark.once
@pytest.mark.slow
def test_embedded_default(tmp_path: Path, data_dir: Path) -> None:
    """No URLs: a real embedded PostgreSQL and Valkey in the data dir, kept between runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAURELS_")}
    env["LAURELS_DATA_DIR"] = str(data_dir)
    server = start_server(env, tmp_path / "embedded.log")
    try:
        secrets = (data_dir / "secrets.json")
        assert secrets.stat().st_mode & 0o777 == 0o600
        import json
        ingest = json.loads(secrets.read_text())["LAURELS_INGEST_TOKEN"]
        resp = server.client(ingest).post("/v1/completions", json=completion("e1", 5, 2))
        assert resp.status_code == 201
        # Another command on the same data dir joins the running servers...
        out = subprocess.run([laurels_bin(), "verify", "--season", "current"], env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "consistent (1 learners checked)" in out.stdout, out
        # It says so on stderr (issue 26): the data dir, the stores it joined.
        assert f"laurels: using data dir {data_dir}\n" in out.stderr, out.stderr
        assert "postgresql://postgres:***@/laurels?host=" in out.stderr, out.stderr
        assert out.stderr.count("(embedded, joined)") == 2, out.stderr
        # ...and leaves them running when it exits.
        assert httpx.get(f"{server.url}/readyz").status_code == 200
        assert len(list((data_dir / "postgres").glob("postmaster.pid"))) == 1
    finally:
        server.stop()
    assert server.process.returncode == 0
    # Where a serve ran, a one-shot command starts its servers for itself
    # (and stops them); where none ran it refuses (tests/acceptance/test_cli.py).
    out = subprocess.run([laurels_bin(), "verify", "--season", "current"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "consistent (1 learners checked)" in out.stdout, out
    assert out.stderr.count("(embedded, started)") == 2, out.stderr
    server = start_server(env, tmp_path / "embedded2.log")
    try:
        top = httpx.get(f"{server.url}/v1/leaderboards/current").json()
        assert [(e["user_id"], e["score"]) for e in top["entries"]] == [(5, 2)]
    finally:
        server.stop()


@pytest.mark.slow
def test_cli_migrate_token_rebuild(tmp_path: Path, database_url: str, redis_url: str,
                                   key_prefix: str, serve: Any) -> None:
    # One deployment, one set of settings (issue 40): the commands run with
    # the serve's.
    shared = {"LAURELS_CLOSE_SEASONS": "false", "LAURELS_PERIODS": "week,month,all"}
    env = {**server_env(database_url, redis_url, key_prefix, tmp_path / "cli"), **shared}
    assert subprocess.run([laurels_bin(), "migrate"], env=env, timeout=60).returncode == 0
    server = serve(**shared)
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
    # Every period's season names, once the period is configured (issue 14).
    periods = env
    for season, events in (("2026-11", 1), ("all", 1), ("2026-10", 0)):
        out = subprocess.run([laurels_bin(), "rebuild", "--season", season], env=periods,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and f"rebuilt from {events} events" in out.stdout, out.stderr
        out = subprocess.run([laurels_bin(), "verify", "--season", season], env=periods,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and "consistent" in out.stdout, out.stderr
    off = subprocess.run([laurels_bin(), "verify", "--season", "current-day"], env=periods,
                         capture_output=True, text=True, timeout=60)
    assert off.returncode != 0 and "not configured" in off.stderr, off.stderr
    # void and restore (issue 15): as the admin endpoints, audited.
    out = subprocess.run([laurels_bin(), "void", "r1", "--reason", "copied answers"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "r1 (seq 1, 2026-W48) is voided" in out.stdout, out.stderr
    assert "laurels: using database" in out.stderr and "using" not in out.stdout
    assert httpx.get(f"{server.url}/v1/leaderboards/2026-W48").json()["entries"] == []
    # Twice: the same answer over HTTP (contract); the command says nothing changed.
    out = subprocess.run([laurels_bin(), "void", "r1", "--reason", "copied answers"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ("laurels: completion r1 (seq 1, 2026-W48) was already voided; "
                          "nothing changed\n"), out.stdout
    out = subprocess.run([laurels_bin(), "restore", "r1"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "is recorded" in out.stdout, out.stderr
    out = subprocess.run([laurels_bin(), "restore", "r1"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "r1 (seq 1, 2026-W48) already counts" in out.stdout, out
    top = httpx.get(f"{server.url}/v1/leaderboards/2026-W48").json()
    assert [(e["user_id"], e["score"]) for e in top["entries"]] == [(3, 4)]
    audit = server.client(ADMIN).get("/v1/admin/audit").json()["entries"]
    assert [(e["action"], e["target"]) for e in audit][:2] == [("restore", "r1"), ("void", "r1")]
    for args in (["void", "nope", "--reason", "x"], ["void", "r1"],
                 ["void", "bad id", "--reason", "x"]):
        bad = subprocess.run([laurels_bin(), *args], env=env, capture_output=True, text=True,
                             timeout=60)
        assert bad.returncode != 0 and "Traceback" not in bad.stderr, bad.stderr


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
                    if b"HELLO" in command.upper():  # RESP3, as Redis 6.2 answers it
                        replies.append(b"%7\r\n+server\r\n+redis\r\n+version\r\n"
                                       b"+6.2.14\r\n+proto\r\n:3\r\n+id\r\n:1\r\n"
                                       b"+mode\r\n+standalone\r\n+role\r\n+master\r\n"
                                       b"+modules\r\n*0\r\n")
                    elif b"INFO" in command.upper():
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


@pytest.mark.slow
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


def test_the_sync_client_against_a_server(serve: Any) -> None:
    """laurels.client.Client over a real socket: the README's hook, paging,
    typed problems."""
    from laurels.client import Client, Forbidden, NotRanked

    server = serve()
    with Client(server.url, INGEST) as laurels:
        for user in (1, 2, 3):  # the platform's "on tutorial completed" hook
            laurels.post_completion(f"lesson-7:user-{user}", user_id=user, points=10 * user)
        assert [e["user_id"] for e in laurels.pages("board", "current", limit=2)] == [3, 2, 1]
        with pytest.raises(Forbidden) as info:
            laurels.void("lesson-7:user-1", "no")  # the ingest token is not an admin's
        assert info.value.code == "forbidden"
    with Client(server.url, token_for(server.env, 9)) as learner, pytest.raises(NotRanked):
        learner.around("current", 9)
