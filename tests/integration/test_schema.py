"""db/schema.sql is the schema the migrations make: a database migrated from
empty reads back (from PostgreSQL's catalogue) as exactly that file, so the
current text of every table, index, trigger and function can be read in one
place (issue 41)."""

from __future__ import annotations

import difflib
import uuid

import psycopg

from laurels.db import migrate
from laurels.db.schema import SCHEMA_FILE, current_schema


async def test_a_database_migrated_from_empty_is_schema_sql(pg_server_url: str) -> None:
    name = f"laurels_s_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        url = psycopg.conninfo.make_conninfo(pg_server_url, dbname=name)
        assert await migrate(url), "the migrations ran"
        actual = await current_schema(url)
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    expected = SCHEMA_FILE.read_text()
    diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                        "db/schema.sql", "migrated"))
    assert not diff, f"regenerate with `python -m laurels.db.schema`:\n{diff}"
    assert "CREATE FUNCTION laurels_ingest(" in expected
    assert "CREATE TABLE completions (" in expected


def test_the_text_reads_back_the_catalogue_it_is_given() -> None:
    """The renderer itself: a table, its partition, a sequence and a function."""
    from laurels.db.schema import render

    parts = {
        "tables": [
            {"name": "t", "partitioned": True, "partition_key": "LIST (k)", "parent": "",
             "bound": ""},
            {"name": "t_a", "partitioned": False, "partition_key": "", "parent": "t",
             "bound": "FOR VALUES IN (1)"}],
        "columns": [
            {"table_name": "t", "name": "k", "type": "integer", "not_null": True,
             "default_value": "", "identity": "a"},
            {"table_name": "t", "name": "v", "type": "text", "not_null": False,
             "default_value": "'x'::text", "identity": ""}],
        "constraints": [{"table_name": "t", "name": "t_pkey", "definition": "PRIMARY KEY (k)"}],
        "indexes": [{"table_name": "t", "name": "t_v",
                     "definition": "CREATE INDEX t_v ON ONLY public.t USING btree (v)"}],
        "sequences": [{"name": "s", "type": "bigint", "owned_by": ""}],
        "functions": [{"name": "f", "arguments": "p integer", "result": "integer",
                       "language": "sql", "volatility": "i", "security_definer": False,
                       "strict": False, "settings": [], "body": " SELECT p "},
                      {"name": "g", "arguments": "", "result": "void",
                       "language": "plpgsql", "volatility": "v", "security_definer": False,
                       "strict": True, "settings": ["jit=off", "plan_cache_mode=auto"],
                       "body": "\nBEGIN\nEND\n"}],
        "triggers": [],
        "views": [],
    }
    text = render(parts)
    assert "CREATE SEQUENCE s AS bigint;\n" in text
    assert ("CREATE TABLE t (\n    k integer GENERATED ALWAYS AS IDENTITY NOT NULL,\n"
            "    v text DEFAULT 'x'::text,\n    CONSTRAINT t_pkey PRIMARY KEY (k)\n"
            ") PARTITION BY LIST (k);\nCREATE INDEX t_v") in text
    assert "CREATE TABLE t_a PARTITION OF t FOR VALUES IN (1);" in text
    assert ("CREATE FUNCTION f(p integer) RETURNS integer\n"
            "LANGUAGE sql IMMUTABLE AS $$ SELECT p\n$$;") in text
    assert ("CREATE FUNCTION g() RETURNS void\nLANGUAGE plpgsql STRICT SET jit = off"
            " SET plan_cache_mode = auto AS $$\nBEGIN\nEND\n$$;") in text
