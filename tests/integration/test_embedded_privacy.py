"""Issue 39: the embedded stores belong to the account that runs laurels.

The embedded Valkey listens on 127.0.0.1 only and requires a password;
everything in the data dir is its owner's alone (tested as `nobody`, with
`runuser`, where the suite runs as root; by file modes otherwise); a data
dir of another account, or open to others, and a planted link are refused;
an erasure leaves the Valkey's files once they are written afresh. Each test
starts its own Valkey (the `once` tier: the suite's stores do not matter)."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis

from laurels.core.seasons import week
from laurels.core.validation import ProfileIn
from laurels.process import embedded
from laurels.process.datadir import resolve_secrets
from laurels.process.settings import ConfigError, Settings
from laurels.runtime import Runtime
from tests.helpers import ADMIN, INGEST, USER_SECRET, embedded_dir

pytestmark = pytest.mark.once

SECRET_NAME = "Zebulon Quillfeather"  # found nowhere else in a Valkey's files
AS_NOBODY = os.geteuid() == 0 and shutil.which("runuser") is not None


@pytest.fixture
def data_dir() -> Iterator[Path]:
    folder = embedded_dir() / "data"
    yield folder
    embedded_stop(folder)
    shutil.rmtree(folder.parent, ignore_errors=True)


def embedded_stop(folder: Path) -> None:
    state = folder / "valkey" / embedded.VALKEY_STATE
    if state.exists() and not state.is_symlink():
        pid = int(embedded.read_stored(state).get("pid", 0))
        if pid and psutil.pid_exists(pid):
            psutil.Process(pid).kill()


def settings_for(data_dir: Path, database_url: str) -> Settings:
    return Settings(data_dir=data_dir, database_url=database_url, redis_url=None,
                    ingest_token=INGEST, admin_token=ADMIN, user_token_secret=USER_SECRET)


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", "nobody", "--", *argv], capture_output=True,
                          text=True, timeout=20, check=False)


def modes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): stat.S_IMODE(p.lstat().st_mode)
            for p in [folder, *folder.rglob("*")]}


def rewrite_done(client: redis.Redis, within: float = 20.0) -> None:
    """Wait for BGREWRITEAOF to end: its temporary file vanishes under a listing."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        info = client.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            return
        time.sleep(0.05)
    raise AssertionError("the AOF rewrite did not end")


def test_the_embedded_valkey_is_its_owners_alone(data_dir: Path, database_url: str) -> None:
    settings = settings_for(data_dir, database_url)
    secrets = resolve_secrets(settings, announce=False)
    assert secrets.valkey_password and stat.S_IMODE(
        (data_dir / "secrets.json").stat().st_mode) == 0o600
    servers = embedded.start(settings, secrets.valkey_password)
    try:
        url = servers.redis_url
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        assert redis.Redis.from_url(url).ping()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=port).ping()
        state = embedded.read_stored(data_dir / "valkey" / embedded.VALKEY_STATE)
        listening = {c.laddr.ip for c in psutil.Process(int(state["pid"])).net_connections()
                     if c.status == psutil.CONN_LISTEN}
        assert listening == {"127.0.0.1"}
        redis.Redis.from_url(url).set("probe", SECRET_NAME)
        redis.Redis.from_url(url).bgrewriteaof()
        rewrite_done(redis.Redis.from_url(url))
        for name, mode in modes(data_dir / "valkey").items():
            path = data_dir / "valkey" / name
            if path.is_socket():
                continue
            assert mode == (0o700 if path.is_dir() else 0o600), (name, oct(mode))
        if AS_NOBODY:  # another local account, as the issue tried it
            ping = as_nobody("redis-cli", "-h", "127.0.0.1", "-p", str(port), "get", "probe")
            assert SECRET_NAME not in ping.stdout and "NOAUTH" in ping.stdout + ping.stderr
            for path in (data_dir / "secrets.json", data_dir / "valkey" / "valkey.conf",
                         data_dir / "valkey" / embedded.VALKEY_STATE):
                assert as_nobody("cat", str(path)).returncode != 0, path
            listing = as_nobody("ls", str(data_dir / "valkey"))
            assert listing.returncode != 0
    finally:
        servers.stop()


def test_what_an_older_version_left_is_made_private(data_dir: Path, database_url: str
                                                    ) -> None:
    """An append-only file an older laurels left 0644 in a 0755 folder."""
    old = data_dir / "valkey" / "appendonlydir"
    old.mkdir(parents=True)
    (old / "left.aof").write_text("old")
    (old / "left.aof").chmod(0o644)
    old.chmod(0o755)
    (data_dir / "valkey").chmod(0o755)
    settings = settings_for(data_dir, database_url)
    servers = embedded.start(settings, resolve_secrets(settings, announce=False).valkey_password)
    try:
        assert modes(data_dir / "valkey")["appendonlydir/left.aof"] == 0o600
        assert modes(data_dir / "valkey")["."] == 0o700
    finally:
        servers.stop()


@pytest.mark.parametrize("plant", ["open", "foreign", "secrets link", "state link",
                                   "data dir link"])
def test_a_data_dir_another_account_could_write_is_refused(data_dir: Path, database_url: str,
                                                           plant: str) -> None:
    data_dir.mkdir(mode=0o700, parents=True)
    elsewhere = data_dir.parent / "elsewhere.json"
    settings = settings_for(data_dir, database_url)
    if plant == "open":
        data_dir.chmod(0o777)
        expected = "may be written by group or others"
    elif plant == "foreign":
        if os.geteuid() != 0:
            pytest.skip("only root can give a folder to another account to test this")
        os.chown(data_dir, 65534, -1)
        expected = "belongs to another account"
    elif plant == "data dir link":  # issue 64, point 4: followed, secrets written there
        data_dir.rmdir()
        target = data_dir.parent / "target"
        target.mkdir(mode=0o700)
        data_dir.symlink_to(target)
        elsewhere = target / "secrets.json"
        expected = "is a symbolic link"
    elif plant == "secrets link":
        (data_dir / "secrets.json").symlink_to(elsewhere)
        expected = "secrets.json is a symbolic link"
    else:
        resolve_secrets(settings, announce=False)
        (data_dir / "valkey").mkdir(mode=0o700)
        elsewhere.write_text('{"port": 6379, "pid": 1, "owner": 1}')
        (data_dir / "valkey" / embedded.VALKEY_STATE).symlink_to(elsewhere)
        expected = "is a symbolic link"
    with pytest.raises(ConfigError) as refused:
        secrets = resolve_secrets(settings, announce=False)
        embedded.start(settings, secrets.valkey_password).stop()
    assert expected in str(refused.value) and "\n" not in str(refused.value)
    assert not elsewhere.exists() or "6379" in elsewhere.read_text()  # nothing written there


def files_hold(folder: Path, text: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and text in p.read_bytes()]


async def eventually_files(folder: Path, text: bytes, present: bool) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while bool(files_hold(folder, text)) != present:
        assert loop.time() < deadline, (text, present, files_hold(folder, text))
        await asyncio.sleep(0.1)


async def test_an_erasure_leaves_the_embedded_valkeys_files(data_dir: Path,
                                                           database_url: str) -> None:
    """The append-only file kept an erased learner's name and id until it
    was rewritten; now the files are written afresh after an erasure (a
    loop every minute calls scrub_files; here it is called directly)."""
    settings = settings_for(data_dir, database_url)
    secrets = resolve_secrets(settings, announce=False)
    servers = embedded.start(settings, secrets.valkey_password)
    rt = Runtime(settings, secrets, database_url, servers.redis_url)
    await rt.open(run_migrations=False)
    try:
        svc = rt.derive(clock=lambda: datetime(2026, 12, 2, 12, tzinfo=UTC))
        assert not await svc.erasure.scrub_files()  # no erasure yet: nothing to do
        await svc.rebuilder.run(week(2026, 49))
        await svc.learners.update(4242, ProfileIn(display_name=SECRET_NAME))
        body: dict[str, Any] = {"completion_id": "p1", "user_id": 4242, "points": 5,
                                "completed_at": "2026-12-01T10:00:00Z"}
        await svc.ingestor.record([body])
        folder = data_dir / "valkey"
        await eventually_files(folder, SECRET_NAME.encode(), True)  # appendfsync everysec
        await svc.learners.erase(4242)
        assert await svc.erasure.scrub_files()
        await eventually_files(folder, SECRET_NAME.encode(), False)
        await eventually_files(folder, b"0000000000000004242", False)
        assert not await svc.erasure.scrub_files()  # once per erasure
    finally:
        await rt.close()
        servers.stop()
