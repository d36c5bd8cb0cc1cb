"""Migration 038 (versioned function names) on a database of the previous
schema holding data: every row is kept as it was, every trigger runs its
`_v1` function, the previous version's names still work beside the new
ones (a rolling deploy), and each trigger fires once a statement or row,
never twice and never not at all, also for a writer in flight while the
migration runs."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from laurels.core.seasons import parse_season
from laurels.db import migrate, migrations
from laurels.process.settings import Secrets
from laurels.runtime import Runtime
from tests.helpers import ADMIN, INGEST, USER_SECRET, eventually, make_settings, with_database

VERSION = 38
FILE = "038_versioned_functions.sql"
TRIGGERS = {  # (table, trigger): its function from 038 on
    ("audit", "audit_append_only"): "laurels_audit_is_append_only_v1",
    ("audit", "audit_no_truncate"): "laurels_audit_is_append_only_v1",
    ("completions", "league_join"): "laurels_league_join_v1",
    ("completions", "league_join_on_restore"): "laurels_league_join_v1",
    ("notifications", "notification_refreshed_webhook"): "laurels_notification_webhook_v1",
    ("notifications", "notification_webhook"): "laurels_notifications_webhook_v1",
    ("outbox", "outbox_notify"): "laurels_outbox_notify_v1",
}
# The previous version's call of an ingest (its ingest_batch, by the old name).
OLD_INGEST = ("SELECT status, seq FROM laurels_ingest(%s::text[], %s::bigint[], %s::int[],"
              " %s::timestamptz[], now(), %s::text[], %s::boolean[], %s::text[], %s::text[])")
AT = "2026-11-02T10:00:00Z"  # 2026-W45


def old_ingest(ids: list[str], users: list[int]) -> tuple[str, tuple[Any, ...]]:
    n = len(ids)
    return OLD_INGEST, (ids, users, [3] * n, [AT] * n, ["2026-W45"] * n, [False] * n,
                        [""] * n, [""] * n)


async def migrated_before(conn: psycopg.AsyncConnection[Any], version: int) -> None:
    """The migrations before `version`, as `migrate` applies them."""
    await conn.execute("CREATE TABLE schema_migrations (version integer PRIMARY KEY,"
                       " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
    for v, file, text in migrations():
        if v < version:
            async with conn.transaction():
                await conn.execute(text)
                await conn.execute("INSERT INTO schema_migrations VALUES (%s, %s)", (v, file))


@pytest.fixture
async def before(pg_server_url: str) -> AsyncIterator[str]:
    """A database at migration 037 whose leagues and webhooks are on."""
    name = f"laurels_t_m038_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(pg_server_url, autocommit=True) as admin:
        await admin.execute(f'CREATE DATABASE "{name}"')
    url = with_database(pg_server_url, name)
    try:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await migrated_before(conn, VERSION)
            await conn.execute("INSERT INTO league_settings (enabled) VALUES (true)")
            await conn.execute("INSERT INTO webhook_settings (enabled) VALUES (true)")
            await conn.execute("SELECT laurels_completions_partition('2026-11-01')")
        yield url
    finally:
        async with await psycopg.AsyncConnection.connect(pg_server_url,
                                                         autocommit=True) as admin:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def contents(conn: psycopg.AsyncConnection[Any]) -> dict[str, tuple[int, str]]:
    """Every table's rows (a count and a digest of their text), found in the
    catalogue: a table added later is covered without a change here."""
    cur = await conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                             " AND tablename <> 'schema_migrations' ORDER BY 1")
    out = {}
    for (table,) in await cur.fetchall():
        cur = await conn.execute(sql.SQL(
            "SELECT count(*), coalesce(md5(string_agg(t::text, ',' ORDER BY t::text)), '')"
            " FROM {} t").format(sql.Identifier(table)))
        row = await cur.fetchone()
        assert row is not None
        out[table] = (int(row[0]), str(row[1]))
    return out


async def triggers(conn: psycopg.AsyncConnection[Any]) -> dict[tuple[str, str], str]:
    cur = await conn.execute("SELECT c.relname, t.tgname, p.proname FROM pg_trigger t"
                             " JOIN pg_class c ON c.oid = t.tgrelid"
                             " JOIN pg_proc p ON p.oid = t.tgfoid WHERE NOT t.tgisinternal")
    return {(r[0], r[1]): r[2] for r in await cur.fetchall()}


async def one(conn: psycopg.AsyncConnection[Any], sql: str, *params: Any) -> Any:
    cur = await conn.execute(sql, params)
    row = await cur.fetchone()
    assert row is not None
    return row[0]


async def fill(conn: psycopg.AsyncConnection[Any]) -> None:
    """What a deployment of the previous version holds: completions (one
    voided, one in the default partition), their ids and outbox rows, league
    joins, notifications and their deliveries, an audit entry."""
    sql, params = old_ingest([f"old-{i}" for i in range(20)], [1 + i % 7 for i in range(20)])
    statuses = [r[0] for r in await (await conn.execute(sql, params)).fetchall()]
    assert statuses == ["recorded"] * 20
    await conn.execute(
        "SELECT laurels_ingest(ARRAY['old-late'], ARRAY[8]::bigint[], ARRAY[1],"
        " ARRAY['2027-03-01T10:00:00Z']::timestamptz[], now(), ARRAY['2027-W09'],"
        " ARRAY[false], ARRAY[''], ARRAY[''])")
    await conn.execute("UPDATE completions SET voided_at = now(), correction = 1"
                       " WHERE completion_id = 'old-3'")
    await conn.execute("INSERT INTO notifications (user_id, kind, season, data, dedup_key)"
                       " SELECT u, 'top10', '2026-W45', '{\"rank\": 1}', 'top10:2026-W45'"
                       " FROM generate_series(1, 5) u")
    await conn.execute("INSERT INTO audit (action, target) VALUES ('rebuild', '2026-W45')")


async def test_038_keeps_every_row_and_points_every_trigger_at_v1(before: str) -> None:
    async with await psycopg.AsyncConnection.connect(before, autocommit=True) as conn:
        await fill(conn)
        assert await one(conn, "SELECT count(*) FROM league_joins") == 8
        assert await one(conn, "SELECT count(*) FROM webhook_deliveries") == 5
        assert await one(conn, "SELECT count(*) FROM completions_default") == 1
        held = await contents(conn)
        names = set(await triggers(conn))

        assert (await migrate(before))[:1] == [FILE]  # (and any later one)

        after = await contents(conn)  # (later migrations' tables aside)
        assert {t: v for t, v in after.items() if t in held} == held  # not a row more or less
        assert await triggers(conn) == TRIGGERS
        assert set(TRIGGERS) == names
        cur = await conn.execute("SELECT proname FROM pg_proc p JOIN pg_namespace n"
                                 " ON n.oid = p.pronamespace WHERE n.nspname = 'public'")
        later = {name for v, _, text in migrations() if v > VERSION
                 for name in re.findall(r"CREATE FUNCTION (\w+)", text)}
        functions = {r[0] for r in await cur.fetchall()} - later
        # Every function has its _v1; the unversioned ones the previous
        # version calls stay; the unversioned trigger functions are gone.
        bare = {f for f in functions if not f.endswith("_v1")}
        assert {f"{f}_v1" for f in bare} <= functions
        assert "laurels_ingest" in bare and "laurels_league_join" not in functions
        assert len(functions) == 22 + len(bare) == 22 + 17
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            await conn.execute("UPDATE audit SET reason = 'x'")


async def test_both_versions_record_and_each_trigger_fires_once(before: str) -> None:
    async with await psycopg.AsyncConnection.connect(before, autocommit=True) as conn, \
            await psycopg.AsyncConnection.connect(before, autocommit=True) as listener:
        await fill(conn)
        assert (await migrate(before))[:1] == [FILE]  # (and any later one)
        await listener.execute("LISTEN laurels_outbox")
        # A process of the previous version, by the old name: its triggers
        # (now the _v1 functions) join the learner and wake the projector.
        sql, params = old_ingest(["prev-1"], [31])
        assert [r[0] for r in await (await conn.execute(sql, params)).fetchall()] == [
            "recorded"]
        assert [n.channel async for n in listener.notifies(timeout=5, stop_after=1)] == [
            "laurels_outbox"]
        assert await one(conn, "SELECT count(*) FROM league_joins WHERE user_id = 31") == 1
        # The new version's: its named query, laurels_ingest_v1.
        sql, params = old_ingest(["next-1", "prev-1"], [32, 31])
        new = sql.replace("laurels_ingest(", "laurels_ingest_v1(")
        rows = await (await conn.execute(new, params)).fetchall()
        assert [r[0] for r in rows] == ["recorded", "exists"]
        assert [n.channel async for n in listener.notifies(timeout=5, stop_after=1)] == [
            "laurels_outbox"]
        assert await one(conn, "SELECT count(*) FROM league_joins WHERE user_id = 32") == 1
        # A restore (an UPDATE) joins through league_join_on_restore.
        await conn.execute("DELETE FROM league_joins WHERE user_id = 32")
        await conn.execute("UPDATE completions SET correction = correction + 1"
                           " WHERE completion_id = 'next-1'")
        assert await one(conn, "SELECT count(*) FROM league_joins WHERE user_id = 32") == 1
        # One delivery per notification inserted (a statement trigger: once).
        await conn.execute("INSERT INTO notifications (user_id, kind, season, data, dedup_key)"
                           " SELECT u, 'overtaken', '2026-W45', '{}', 'o:' || u"
                           " FROM generate_series(40, 42) u")
        assert await one(conn, "SELECT count(*) FROM webhook_deliveries d"
                               " JOIN notifications n ON n.id = d.notification_id"
                               " WHERE n.user_id BETWEEN 40 AND 42") == 3
        # A refresh of one whose delivery was attempted: one new delivery.
        await conn.execute("UPDATE webhook_deliveries SET attempts = 1 WHERE user_id = 40")
        await conn.execute("UPDATE notifications SET data = '{\"n\": 2}', dedup_key = 'o:40:2'"
                           " WHERE user_id = 40")
        assert await one(conn, "SELECT count(*) FROM webhook_deliveries"
                               " WHERE user_id = 40") == 2


async def test_a_writer_in_flight_is_waited_for_and_fires_once(before: str) -> None:
    """An ingest of the previous version holds completions and outbox when
    the migration starts: the migration waits for its commit (the writer's
    triggers ran the old functions), then replaces the triggers; the next
    writes run the new ones. Nothing is lost, nothing fires twice, no
    deadlock."""
    async with await psycopg.AsyncConnection.connect(before, autocommit=True) as conn, \
            await psycopg.AsyncConnection.connect(before) as writer:
        sql, params = old_ingest(["flight-1"], [51])
        await writer.execute(sql, params)  # its transaction stays open
        migration = asyncio.create_task(migrate(before))

        async def waiting() -> bool:
            cur = await conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock' AND wait_event = 'relation'")
            return await cur.fetchone() == (1,)

        await eventually(waiting, what="the migration to wait for the writer")
        assert not migration.done()
        await writer.execute("INSERT INTO notifications (user_id, kind, season, dedup_key)"
                             " VALUES (51, 'top10', '2026-W45', 'top10:2026-W45')")
        await writer.commit()
        assert (await asyncio.wait_for(migration, 30))[:1] == [FILE]
        assert await one(conn, "SELECT count(*) FROM league_joins WHERE user_id = 51") == 1
        assert await one(conn, "SELECT count(*) FROM outbox") == 1
        assert await one(conn, "SELECT count(*) FROM webhook_deliveries"
                               " WHERE user_id = 51") == 1
        sql, params = old_ingest(["flight-2"], [52])
        await conn.execute(sql.replace("laurels_ingest(", "laurels_ingest_v1("), params)
        assert await one(conn, "SELECT count(*) FROM league_joins WHERE user_id = 52") == 1
        assert await triggers(conn) == TRIGGERS


async def test_the_service_ingests_on_an_upgraded_database(before: str, redis_url: str,
                                                           key_prefix: str,
                                                           tmp_path: Path) -> None:
    """The whole ingest path (record, fast path to Redis) on the upgraded
    database, with the learners and seasons the previous version left."""
    async with await psycopg.AsyncConnection.connect(before, autocommit=True) as conn:
        await fill(conn)
    assert (await migrate(before))[:1] == [FILE]  # (and any later one)
    settings = make_settings(tmp_path, before, redis_url, key_prefix,
                             league_tiers=("bronze", "silver"))
    rt = Runtime(settings, Secrets(INGEST, ADMIN, USER_SECRET), before, redis_url)
    await rt.open(run_migrations=False)
    try:
        ing = rt.derive(clock=lambda: datetime(2026, 11, 4, 12, tzinfo=UTC)).ingestor
        out = await ing.record([
            {"completion_id": "svc-1", "user_id": 1, "points": 4, "completed_at": AT},
            {"completion_id": "old-5", "user_id": 6, "points": 3, "completed_at": AT}])
        assert [o.status for o in out] == ["recorded", "duplicate"]
        # The board, built from PostgreSQL (the fast path heals it): the
        # previous version's rows are on it with the new one.
        top = await rt.board.top(parse_season("2026-W45", zone="UTC"), 100)
        scores = {e.user_id: e.score for e in top.entries}
        assert scores[1] == 3 * 3 + 4 and scores[4] == 3 * 2  # old-3 voided
        async with rt.db.connection() as conn:
            cur = await conn.execute("SELECT count(*) AS n FROM outbox o JOIN completions c"
                                     " ON c.seq = o.seq WHERE c.completion_id = 'svc-1'")
            assert await cur.fetchone() == {"n": 0}  # applied, its row deleted
            cur = await conn.execute("SELECT count(*) AS n FROM league_joins"
                                     " WHERE user_id = 1 AND season = '2026-W45'")
            assert await cur.fetchone() == {"n": 1}
    finally:
        await rt.close()
