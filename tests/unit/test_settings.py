"""Configuration from LAURELS_* variables (docs/contract.md, Configuration)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from laurels.process.datadir import resolve_secrets
from laurels.process.settings import ConfigError, Secrets, Settings, load_settings

pytestmark = pytest.mark.once


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # pydantic-settings matches names case-insensitively: clear every spelling.
    for name in list(os.environ):
        if name.upper().startswith("LAURELS_"):
            monkeypatch.delenv(name, raising=False)


def config_error(monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> str:
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError) as exc:
        load_settings()
    msg = str(exc.value)
    assert var in msg, msg
    assert "\n" not in msg, "one line"
    assert "Traceback" not in msg
    return msg


def test_defaults_match_contract() -> None:
    s = load_settings()
    assert s.port == 8000
    assert s.host == "127.0.0.1"
    assert s.late_grace_seconds == 172800
    assert s.max_future_skew_seconds == 300
    assert s.keep_seasons == 8
    assert s.tie_policy == "shared"
    assert s.close_seasons is True
    assert s.redis_cluster is False
    assert s.database_url is None
    assert s.redis_url is None
    assert s.ingest_token is None
    assert s.admin_token is None
    assert s.user_token_secret is None
    assert isinstance(s.data_dir, Path)


def test_values_are_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAURELS_TIE_POLICY", "first")
    monkeypatch.setenv("LAURELS_PORT", "9123")
    monkeypatch.setenv("LAURELS_HOST", "0.0.0.0")
    monkeypatch.setenv("LAURELS_LATE_GRACE_SECONDS", "0")
    monkeypatch.setenv("LAURELS_CLOSE_SEASONS", "false")
    monkeypatch.setenv("LAURELS_KEEP_SEASONS", "2")
    monkeypatch.setenv("LAURELS_MAX_FUTURE_SKEW_SECONDS", "60")
    monkeypatch.setenv("LAURELS_DATABASE_URL", "postgresql://u:p@localhost:5432/db")
    monkeypatch.setenv("LAURELS_REDIS_URL", "rediss://localhost:6380/0")
    monkeypatch.setenv("LAURELS_REDIS_CLUSTER", "true")
    monkeypatch.setenv("LAURELS_DATA_DIR", str(tmp_path))
    s = load_settings()
    assert s.tie_policy == "first"
    assert s.port == 9123
    assert s.host == "0.0.0.0"
    assert s.late_grace_seconds == 0
    assert s.close_seasons is False
    assert s.keep_seasons == 2
    assert s.max_future_skew_seconds == 60
    assert s.database_url == "postgresql://u:p@localhost:5432/db"
    assert s.redis_url == "rediss://localhost:6380/0"
    assert s.redis_cluster is True
    assert s.data_dir == tmp_path


def test_unknown_tie_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    config_error(monkeypatch, "LAURELS_TIE_POLICY", "bogus")


def test_negative_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    config_error(monkeypatch, "LAURELS_LATE_GRACE_SECONDS", "-1")


def test_mysql_url(monkeypatch: pytest.MonkeyPatch) -> None:
    config_error(monkeypatch, "LAURELS_DATABASE_URL", "mysql://x")


@pytest.mark.parametrize("var,value", [
    ("LAURELS_REDIS_URL", "http://localhost:6379"),
    ("LAURELS_PORT", "abc"),
    ("LAURELS_PORT", "70000"),
    ("LAURELS_PORT", "-1"),
    ("LAURELS_KEEP_SEASONS", "-1"),
    ("LAURELS_MAX_FUTURE_SKEW_SECONDS", "-5"),
    ("LAURELS_LATE_GRACE_SECONDS", "two days"),
    ("LAURELS_CLOSE_SEASONS", "maybe"),
    ("LAURELS_REDIS_CLUSTER", "perhaps"),
])
def test_other_bad_values(monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> None:
    config_error(monkeypatch, var, value)


def test_error_does_not_leak_a_secret_url(monkeypatch: pytest.MonkeyPatch) -> None:
    msg = config_error(monkeypatch, "LAURELS_DATABASE_URL", "mysql://admin:hunter2@db/x")
    assert "hunter2" not in msg


# --- resolve_secrets -----------------------------------------------------------

def settings_in(path: Path) -> Settings:
    return Settings(data_dir=path)


def test_generates_secrets_file_0600(tmp_path: Path) -> None:
    data = tmp_path / "nested" / "data"
    sec = resolve_secrets(settings_in(data), announce=False)
    path = data / "secrets.json"
    assert path.exists()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    values = [sec.ingest_token, sec.admin_token, sec.user_token_secret]
    assert all(len(v) >= 32 for v in values)
    assert len(set(values)) == 3
    stored = json.loads(path.read_text())
    # Under the variables' names (the docs' spelling; issue 40), and the
    # embedded Valkey's and PostgreSQL's passwords (issue 64).
    assert stored == {"LAURELS_INGEST_TOKEN": sec.ingest_token,
                      "LAURELS_ADMIN_TOKEN": sec.admin_token,
                      "LAURELS_USER_TOKEN_SECRET": sec.user_token_secret,
                      "valkey_password": sec.valkey_password,
                      "postgres_password": sec.postgres_password}
    assert len(sec.valkey_password) >= 32 and sec.valkey_password not in values
    assert len(sec.postgres_password) >= 32 and sec.postgres_password not in [
        *values, sec.valkey_password]
    assert stat.S_IMODE(data.stat().st_mode) == 0o700


def test_stable_on_second_call(tmp_path: Path) -> None:
    first = resolve_secrets(settings_in(tmp_path), announce=False)
    before = (tmp_path / "secrets.json").read_text()
    second = resolve_secrets(settings_in(tmp_path), announce=False)
    assert second == first
    assert (tmp_path / "secrets.json").read_text() == before
    assert stat.S_IMODE((tmp_path / "secrets.json").stat().st_mode) == 0o600


def test_environment_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    generated = resolve_secrets(settings_in(tmp_path), announce=False)
    monkeypatch.setenv("LAURELS_ADMIN_TOKEN", "admin-from-env-" + "x" * 20)
    monkeypatch.setenv("LAURELS_USER_TOKEN_SECRET", "jwt-from-env-" + "y" * 24)
    monkeypatch.setenv("LAURELS_DATA_DIR", str(tmp_path))
    sec = resolve_secrets(load_settings(), announce=False)
    assert sec.admin_token == "admin-from-env-" + "x" * 20
    assert sec.user_token_secret == "jwt-from-env-" + "y" * 24
    assert sec.ingest_token == generated.ingest_token


def test_env_tokens_are_not_written(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAURELS_ADMIN_TOKEN", "admin-from-env-secret")
    monkeypatch.setenv("LAURELS_DATA_DIR", str(tmp_path))
    sec = resolve_secrets(load_settings(), announce=False)
    assert sec.admin_token == "admin-from-env-secret"
    text = (tmp_path / "secrets.json").read_text()
    assert "admin-from-env-secret" not in text
    assert sec.ingest_token in text


def test_all_from_env_needs_no_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAURELS_INGEST_TOKEN", "i" * 32)
    monkeypatch.setenv("LAURELS_ADMIN_TOKEN", "a" * 32)
    monkeypatch.setenv("LAURELS_USER_TOKEN_SECRET", "s" * 32)
    monkeypatch.setenv("LAURELS_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("LAURELS_REDIS_URL", "redis://127.0.0.1:6379/0")  # no embedded Valkey
    monkeypatch.setenv("LAURELS_DATABASE_URL", "postgresql://postgres@127.0.0.1/x")  # nor PG
    sec = resolve_secrets(load_settings(), announce=False)
    assert sec == Secrets("i" * 32, "a" * 32, "s" * 32)
    assert not (tmp_path / "d" / "secrets.json").exists()


def test_announce_prints_generated_tokens(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    sec = resolve_secrets(settings_in(tmp_path))
    out = capsys.readouterr().out
    assert f"LAURELS_INGEST_TOKEN={sec.ingest_token}" in out
    assert f"LAURELS_ADMIN_TOKEN={sec.admin_token}" in out
    assert f"LAURELS_USER_TOKEN_SECRET={sec.user_token_secret}" in out
    resolve_secrets(settings_in(tmp_path))
    assert capsys.readouterr().out == "", "nothing new generated, nothing printed"


def test_webhook_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAURELS_WEBHOOK_URL", "")  # set but empty: no webhooks
    assert load_settings().webhook_url is None
    config_error(monkeypatch, "LAURELS_WEBHOOK_URL", "ftp://hooks.test/x")
    monkeypatch.setenv("LAURELS_WEBHOOK_URL", "https://hooks.test/x")
    # An empty key would sign nothing.
    config_error(monkeypatch, "LAURELS_WEBHOOK_SECRET", "")
    monkeypatch.setenv("LAURELS_WEBHOOK_SECRET", "s" * 32)
    assert load_settings().webhook_url == "https://hooks.test/x"
    config_error(monkeypatch, "LAURELS_PERIODS", "week,fortnight")
    monkeypatch.setenv("LAURELS_PERIODS", "all,day")
    assert load_settings().periods == ("week", "day", "all")
    config_error(monkeypatch, "LAURELS_CORS_ORIGINS", "not an origin")


@pytest.mark.parametrize(("var", "url"), [
    ("LAURELS_DATABASE_URL", "postgresql://bob:hunter2@[::1/db"),
    ("LAURELS_DATABASE_URL", "postgresql://bob:hunter2 x@host/db"),
    ("LAURELS_REDIS_URL", "redis://:hunter2@host:12x34/0"),
    ("LAURELS_REDIS_URL", "rediss://bob:hunter2@[::1/0"),
])
def test_a_url_that_cannot_be_parsed_is_refused_without_its_password(
        monkeypatch: pytest.MonkeyPatch, var: str, url: str) -> None:
    """libpq's and urllib's own messages quote the URL, password and all:
    the start refuses it in one line of its own."""
    msg = config_error(monkeypatch, var, url)
    assert "hunter2" not in msg and var in msg and "cannot" not in msg.split(":")[0]


def test_secrets_of_an_older_version_are_read_and_written_anew(tmp_path: Path) -> None:
    """secrets.json once held lower-case keys (webhook_secret) where the docs
    speak of LAURELS_WEBHOOK_SECRET: they are read, and written anew under
    the variables' names."""
    (tmp_path / "secrets.json").write_text(json.dumps(
        {"ingest_token": "i" * 32, "admin_token": "a" * 32, "user_token_secret": "s" * 32}))
    (tmp_path / "secrets.json").chmod(0o600)
    sec = resolve_secrets(Settings(data_dir=tmp_path, redis_url="redis://127.0.0.1:6379/0",
                                   database_url="postgresql://postgres@127.0.0.1/x"),
                          announce=False)
    assert (sec.ingest_token, sec.admin_token) == ("i" * 32, "a" * 32)
    assert json.loads((tmp_path / "secrets.json").read_text()) == {
        "LAURELS_INGEST_TOKEN": "i" * 32, "LAURELS_ADMIN_TOKEN": "a" * 32,
        "LAURELS_USER_TOKEN_SECRET": "s" * 32}
