"""The embedded PostgreSQL's administration, as its owner: laurels' database
made on its first start, a password required of a cluster an older laurels
initialized with `trust` (embedded/postgres.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from psycopg import sql

from laurels.db import q


class WrongPassword(Exception):
    """The embedded PostgreSQL does not take the data dir's password."""


@contextlib.contextmanager
def _admin(admin_url: str) -> Iterator[psycopg.Connection[Any]]:
    try:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
            yield conn
    except psycopg.OperationalError as exc:
        if "password authentication failed" in str(exc):
            raise WrongPassword from None
        raise


def ensure_database(admin_url: str, name: str) -> None:
    """Create database `name` on the server of `admin_url` unless it exists
    (the embedded PostgreSQL's first start)."""
    with _admin(admin_url) as conn:
        if conn.execute(q("database_exists"), {"name": name}).fetchone():
            return
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except psycopg.errors.DuplicateDatabase:
            pass  # created meanwhile by another process


def require_password(admin_url: str, role: str, password: str,
                     require: Callable[[], None]) -> None:
    """Give `role` its password, then `require()` it (the embedded
    PostgreSQL's pg_hba.conf rewritten) and reload the server's settings: a
    cluster an older laurels initialized with `trust`."""
    with _admin(admin_url) as conn:
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
            sql.Identifier(role), sql.Literal(password)))
        require()
        conn.execute(q("reload_settings"))
