"""One-shot commands as real processes (issue 26): where no `laurels serve`
ran they refuse in one line and leave the data dir as it was; with explicit
URLs they work on a fresh machine and say on stderr which data dir and
stores they use, without a password. (Joining a running serve's embedded
servers, and voiding twice: tests/acceptance/test_http.py.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from tests.helpers import ADMIN, INGEST, completion, laurels_bin, server_env, wait_until

pytestmark = [pytest.mark.once, pytest.mark.slow]

PASSWORD = "pg-password-not-shown"


def bare_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAURELS_")}
    return {**env, "LAURELS_DATA_DIR": str(data_dir), **extra}


def laurels(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([laurels_bin(), *args], env=env, capture_output=True, text=True,
                          timeout=120)


def test_one_shot_commands_refuse_where_no_serve_ran(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    for args, names in ((["void", "live-cheat:99", "--reason", "cheating"],
                         ("LAURELS_DATABASE_URL", "LAURELS_REDIS_URL")),
                        (["verify", "--season", "current"],
                         ("LAURELS_DATABASE_URL", "LAURELS_REDIS_URL")),
                        (["token", "--user", "42"], ("LAURELS_USER_TOKEN_SECRET",))):
        out = laurels(bare_env(data_dir), *args)
        assert out.returncode != 0 and out.stdout == "", out
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
        assert lines[0].startswith(f"laurels: no laurels serve has run in {data_dir} "), lines
        for name in ("LAURELS_DATA_DIR", *names):
            assert name in lines[0], (name, lines[0])
        # No embedded server was started, no secret generated.
        assert list(data_dir.iterdir()) == [], list(data_dir.iterdir())


def with_password(url: str) -> tuple[str, str]:
    """The test database's URL with a password (ignored by a server that
    trusts its clients), and the password that must never be printed."""
    parts = urlsplit(url)
    if parts.password:
        return url, parts.password
    user = parts.username or "postgres"
    return parts._replace(netloc=f"{user}:{PASSWORD}@{parts.hostname or ''}"
                          + (f":{parts.port}" if parts.port else "")).geturl(), PASSWORD


def test_explicit_urls_work_on_a_fresh_machine_and_are_shown(
        tmp_path: Path, database_url: str, redis_url: str, key_prefix: str) -> None:
    url, password = with_password(database_url)
    data_dir = tmp_path / "fresh"
    env = server_env(url, redis_url, key_prefix, data_dir)
    for name in ("LAURELS_INGEST_TOKEN", "LAURELS_ADMIN_TOKEN", "LAURELS_USER_TOKEN_SECRET"):
        del env[name]  # a fresh machine: no secrets anywhere, none generated
    out = laurels(env, "migrate")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "laurels: schema is up to date\n"
    lines = out.stderr.strip().splitlines()
    assert lines[0] == f"laurels: using data dir {data_dir}", lines
    assert lines[1].startswith("laurels: using database postgresql://"), lines
    assert f", Redis {redis_url}" in lines[1] and "embedded" not in lines[1], lines
    assert len(lines) == 2 and password not in out.stderr + out.stdout, out.stderr
    assert not data_dir.exists()  # no secrets file, no embedded server
    out = laurels(env, "verify", "--season", "current")
    assert out.returncode == 0 and "consistent" in out.stdout, out.stderr
    assert "laurels: using database" in out.stderr and "using" not in out.stdout
    assert password not in out.stderr + out.stdout
    out = laurels(env, "void", "nope", "--reason", "x")
    assert out.returncode == 1 and out.stderr.strip().splitlines()[-1] == \
        "laurels: no completion nope", out.stderr
    assert not data_dir.exists()


def test_rebuild_and_verify_name_a_board_of_a_kind(
        tmp_path: Path, database_url: str, redis_url: str, key_prefix: str) -> None:
    """`--board` (CONTRACT.md, "Boards of a course, a track or a skill"):
    the board of a defined kind is rebuilt and verified; an undefined kind,
    a malformed board or a period the kind lacks is one line and exit 1.
    `laurels kinds` lists, defines and deletes kinds (a table, or --json)."""
    env = server_env(database_url, redis_url, key_prefix, tmp_path / "data")
    assert laurels(env, "migrate").returncode == 0
    out = laurels(env, "kinds", "define", "course", "--periods", "week,all", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["periods"] == ["week", "all"]
    out = laurels(env, "kinds", "define", "course", "--metric", "completions")
    assert out.returncode == 1 and "metric" in out.stderr and out.stdout == "", out
    out = laurels(env, "kinds", "--json")
    assert [k["kind"] for k in json.loads(out.stdout)["kinds"]] == ["course"]
    assert "course" in laurels(env, "kinds").stdout  # a table for people
    out = laurels(env, "rebuild", "--season", "all", "--board", "course:python-101")
    assert out.returncode == 0, out.stderr
    assert "all of course:python-101 rebuilt" in out.stdout
    out = laurels(env, "verify", "--season", "current", "--board", "course:python-101")
    assert out.returncode == 0 and "consistent" in out.stdout, out.stderr
    for board, season, said in (("skill:sql", "current", "no board kind skill is defined"),
                                ("course", "current", "board must be global or a tag"),
                                ("course:x", "current-day", "day")):
        out = laurels(env, "verify", "--season", season, "--board", board)
        assert out.returncode != 0 and out.stdout == "", out
        last = out.stderr.strip().splitlines()[-1]
        assert last.startswith("laurels: ") and said in last and "Traceback" not in out.stderr
    # Issue 65, point 6: a learner's void on one board (its season, its completions).
    out = laurels(env, "void", "--user", "1", "--season", "current", "--board",
                  "course:python-101", "--reason", "copied", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"user_id": 1, "voided": 0}
    out = laurels(env, "restore", "--user", "1", "--board", "course:python-101")
    assert out.returncode == 0 and "on course:python-101" in out.stdout, out
    for args, said in ((["void", "--user", "1", "--board", "skill:x", "--reason", "x"],
                        "no board kind skill"),
                       (["void", "c1", "--board", "course:x", "--reason", "x"],
                        "--board goes with --user")):
        out = laurels(env, *args)
        assert out.returncode != 0 and said in out.stderr.strip().splitlines()[-1], out
    out = laurels(env, "kinds", "delete", "course")
    assert out.returncode == 0 and "deleted" in out.stdout, out.stderr
    out = laurels(env, "verify", "--season", "current", "--board", "course:python-101")
    assert out.returncode != 0 and "no board kind course" in out.stderr


def test_every_admin_action_has_its_command(tmp_path: Path, database_url: str, redis_url: str,
                                            key_prefix: str, serve: Any) -> None:
    """Issue 44 (CONTRACT.md, CLI): erase, suspend, unsuspend, a learner's
    void and restore, audit, webhooks and their retry, leagues and their
    cohorts; each a table (or a line) for people and --json for scripts,
    each refusal one line."""
    shared = {"LAURELS_CLOSE_SEASONS": "false", "LAURELS_LEAGUE_TIERS": "bronze,silver",
              "LAURELS_LEAGUE_SIZE": "5", "LAURELS_LEAGUE_PROMOTE": "1",
              "LAURELS_LEAGUE_DEMOTE": "1",
              "LAURELS_WEBHOOK_URL": "http://127.0.0.1:9/hooks",
              "LAURELS_WEBHOOK_SECRET": "a-webhook-secret-0123456789abcdef"}
    env = {**server_env(database_url, redis_url, key_prefix, tmp_path / "cli"), **shared}
    assert laurels(env, "migrate").returncode == 0
    server = serve(**shared)
    c = server.client(INGEST)
    at = "2026-11-24T10:00:00Z"
    resp = c.post("/v1/completions/batch", json={"completions": [
        completion(f"k{n}", 1, 5, at) for n in range(3)] + [completion("k9", 2, 1, at)]})
    assert resp.status_code == 200, resp.text

    def ok(*args: str) -> Any:
        out = laurels(env, *args, "--json")
        assert out.returncode == 0 and "Traceback" not in out.stderr, out
        return json.loads(out.stdout)

    assert ok("void", "--user", "1", "--season", "2026-W48", "--reason", "copied") == {
        "user_id": 1, "voided": 3}
    top = c.get("/v1/leaderboards/2026-W48").json()
    assert [e["user_id"] for e in top["entries"]] == [2]
    assert ok("restore", "--user", "1") == {"user_id": 1, "restored": 3}
    assert ok("suspend", "2", "--reason", "spam") == {"user_id": 2, "suspended": True}
    assert ok("unsuspend", "2") == {"user_id": 2, "suspended": False}
    actions = [(e["action"], e["target"]) for e in ok("audit", "--limit", "4")["entries"]]
    assert actions == [("unsuspend", "2"), ("suspend", "2"), ("restore", "1"), ("void", "1")]
    assert "unsuspend" in laurels(env, "audit").stdout  # a table for people
    summary = ok("leagues", "2026-W48")  # (decided by the serve's loop: its grace is over)
    assert summary["season"] == "2026-W48" and summary["tiers"][0]["members"] == 2
    cohorts = ok("leagues", "2026-W48", "--cohorts")["cohorts"]
    assert [(k["cohort_id"], k["members"]) for k in cohorts] == [("2026-W48.0.0", 2)]
    deliveries = ok("webhooks", "--status", "pending")["deliveries"]
    assert {d["type"] for d in deliveries} >= {"completion.voided", "completion.restored"}
    # Issue 65, point 10: the table shows every id whole (`webhooks retry` needs
    # it), and a pending delivery as waiting or retrying.
    table = laurels(env, "webhooks", "--status", "pending").stdout
    assert all(d["id"] in table for d in deliveries), table
    assert "pending: waiting" in table or "pending: retrying" in table, table
    assert ok("webhooks", "retry", deliveries[0]["id"]) == {"id": deliveries[0]["id"],
                                                           "retried": True}
    started = server.client(ADMIN).post("/v1/admin/leaderboards/2026-W48/rebuild").json()
    status = wait_until(lambda: (b := ok("rebuild-status", started["rebuild_id"]))["status"]
                        == "succeeded" and b, 30, "the rebuild to switch")
    assert (status["season"], status["rebuild_id"]) == ("2026-W48", started["rebuild_id"])
    assert ok("erase", "2") == {"user_id": 2, "erased": True}
    again = laurels(env, "erase", "2")  # issue 65, point 8: said "erased" and audited twice
    assert again.returncode == 0 and again.stdout == "laurels: learner 2 was erased already\n"
    assert [e["action"] for e in ok("audit")["entries"]].count("erase") == 1
    assert c.get("/v1/leaderboards/2026-W48").json()["total"] == 1
    # Refusals: one line, exit non-zero, nothing on stdout.
    for args, said in ((["suspend", "2", "--reason", "x"], "erased"),
                       (["void", "--user", "1"], "reason"),
                       (["void", "k1", "--user", "1", "--reason", "x"], "--user"),
                       (["webhooks", "retry", "not-a-uuid"], "UUID"),
                       (["rebuild-status", "6f1c1a52-9f5e-4d39-9c4b-2a3e8b3f7d11"], "no rebuild"),
                       (["webhooks", "--status", "lost"], "--status"),
                       (["leagues", "2026-11"], "week"),
                       (["leagues", "2026-W99"], "no ISO week 99"),
                       (["void", "--user", "1", "--season", "bogus", "--reason", "x"],
                        "season must be"),
                       (["leagues", "2026-W48", "--cohorts", "--tier", "gold"], "tier")):
        out = laurels(env, *args)
        assert out.returncode != 0 and out.stdout == "", (args, out)
        last = out.stderr.strip().splitlines()[-1]
        assert last.startswith("laurels: ") and said in last, (args, last)
        assert "Traceback" not in out.stderr


def test_verify_all_walks_every_season_of_every_board_archives_included(
        tmp_path: Path, database_url: str, redis_url: str, key_prefix: str) -> None:
    """`laurels verify --all` (issue 63): every open and closed season of
    every board, with a progress bar and a summary; exit 1 naming the season
    whose archive differs from PostgreSQL. `--season` and `--all` together,
    or neither: one line, and a failing exit."""
    import asyncio
    from datetime import UTC, datetime

    from laurels.core.seasons import parse_season
    from laurels.process.settings import Secrets
    from laurels.runtime import Runtime
    from tests.helpers import USER_SECRET, make_settings

    env = server_env(database_url, redis_url, key_prefix, tmp_path / "data")
    assert laurels(env, "migrate").returncode == 0

    async def record() -> None:
        settings = make_settings(tmp_path, database_url, redis_url, key_prefix)
        rt = Runtime(settings, Secrets(INGEST, ADMIN, USER_SECRET), database_url, redis_url)
        await rt.open(run_migrations=False)
        try:
            svc = rt.derive(clock=lambda: datetime(2026, 11, 24, 12, tzinfo=UTC))
            await svc.board_kinds.define("course", {})
            await svc.ingestor.record([
                {"completion_id": f"c{u}", "user_id": u, "points": 10 * u,
                 "completed_at": "2026-11-17T10:00:00Z", "tags": ["course:a"]}
                for u in (1, 2, 3)])
            assert await svc.lifecycle.finalize(parse_season("2026-W47", zone="UTC"))
            course = parse_season("course:a/points/UTC/2026-W47", zone="UTC")
            await svc.rebuilder.run(course)
            assert course in await svc.lifecycle.finalize_due(
                datetime(2026, 12, 7, tzinfo=UTC))
            early = rt.derive(clock=lambda: datetime(2026, 11, 15, tzinfo=UTC))
            for cid in ("sprint", "later"):  # a decided challenge, and one running
                await early.challenges.define(cid, {
                    "title": cid, "board": "course:a", "starts_at": "2026-11-16T00:00:00Z",
                    "ends_at": "2026-11-23T00:00:00Z" if cid == "sprint" else
                    "2026-12-01T00:00:00Z", "rewards": [{"from": 1, "to": 1, "reward": "gold"}]})
            assert await svc.decider.decide_due() == ["sprint"]
        finally:
            await rt.close()

    asyncio.run(record())
    out = laurels(env, "verify", "--all")
    assert out.returncode == 0, out.stderr
    summary = out.stdout.strip().splitlines()[-1]
    assert summary.startswith("laurels: 4 seasons, challenges and team boards verified "
                              "(2 closed"), out.stdout
    assert summary.endswith(": 4 consistent, 0 NOT"), out.stdout
    with psycopg.connect(database_url, autocommit=True) as conn:  # a reward not of its rank
        conn.execute("UPDATE challenge_results SET reward = 'gold' WHERE user_id = 2")
    out = laurels(env, "verify", "--all")
    assert out.returncode == 1 and "challenge sprint: 1 of 3 learners differ" in out.stdout, out
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE challenge_results SET reward = NULL WHERE user_id = 2")
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE season_standings SET score = 5 WHERE user_id = 3"
                     " AND season LIKE 'course:%'")
    out = laurels(env, "verify", "--all")
    assert out.returncode == 1, out
    assert "2026-W47 of course:a: " in out.stdout and "archive: score" in out.stdout, out.stdout
    assert ": 3 consistent, 1 NOT" in out.stdout
    for args in (["--all", "--season", "current"], []):
        out = laurels(env, "verify", *args)
        assert out.returncode != 0 and out.stdout == "" and "Traceback" not in out.stderr, out
        assert "--season S (with --board B), or --all" in out.stderr.strip().splitlines()[-1]
