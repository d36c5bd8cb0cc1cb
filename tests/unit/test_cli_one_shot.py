"""One-shot commands cannot quietly use the wrong place (issue 26): where no
`laurels serve` ran they refuse in one line, start nothing and write
nothing; they say on stderr which data dir and stores they use, with no
password. In process (typer's runner): every path here stops before a store
is reached; tests/acceptance/test_cli.py runs the real processes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jwt
import pytest
from typer.testing import CliRunner, Result

from laurels.cli import app
from laurels.cli.one_shot import _known_secrets, _shown
from laurels.process import embedded
from laurels.process.settings import Settings

pytestmark = pytest.mark.once

SECRET = "a-user-token-secret-0123456789abcdef"
STORE_COMMANDS = [["void", "c1", "--reason", "copied"], ["restore", "c1"],
                  ["void", "--user", "1", "--reason", "x"], ["restore", "--user", "1"],
                  ["erase", "1"], ["suspend", "1", "--reason", "x"], ["unsuspend", "1"],
                  ["audit"], ["webhooks"], ["leagues", "current"],
                  ["webhooks", "retry", "6f1c1a52-9f5e-4d39-9c4b-2a3e8b3f7d11"],
                  ["rebuild-status", "6f1c1a52-9f5e-4d39-9c4b-2a3e8b3f7d11"],
                  ["verify", "--season", "current"], ["rebuild", "--season", "current"],
                  ["migrate"]]


@pytest.fixture(autouse=True)
def no_laurels_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("LAURELS_") and not name.startswith("LAURELS_TEST_"):
            monkeypatch.delenv(name)


def run(data_dir: Path, *args: str, **env: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"LAURELS_DATA_DIR": str(data_dir), **env})


def one_line(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.mark.parametrize("args", STORE_COMMANDS)
def test_a_store_command_refuses_a_data_dir_where_no_serve_ran(tmp_path: Path,
                                                               args: list[str]) -> None:
    fresh = tmp_path / "fresh"
    result = run(fresh, *args)
    assert result.exit_code != 0 and result.stdout == ""
    line = one_line(result)
    assert line.startswith(f"laurels: no laurels serve has run in {fresh} ")
    for name in ("LAURELS_DATA_DIR", "LAURELS_DATABASE_URL", "LAURELS_REDIS_URL"):
        assert name in line
    assert not fresh.exists()  # nothing started, no secret generated
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(empty, *args).exit_code != 0
    assert list(empty.iterdir()) == []


def test_only_the_missing_store_is_named(tmp_path: Path) -> None:
    url = "postgresql://laurels:pg-password-not-shown@db.invalid/laurels"
    result = run(tmp_path, "verify", "--season", "current", LAURELS_DATABASE_URL=url)
    line = one_line(result)
    assert result.exit_code != 0
    assert "no embedded Valkey there" in line and "LAURELS_REDIS_URL" in line
    assert "LAURELS_DATABASE_URL" not in line and "pg-password-not-shown" not in line
    assert list(tmp_path.iterdir()) == []


def test_token_refuses_to_sign_with_a_fresh_secret(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    result = run(fresh, "token", "--user", "42")
    line = one_line(result)
    assert result.exit_code != 0 and result.stdout == ""
    assert line.startswith(f"laurels: no laurels serve has run in {fresh} ")
    assert "LAURELS_DATA_DIR" in line and "LAURELS_USER_TOKEN_SECRET" in line
    assert not fresh.exists()


def test_token_where_serve_ran_with_the_secret_in_the_environment(tmp_path: Path) -> None:
    # An embedded serve ran here, its secrets came from the environment: no file.
    (tmp_path / "postgres").mkdir()
    (tmp_path / "postgres" / "PG_VERSION").write_text("17\n")
    line = one_line(run(tmp_path, "token", "--user", "42"))
    assert "no user token secret in" in line and "LAURELS_USER_TOKEN_SECRET" in line
    assert not (tmp_path / "secrets.json").exists()


def test_token_prints_the_token_alone_on_stdout(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    result = run(fresh, "token", "--user", "42", LAURELS_USER_TOKEN_SECRET=SECRET)
    assert result.exit_code == 0, result.stderr
    token = result.stdout.strip()
    assert result.stdout == token + "\n"
    assert jwt.decode(token, SECRET, algorithms=["HS256"])["sub"] == "42"
    line = one_line(result)
    assert f"data dir {fresh}" in line and "from LAURELS_USER_TOKEN_SECRET" in line
    assert SECRET not in result.stderr and token not in result.stderr
    assert not fresh.exists()


def test_token_signs_with_the_secret_of_the_data_dir(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.json"
    secrets.write_text(json.dumps({"ingest_token": "i" * 20, "admin_token": "a" * 20,
                                   "user_token_secret": SECRET}))
    before = secrets.read_bytes()
    result = run(tmp_path, "token", "--user", "7", "--ttl-seconds", "60")
    assert result.exit_code == 0, result.stderr
    assert jwt.decode(result.stdout.strip(), SECRET, algorithms=["HS256"])["sub"] == "7"
    assert f"from {secrets}" in one_line(result) and SECRET not in result.stderr
    assert secrets.read_bytes() == before


def test_a_data_dir_where_serve_ran_is_recognized(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert embedded.never_started(settings) == ["PostgreSQL", "Valkey"]
    (tmp_path / "postgres").mkdir()
    (tmp_path / "postgres" / "PG_VERSION").write_text("17\n")
    assert embedded.never_started(settings) == ["Valkey"]
    (tmp_path / "valkey").mkdir()
    (tmp_path / "valkey" / embedded.VALKEY_STATE).write_text("{}")
    assert embedded.never_started(settings) == []
    given = Settings(data_dir=tmp_path / "none", database_url="postgresql://h/d",
                     redis_url="redis://h:6379/0")
    assert embedded.never_started(given) == []  # nothing embedded is needed


def test_known_secrets_are_read_never_written(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "fresh")
    (first, known), (second, _) = _known_secrets(settings), _known_secrets(settings)
    assert not (tmp_path / "fresh").exists()
    assert first.admin_token and first.admin_token != second.admin_token  # throwaways
    assert known == set()  # the deployment's check leaves throwaways out
    (tmp_path / "fresh").mkdir()
    (tmp_path / "fresh" / "secrets.json").write_text(json.dumps({"admin_token": "stored"}))
    assert _known_secrets(settings)[0].admin_token == "stored"
    (tmp_path / "fresh" / "secrets.json").write_text(json.dumps(
        {"LAURELS_ADMIN_TOKEN": "stored anew"}))  # the variables' spelling
    assert _known_secrets(settings)[0].admin_token == "stored anew"
    assert _known_secrets(settings)[1] == {"admin_token"}


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://postgres:@/laurels?host=/tmp/xyz", "postgresql://postgres@/laurels?host=/tmp/xyz"),
    ("postgresql://postgres@/laurels?host=%2Ftmp%2Fxyz",
     "postgresql://postgres@/laurels?host=/tmp/xyz"),
    ("postgresql://app:s3cret@db.example:5432/laurels?sslmode=require",
     "postgresql://app:***@db.example:5432/laurels?sslmode=require"),
    ("postgresql://db.example/laurels?user=app&password=s3cret",
     "postgresql://db.example/laurels?user=app&password=***"),
    ("redis://:s3cret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
    ("rediss://default:s3c%40ret@cache.example:6380/2", "rediss://default:***@cache.example:6380/2"),
    ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    ("unix:///run/valkey.sock?db=1&password=s3cret", "unix:///run/valkey.sock?db=1&password=***"),
    ("redis://[::1:6379/0", "redis://(unparsable URL)"),
])
def test_urls_are_shown_without_a_password(url: str, shown: str) -> None:
    assert _shown(url) == shown
    assert "s3c" not in _shown(url)
