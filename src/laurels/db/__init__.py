"""PostgreSQL transport: the one module that runs SQL.

Queries live in `queries.sql` as named blocks (`-- name: x`), schema changes in
`migrations/NNN_*.sql`; both are loaded once with importlib.resources. Every
statement is parameterized.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, LiteralString

import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from laurels.metrics import POOL_WAIT

Row = dict[str, Any]
Conn = psycopg.AsyncConnection[DictRow]

_MIGRATION_LOCK = 0x6C617572656C73  # "laurels": serializes concurrent migrators


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
        cur = await conn.execute(q(name), params)
        return await cur.fetchall() if cur.description else []

    async def fetch_one(self, name: str, conn: Conn | None = None, **params: Any) -> Row | None:
        rows = await self.fetch(name, conn, **params)
        return rows[0] if rows else None

    async def execute(self, name: str, conn: Conn | None = None, **params: Any) -> int:
        if conn is None:
            async with self.connection() as c:
                return await self.execute(name, c, **params)
        cur = await conn.execute(q(name), params)
        return cur.rowcount

    async def ping(self) -> None:
        async with self.pool.connection(timeout=2) as conn:
            await conn.execute("SELECT 1")


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
