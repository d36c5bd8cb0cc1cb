"""The data dir: its ownership, its private files, and the secrets kept in
it (secrets.json): read, proposed, and saved once the deployment has
agreed (process/deployment.py; docs/security.md)."""

from __future__ import annotations

import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from laurels.process.settings import ConfigError, Secrets, Settings

VALKEY_PASSWORD = "valkey_password"  # noqa: S105 (its key in secrets.json, not a password)
POSTGRES_PASSWORD = "postgres_password"  # noqa: S105 (likewise)


def own_data_dir(folder: Path, create: bool = True) -> None:
    """The data dir, made (0700) if it is missing (unless `create` is off:
    a one-shot command makes nothing), refused if it is a symbolic link, if
    another account owns it or if group or others may write it: whoever could write there could
    plant the secrets laurels reads, or the address of a server it joins
    (docs/security.md). One clear line (ConfigError) says which."""
    if folder.is_symlink():  # a link planted at its path would take the secrets elsewhere
        raise ConfigError(f"invalid LAURELS_DATA_DIR: {folder} is a symbolic link; laurels "
                          "keeps its secrets in a directory of its own: give its real path")
    try:
        st = folder.stat()
    except FileNotFoundError:
        if not create:
            return
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.stat()
    if st.st_uid != os.geteuid():
        raise ConfigError(f"invalid LAURELS_DATA_DIR: {folder} belongs to another account "
                          f"(uid {st.st_uid}); laurels keeps its secrets there: choose a "
                          "directory of your own")
    if stat.S_IMODE(st.st_mode) & 0o022:
        raise ConfigError(f"invalid LAURELS_DATA_DIR: {folder} may be written by group or "
                          f"others (mode {stat.S_IMODE(st.st_mode):04o}); make it yours "
                          f"alone: chmod 700 {folder}")


def private_file(path: Path) -> Path:
    """A file of the data dir laurels reads its secrets or a server's address
    from: refused (ConfigError) if it is a symbolic link, which would lead
    laurels to read, or write its secrets into, another account's file."""
    if path.is_symlink():
        raise ConfigError(f"{path} is a symbolic link: laurels reads and writes only files "
                          "of its own there; remove it")
    return path


def read_stored(path: Path) -> dict[str, Any]:
    """A JSON object of the data dir ({} without the file), not through a link."""
    if not private_file(path).exists():
        return {}
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as fh:
        stored = json.load(fh)
    if not isinstance(stored, dict):
        raise ValueError(f"{path.name} is no JSON object")
    return stored


def write_private(path: Path, value: Any) -> None:
    """Write a JSON file of the data dir, mode 0600, never through a link."""
    fd = os.open(private_file(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)
        json.dump(value, fh)


SECRET_NAMES = ("ingest_token", "admin_token", "user_token_secret", "webhook_secret")


def stored_name(name: str) -> str:
    """A secret's key in secrets.json: its variable's name (LAURELS_INGEST_TOKEN),
    the spelling the docs use (files of older versions, in lower case, are
    read too and written anew)."""
    return f"LAURELS_{name.upper()}"


def stored_secret(stored: dict[str, Any], name: str) -> str | None:
    value = stored.get(stored_name(name), stored.get(name))
    return value if isinstance(value, str) else None


@dataclass
class SecretsProposal:
    """The secrets a `serve` or `projector` would run with, before anything is
    saved: from the environment, else the data dir, else `generated` (new
    ones, saved by `save` once the deployment has agreed: process/deployment.py)."""

    settings: Settings
    secrets: Secrets
    generated: list[str]
    stored: dict[str, Any]

    def save(self, announce: bool = True) -> Secrets:
        path = self.settings.data_dir / "secrets.json"
        old_spelling = any(n in self.stored for n in SECRET_NAMES)
        if not self.generated and not old_spelling:
            return self.secrets
        own_data_dir(self.settings.data_dir)
        for name in SECRET_NAMES:  # one spelling: the variables'
            if name in self.stored:
                self.stored.setdefault(stored_name(name), self.stored.pop(name))
        write_private(path, self.stored)
        shown = [n for n in self.generated if n not in (VALKEY_PASSWORD, POSTGRES_PASSWORD)]
        if announce and shown:
            print(f"laurels: generated secrets saved in {path} (mode 0600):")
            for name in shown:
                print(f"  {stored_name(name)}={self.stored[stored_name(name)]}")
        return self.secrets


def propose_secrets(settings: Settings) -> SecretsProposal:
    """Tokens from the environment, else from the data dir, else new ones
    (not saved yet). With the embedded Valkey, its password too (kept in
    the data dir, never printed: only laurels talks to that server), which
    is saved at once: it concerns this data dir alone."""
    own_data_dir(settings.data_dir, create=False)
    path = settings.data_dir / "secrets.json"
    stored = read_stored(path)
    generated: list[str] = []
    values: dict[str, str] = {}
    names = list(SECRET_NAMES[:3])
    if settings.webhook_url is not None:
        names.append("webhook_secret")
    for name in names:
        env = getattr(settings, name)
        if env is not None:
            values[name] = env.get_secret_value()
            continue
        value = stored_secret(stored, name)
        if value is None:
            value = stored[stored_name(name)] = secrets.token_urlsafe(32)
            generated.append(name)
        values[name] = value
    for name, wanted in ((VALKEY_PASSWORD, settings.redis_url is None),
                         (POSTGRES_PASSWORD, settings.database_url is None)):
        if wanted and name not in stored:
            stored[name] = secrets.token_urlsafe(32)
            own_data_dir(settings.data_dir)
            write_private(path, {**read_stored(path), name: stored[name]})
    return SecretsProposal(settings, Secrets(
        **values, valkey_password=stored.get(VALKEY_PASSWORD, ""),
        postgres_password=stored.get(POSTGRES_PASSWORD, "")), generated, stored)


def resolve_secrets(settings: Settings, announce: bool = True) -> Secrets:
    """Tokens from the environment, else from the data dir (generated and
    saved on first start), as a process that needs no deployment's word."""
    return propose_secrets(settings).save(announce)
