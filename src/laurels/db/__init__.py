"""PostgreSQL transport: the one module that runs SQL.

Queries live in `queries.sql` as named blocks (`-- name: x`), schema changes in
`migrations/NNN_*.sql`; both are loaded once with importlib.resources. Every
statement is parameterized.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from importlib import resources
from typing import Any, LiteralString

import psycopg
from psycopg import sql
from psycopg.rows import DictRow, dict_row, tuple_row
from psycopg_pool import AsyncConnectionPool

from laurels.metrics import POOL_WAIT
from laurels.seasons import Season, parse_season

Row = dict[str, Any]
Conn = psycopg.AsyncConnection[DictRow]

_MIGRATION_LOCK = 0x6C617572656C73  # "laurels": serializes concurrent migrators
OUTBOX_CHANNEL = "laurels_outbox"  # NOTIFYed by a trigger on outbox (migration 003)
_cursor_ids = itertools.count()


def _load_queries() -> dict[str, str]:
    text = resources.files(__package__).joinpath("queries.sql").read_text()
    out: dict[str, str] = {}
    for block in re.split(r"^-- name: ", text, flags=re.M)[1:]:
        name, _, body = block.partition("\n")
        out[name.strip()] = body.strip()
    return out


QUERIES = _load_queries()


def q(name: str) -> LiteralString:
    return QUERIES[name]  # loaded from our own file, never from input


# Arrays of a batch as PostgreSQL's text form of an array, built with joins
# done in C: psycopg's ListDumper walks a list in Python, element by element
# (a fifth of the server's samples in batch ingest: seven arrays of 1,000 a
# batch). PostgreSQL parses the same text either way. Strings are quoted, so
# "NULL" stays a string and commas and spaces stay inside their element; a
# list whose text holds a quote or a backslash is given to psycopg as it is.
_NEEDS_ESCAPING = re.compile(r'["\\]')


def int_array(values: list[int]) -> str:
    return "{" + ",".join(map(str, values)) + "}"


def bool_array(values: list[bool]) -> str:
    return "{" + ",".join(["t" if v else "f" for v in values]) + "}"


def text_array(values: list[str]) -> str | list[str]:
    if _NEEDS_ESCAPING.search("".join(values)):
        return values
    return '{"' + '","'.join(values) + '"}' if values else "{}"


def timestamp_array(values: list[datetime]) -> str:
    """Aware datetimes, each as an instant in UTC (RFC 3339 allows offsets up
    to 23:59, PostgreSQL's timestamptz input only up to 15:59)."""
    return ('{"' + '","'.join([v.astimezone(UTC).isoformat() for v in values]) + '"}'
            if values else "{}")


# `SEASON_FILTER(c)` in a query selects the completions of the season named by
# the `season` parameter (on table alias `c`), by the season's period: the
# week's indexed column; a day's or a month's range of `completed_at`
# (indexed, migration 006); everything for `all`.
_SEASON_FILTER = re.compile(r"SEASON_FILTER\((\w*)\)")
_VARIANTS: dict[tuple[str, str], str] = {}


def _filter(period: str, alias: str) -> str:
    col = f"{alias}." if alias else ""
    if period == "week":
        return f"{col}season = %(season)s"
    if period == "all":
        return "true"
    return f"{col}completed_at >= %(season_starts)s AND {col}completed_at < %(season_ends)s"


def statement(name: str, params: dict[str, Any]) -> LiteralString:
    """The text of a named query for these parameters (its season's variant).
    A `season` parameter is a `Season` (parsed once, at the edge) or, where
    only its name is at hand (a stored row's), the name; SQL gets the name."""
    text = q(name)
    season: Season | None = None
    if isinstance(params.get("season"), Season):
        season = params["season"]
        params["season"] = season.name
    if "SEASON_FILTER(" not in text:
        return text
    if season is None:
        season = parse_season(str(params["season"]))
    params["season_starts"], params["season_ends"] = season.starts_at, season.ends_at
    key = (name, season.period)
    variant = _VARIANTS.get(key)
    if variant is None:
        variant = _VARIANTS[key] = _SEASON_FILTER.sub(
            lambda m: _filter(season.period, m.group(1)), text)
    return variant  # built from our own file only


def migrations() -> list[tuple[int, str, str]]:
    folder = resources.files(__package__).joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        m = re.match(r"^(\d+)_.*\.sql$", entry.name)
        if m:
            found.append((int(m.group(1)), entry.name, entry.read_text()))
    return sorted(found)


class Database:
    def __init__(self, url: str, min_size: int = 2, max_size: int = 20,
                 timeout_seconds: float = 5.0) -> None:
        self.url = url
        # A request that finds every connection busy queues for one (psycopg's
        # pool waits); it fails only after `timeout_seconds` (PoolTimeout, 503).
        self.pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            url, min_size=min(min_size, max_size), max_size=max_size, open=False,
            timeout=timeout_seconds,
            kwargs={"row_factory": dict_row, "autocommit": True},
            connection_class=psycopg.AsyncConnection[DictRow],
        )

    async def open(self) -> None:
        await self.pool.open(wait=True, timeout=30)

    async def close(self) -> None:
        await self.pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Conn]:
        """A pooled connection; the wait for it is measured (laurels_pool_wait_seconds)."""
        started = time.perf_counter()
        async with self.pool.connection() as conn:
            POOL_WAIT.labels("postgresql").observe(time.perf_counter() - started)
            yield conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Conn]:
        async with self.connection() as conn, conn.transaction():
            yield conn

    async def getconn(self) -> Conn:
        """A connection held beyond one block (the rebuild's session lock); give
        it back with `putconn`."""
        started = time.perf_counter()
        conn = await self.pool.getconn()
        POOL_WAIT.labels("postgresql").observe(time.perf_counter() - started)
        return conn

    async def putconn(self, conn: Conn) -> None:
        await self.pool.putconn(conn)

    async def fetch(self, name: str, conn: Conn | None = None, **params: Any) -> list[Row]:
        if conn is None:
            async with self.connection() as c:
                return await self.fetch(name, c, **params)
        cur = await conn.execute(statement(name, params), params)
        return await cur.fetchall() if cur.description else []

    async def fetch_one(self, name: str, conn: Conn | None = None, **params: Any) -> Row | None:
        rows = await self.fetch(name, conn, **params)
        return rows[0] if rows else None

    async def run(self, name: str, conn: Conn | None = None, **params: Any) -> int:
        """Run a named statement; the number of rows it touched."""
        if conn is None:
            async with self.connection() as c:
                return await self.run(name, c, **params)
        cur = await conn.execute(statement(name, params), params)
        return cur.rowcount

    async def stream(self, name: str, conn: Conn, batch: int, **params: Any
                     ) -> AsyncIterator[list[Row]]:
        """The rows of a named query, `batch` at a time, from a server-side
        cursor (bounded memory); `conn` must be inside a transaction."""
        async with conn.cursor(name=f"{name}_{next(_cursor_ids)}") as named:
            named.itersize = batch
            await named.execute(statement(name, params), params)
            while rows := await named.fetchmany(batch):
                yield rows

    async def stream_column(self, name: str, conn: Conn, batch: int, **params: Any
                            ) -> AsyncIterator[list[Any]]:
        """Like `stream`, for a query of one column: its values (no row dicts
        to build, for millions of rows)."""
        async with conn.cursor(name=f"{name}_{next(_cursor_ids)}",
                               row_factory=tuple_row) as named:
            named.itersize = batch
            await named.execute(statement(name, params), params)
            while rows := await named.fetchmany(batch):
                yield [row[0] for row in rows]

    @asynccontextmanager
    async def snapshot(self, conn: Conn) -> AsyncIterator[Conn]:
        """A read-only REPEATABLE READ transaction on `conn`: every query in
        it sees the same snapshot."""
        async with conn.transaction():
            await conn.execute(q("snapshot_isolation"))
            yield conn

    async def try_session_lock(self, conn: Conn, key: int) -> bool:
        """A session advisory lock on `conn` (held until `session_unlock` or
        until the connection closes); False at once if another holds it."""
        row = await self.fetch_one("try_session_lock", conn, key=key)
        return bool(row and row["ok"])

    async def session_unlock(self, conn: Conn, key: int) -> None:
        await self.fetch("session_unlock", conn, key=key)

    async def lock_is_free(self, key: int) -> bool:
        """Whether nobody holds the session lock `key` (taken and given back)."""
        async with self.connection() as conn:
            if await self.try_session_lock(conn, key):
                await self.session_unlock(conn, key)
                return True
            return False

    @asynccontextmanager
    async def outbox_listener(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A connection of its own (not pooled) that LISTENs on the outbox
        channel; read its `notifies()`."""
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            await conn.execute(q("listen_outbox"))
            yield conn

    async def ping(self) -> None:
        async with self.pool.connection(timeout=2) as conn:
            await conn.execute("SELECT 1")


def ensure_database(admin_url: str, name: str) -> None:
    """Create database `name` on the server of `admin_url` unless it exists
    (the embedded PostgreSQL's first start)."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if conn.execute(q("database_exists"), {"name": name}).fetchone():
            return
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except psycopg.errors.DuplicateDatabase:
            pass  # created meanwhile by another process


async def migrate(url: str) -> list[str]:
    """Apply pending migrations, each in its own transaction; safe to run concurrently."""
    applied: list[str] = []
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for version, name, sql in migrations():
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                await conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations ("
                    " version integer PRIMARY KEY, name text NOT NULL,"
                    " applied_at timestamptz NOT NULL DEFAULT now())")
                cur = await conn.execute(
                    "SELECT 1 FROM schema_migrations WHERE version = %s", (version,))
                if await cur.fetchone():
                    continue
                await conn.execute(sql)  # our own migration file, never input
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                    (version, name))
                applied.append(name)
    return applied
