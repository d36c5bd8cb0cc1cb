"""What a one-shot command (every one but serve, projector and demo) may
use: the data dir where a serve ran, the secrets known there (read, never
generated nor saved), the deployment's recorded settings; and what it says
on stderr about where it is, never a secret (issue 26)."""

from __future__ import annotations

from secrets import token_urlsafe
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

import typer

from laurels.cli.common import fail
from laurels.process.datadir import (
    POSTGRES_PASSWORD,
    SECRET_NAMES,
    VALKEY_PASSWORD,
    own_data_dir,
    read_stored,
    stored_secret,
)
from laurels.process.settings import ConfigError, Secrets, Settings

if TYPE_CHECKING:  # the CLI imports the service graph only in the commands that need it
    from laurels.process.embedded import Servers


SECRET_PARAMS = {"password", "pass", "passwd", "sslpassword", "requirepass"}  # in a URL's query


def _shown(url: str) -> str:
    """A store's URL to print: any password replaced by ***, the rest as
    given (the embedded PostgreSQL's unix-socket `host=` readable)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.partition("://")[0] + "://(unparsable URL)"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, _, password = userinfo.partition(":")
        netloc = f"{user}{':***' if password else ''}@{hostport}"
    query = []
    for item in parts.query.split("&") if parts.query else []:
        name, eq, value = item.partition("=")
        if unquote(name).lower() in SECRET_PARAMS:
            query.append(f"{name}=***")
        else:
            query.append(f"{unquote(name)}{eq}{unquote(value)}")
    shown = f"{parts.scheme}://{netloc}{parts.path}"
    return shown + ("?" + "&".join(query) if query else "")


def _using(settings: Settings, servers: Servers) -> None:
    """Which data dir and stores a one-shot command uses: on stderr (stdout
    is the command's answer, which scripts parse), never a secret."""
    def how(kind: str) -> str:
        state = servers.embedded.get(kind)
        return f" (embedded, {state})" if state else ""

    typer.echo(f"laurels: using data dir {settings.data_dir}", err=True)
    typer.echo(f"laurels: using database {_shown(servers.database_url)}{how('database')}, "
               f"Redis {_shown(servers.redis_url)}{how('redis')}", err=True)


def _stored_secrets(settings: Settings) -> dict[str, str]:
    """The secrets file of the data dir ({} without one), read, never written."""
    try:
        own_data_dir(settings.data_dir, create=False)
        stored = read_stored(settings.data_dir / "secrets.json")
    except ConfigError as exc:
        raise fail(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise fail(f"cannot read secrets in {settings.data_dir}: {exc}") from None
    return {k: v for k, v in stored.items() if isinstance(v, str)}


def _known_secrets(settings: Settings) -> tuple[Secrets, set[str]]:
    """The deployment's secrets as far as the environment and the data dir
    know them, never generated nor saved, and the names of those known. A
    one-shot command other than `token` uses none of them (it serves no API
    and sends no webhook), so an unknown one is a throwaway value that no
    token matches (and that the deployment's check leaves out)."""
    stored = _stored_secrets(settings)
    values, known = {}, set()
    for name in SECRET_NAMES:
        env = getattr(settings, name)
        value = env.get_secret_value() if env is not None else stored_secret(stored, name)
        if value is not None:
            known.add(name)
        values[name] = value or token_urlsafe(32)
    return Secrets(**values, valkey_password=stored.get(VALKEY_PASSWORD, ""),
                   postgres_password=stored.get(POSTGRES_PASSWORD, "")), known


def _require_served(settings: Settings) -> None:
    """A one-shot command joins (or restarts) the embedded servers of a data
    dir where `laurels serve` ran; it never starts fresh ones: that would
    answer from an empty database, not the deployment's."""
    from laurels.process import embedded

    absent = embedded.never_started(settings)
    if not absent:
        return
    names = {"PostgreSQL": "LAURELS_DATABASE_URL", "Valkey": "LAURELS_REDIS_URL"}
    raise fail(f"no laurels serve has run in {settings.data_dir} (no embedded "
               f"{' or '.join(absent)} there): set LAURELS_DATA_DIR to the data dir of your "
               f"laurels serve, or {' and '.join(names[a] for a in absent)} to its servers")


async def _adopt_recorded(settings: Settings, database_url: str) -> None:
    """A one-shot command takes the deployment's recorded value of each shared
    setting its environment leaves unset (deployment.unset_recorded), in the
    one settings object of the command, so every part of it reads them."""
    from laurels.db import Database, migrate
    from laurels.process import deployment

    await migrate(database_url)
    db = Database(database_url, min_size=1, max_size=1)
    await db.open()
    try:
        taken = await deployment.unset_recorded(db, settings)
    finally:
        await db.close()
    for field, value in taken.items():
        setattr(settings, field, value)
