"""The ids of finalized weeks move out of the recording's index (issue 29;
migration 020, history.Partitions.seal): completion_ids is two partitions,
open (every recording inserts there) and sealed (finalized weeks' ids,
moved in bulk). An id is in one of them, a replay of a moved id is still a
duplicate (or a conflict), a void and an erasure still find it, and the move
waits for every transaction that was running when its ids were staged."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import psycopg
import pytest

from laurels.core.seasons import parse_season
from laurels.db import migrate, migrations
from laurels.lifecycle.history import history_of
from laurels.runtime import Runtime, Services
from tests.helpers import eventually, with_database
from tests.integration.test_history import ALL, WEEKS, history, item, pg_all, scores
from tests.invariants import check_all

# A move waits for every transaction running at its staging, on the whole
# server (xid horizons are the server's): another worker's on a shared server
# holds it back, so .ci/run runs these apart there.
pytestmark = pytest.mark.alone

SEAL_LOCK = "SELECT pg_advisory_xact_lock_shared(hashtext('laurels completion ids seal'))"


async def where(svc: Services) -> dict[str, set[str]]:
    """The ids in each partition of completion_ids."""
    async with svc.db.connection() as conn:
        cur = await conn.execute("SELECT tableoid::regclass::text AS part, completion_id"
                                 " FROM completion_ids")
        out: dict[str, set[str]] = {"completion_ids_open": set(), "completion_ids_sealed": set()}
        for r in await cur.fetchall():
            out[r["part"]].add(r["completion_id"])
        return out


def ids_of(weeks: list[str]) -> set[str]:
    return {f"{w}-{u}" for w in weeks for u in (1, 2, 3)}


async def sealed(svc: Services) -> Services:
    """Stage, then move: the finalized weeks' ids (W45..W47) are sealed."""
    assert await svc.partitions.seal() == (9, 0)
    assert await svc.partitions.seal() == (0, 9)
    return svc


async def test_a_seal_moves_the_finalized_weeks_ids_and_nothing_else(rt: Runtime) -> None:
    svc = await history(rt)
    before = (await scores(svc, "all"), await where(svc))
    assert before[1]["completion_ids_open"] == ids_of(WEEKS)  # every recording lands open
    found = await history_of(svc.db, svc.settings.periods, ALL)
    assert found is not None and found.parts == WEEKS[:3]
    await sealed(svc)
    after = await where(svc)
    assert after == {"completion_ids_open": ids_of(WEEKS[3:]),
                     "completion_ids_sealed": ids_of(WEEKS[:3])}
    assert await svc.partitions.seal() == (0, 0)  # nothing left before the cutoff
    assert await scores(svc, "all") == before[0] == await pg_all(svc)
    await check_all(svc, [ALL, parse_season("2026-W49", zone="UTC")])


async def test_a_replay_of_a_sealed_id_is_a_duplicate_or_a_conflict(rt: Runtime) -> None:
    """The ingest reads both partitions: the same payload is a duplicate
    (its week is finalized: refused as closed before it could be recorded
    anyway), and the same id with a timestamp in an open week is a conflict,
    never a second recording."""
    svc = await sealed(await history(rt))
    same = await svc.ingestor.record([item("2026-W45-2", 2, 2, "2026-W45")])
    assert [o.status for o in same] == ["duplicate"]
    moved = await svc.ingestor.record([item("2026-W45-2", 2, 2, "2026-W49")])
    assert [(o.status, o.code) for o in moved] == [("rejected", "completion_conflict")]
    fresh = await svc.ingestor.record([item("new-in-w49", 2, 5, "2026-W49")])
    assert [o.status for o in fresh] == ["recorded"]
    async with svc.db.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM completions"
                                 " WHERE completion_id = '2026-W45-2'")
        assert await cur.fetchone() == {"n": 1}
    assert "new-in-w49" in (await where(svc))["completion_ids_open"]


async def test_a_sealed_completion_is_voided_and_erased_through_the_sealed_ids(
        rt: Runtime) -> None:
    svc = await sealed(await history(rt))
    await svc.corrections.void("2026-W46-3", "copied")
    assert await scores(svc, "all") == await pg_all(svc)
    await svc.corrections.restore("2026-W46-3")
    assert await scores(svc, "all") == await pg_all(svc)
    await svc.erasure.erase(1)
    left = await where(svc)
    assert not {i for part in left.values() for i in part if i.endswith("-1")}
    assert 1 not in await scores(svc, "all")
    assert (await svc.verifier.verify(ALL)).consistent


async def test_the_move_waits_for_transactions_running_at_the_staging(
        rt: Runtime, database_url: str) -> None:
    """A transaction with an xid that was running when the ids were staged
    (a recording that might not have seen one of them) holds the move off
    until it ends."""
    svc = await history(rt)
    async with await psycopg.AsyncConnection.connect(database_url) as other:
        await other.execute("SELECT pg_current_xact_id()")  # an xid, in an open transaction
        assert await svc.partitions.seal() == (9, 0)
        assert await svc.partitions.seal() == (0, 0)  # it still runs
        assert (await where(svc))["completion_ids_sealed"] == set()
        await other.rollback()
    assert await svc.partitions.seal() == (0, 9)


async def test_the_move_never_runs_while_ids_are_being_deleted(
        rt: Runtime, database_url: str) -> None:
    """An erasure deleting a learner's ids holds the seal lock shared (so
    does retention): the move only tries the lock, so it neither waits nor
    moves a row being deleted, and moves once the deleter is gone."""
    svc = await history(rt)
    assert await svc.partitions.seal() == (9, 0)
    async with await psycopg.AsyncConnection.connect(database_url) as other:
        await other.execute(SEAL_LOCK)
        assert await svc.partitions.seal() == (0, 0)
        await other.rollback()
    assert await svc.partitions.seal() == (0, 9)


async def test_a_new_open_week_id_recorded_between_staging_and_move_stays_open(
        rt: Runtime) -> None:
    """Only the staged ids move: one recorded after the staging (in the open
    week) stays in the open partition."""
    svc = await history(rt)
    assert await svc.partitions.seal() == (9, 0)
    outcome = await svc.ingestor.record([item("late-w49", 3, 4, "2026-W49")])
    assert [o.status for o in outcome] == ["recorded"]
    assert await svc.partitions.seal() == (0, 9)
    assert "late-w49" in (await where(svc))["completion_ids_open"]


async def test_two_seals_at_once_stage_once(rt: Runtime, database_url: str) -> None:
    """Several processes run the seasons loop: a seal step that finds
    another at work does nothing."""
    svc = await history(rt)
    async with await psycopg.AsyncConnection.connect(database_url) as other:
        await other.execute(
            "SELECT pg_advisory_xact_lock(hashtext('laurels completion ids seal step'))")
        assert await svc.partitions.seal() == (0, 0)
        await other.rollback()
    assert await svc.partitions.seal() == (9, 0)


MAYBE = """
SELECT count(*) FILTER (WHERE fs.blocks = 0 OR f.words IS NULL
                               OR laurels_id_in_block(f.words, x.h)) AS maybe, count(*) AS n
FROM (SELECT laurels_id_hash(id) AS h FROM unnest(%s::text[]) AS id) x
CROSS JOIN completion_ids_filter_size fs
LEFT JOIN completion_ids_filter f ON f.block = laurels_id_block(x.h, fs.blocks)"""


async def test_the_filter_never_misses_a_sealed_id_and_rules_out_most_others(
        rt: Runtime) -> None:
    """The Bloom filter in front of the sealed ids (a batch probes the sealed
    index only for an id it does not rule out): built from 50,000 sealed ids,
    every one of them passes, and of 20,000 others about 0.24% do (four bits
    of 16 an id, migration 021; two bits let 1.4% through)."""
    sealed_ids = [f"tutorial-{g % 5000}:learner-{g % 977}:{g}" for g in range(50_000)]
    others = [f"tutorial-{g % 5000}:learner-{g % 977}:{g}" for g in range(50_000, 70_000)]
    async with rt.db.connection() as conn:
        await conn.execute("INSERT INTO completion_ids (completion_id, seq, completed_at,"
                           " sealed) SELECT id, n, now(), true FROM unnest(%s::text[])"
                           " WITH ORDINALITY AS t(id, n)", (sealed_ids,))
        cur = await conn.execute("SELECT laurels_build_id_filter() AS blocks")
        assert await cur.fetchone() == {"blocks": 16}  # 16 bits an id, at least 16 blocks
        hit = await (await conn.execute(MAYBE, (sealed_ids,))).fetchone()
        assert hit == {"maybe": 50_000, "n": 50_000}
        miss = await (await conn.execute(MAYBE, (others,))).fetchone()
        assert miss is not None and miss["maybe"] < 20_000 * 0.006, miss
        # The bits of ids sealed later are set by the move (laurels_set_id_bits).
        await conn.execute("SELECT laurels_set_id_bits(%s::text[])", (others[:100],))
        late = await (await conn.execute(MAYBE, (others[:100],))).fetchone()
        assert late == {"maybe": 100, "n": 100}


async def test_a_filter_outgrown_twice_over_is_built_again_by_the_move(rt: Runtime) -> None:
    svc = await history(rt)
    async with svc.db.connection() as conn:
        await conn.execute("UPDATE completion_ids_filter_size SET ids = 10000000")
    await sealed(svc)
    async with svc.db.connection() as conn:
        cur = await conn.execute("SELECT blocks, ids FROM completion_ids_filter_size")
        assert await cur.fetchone() == {"blocks": 16, "ids": 9}  # built from the 9 sealed
    same = await svc.ingestor.record([item("2026-W46-1", 1, 2, "2026-W46")])
    assert [o.status for o in same] == ["duplicate"]


MIGRATION_ROWS = 300_000


PREPARED_LIVE = [  # docs/operations.md, "Sealed ids on a live database"
    "ALTER TABLE completion_ids ADD COLUMN sealed boolean NOT NULL DEFAULT true",
    "ALTER TABLE completion_ids ADD CONSTRAINT completion_ids_sealed_is_sealed"
    " CHECK (sealed = true) NOT VALID",
    "ALTER TABLE completion_ids VALIDATE CONSTRAINT completion_ids_sealed_is_sealed",
]


@pytest.mark.parametrize("prepared", [False, True], ids=["as-is", "prepared-live"])
async def test_migration_020_keeps_every_id_of_an_existing_database(
        pg_server_url: str, prepared: bool) -> None:
    """A database at migration 019 with 300,000 completions: 020 makes its
    ids the sealed partition as they are (no row moves), and recording goes
    on, a replay of an old id still a duplicate. Likewise after the steps
    operations.md gives for a large live database."""
    name = f"laurels_t_m020_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(pg_server_url, autocommit=True) as admin:
        await admin.execute(f'CREATE DATABASE "{name}"')
    url = with_database(pg_server_url, name)
    try:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await migrated_before(conn, 20)
            await conn.execute("SELECT laurels_completions_partition('2026-11-01')")
            await conn.execute(
                "WITH c AS (INSERT INTO completions (completion_id, user_id, points,"
                " completed_at, received_at, season)"
                " SELECT 'old-' || g, 1 + g %% 1000, 1, '2026-11-02T10:00:00Z', now(), '2026-W45'"
                " FROM generate_series(1, %s) g RETURNING completion_id, seq, completed_at)"
                " INSERT INTO completion_ids SELECT * FROM c", (MIGRATION_ROWS,))
            before = await counts(conn)
            for step in PREPARED_LIVE if prepared else []:
                await conn.execute(step)
            applied = await migrate(url)  # and the later ones
            assert applied[:2] == ["020_open_and_sealed_ids.sql", "021_id_filter_four_bits.sql"]
            assert await counts(conn) == before == {"completions": MIGRATION_ROWS,
                                                     "ids": MIGRATION_ROWS}
            cur = await conn.execute("SELECT count(*) AS n FROM completion_ids_sealed")
            assert await cur.fetchone() == (MIGRATION_ROWS,)
            cur = await conn.execute(
                "SELECT status FROM laurels_ingest(ARRAY['old-7', 'new-1'],"
                " ARRAY[8, 8]::bigint[], ARRAY[1, 1], ARRAY['2026-11-02T10:00:00Z',"
                " '2026-11-03T10:00:00Z']::timestamptz[], now(), ARRAY['2026-W45', '2026-W45'],"
                " ARRAY[false, false], ARRAY['', ''], ARRAY['', ''])")
            assert [r[0] for r in await cur.fetchall()] == ["exists", "recorded"]
            cur = await conn.execute("SELECT tableoid::regclass::text FROM completion_ids"
                                     " WHERE completion_id = 'new-1'")
            assert await cur.fetchone() == ("completion_ids_open",)
            # No filter until the seasons loop's first seal builds it (16 bits an id).
            cur = await conn.execute("SELECT blocks FROM completion_ids_filter_size")
            assert await cur.fetchone() == (0,)
            await conn.execute("SELECT * FROM laurels_seal_completion_ids('2026-11-01', 10)")
            cur = await conn.execute("SELECT blocks FROM completion_ids_filter_size")
            assert await cur.fetchone() == (75,)
            cur = await conn.execute(
                "SELECT status FROM laurels_ingest(ARRAY['old-9'], ARRAY[8]::bigint[],"
                " ARRAY[1], ARRAY['2026-11-09T10:00:00Z']::timestamptz[], now(),"
                " ARRAY['2026-W46'], ARRAY[false], ARRAY[''], ARRAY[''])")
            assert [r[0] for r in await cur.fetchall()] == ["exists"]  # through the filter
    finally:
        async with await psycopg.AsyncConnection.connect(pg_server_url,
                                                         autocommit=True) as admin:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def migrated_before(conn: Any, version: int) -> None:
    """The migrations before `version`, as `migrate` applies them."""
    await conn.execute("CREATE TABLE schema_migrations (version integer PRIMARY KEY,"
                       " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
    for v, file, text in migrations():
        if v < version:
            async with conn.transaction():
                await conn.execute(text)
                await conn.execute("INSERT INTO schema_migrations VALUES (%s, %s)", (v, file))


async def test_migration_021_empties_the_two_bit_filter_and_the_next_seal_builds_four(
        pg_server_url: str) -> None:
    """A filter built with two bits an id does not hold the four the new test
    reads: 021 empties it (every id probes the sealed index meanwhile, so a
    replay is still found), and the next seal builds it with four bits."""
    name = f"laurels_t_m021_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(pg_server_url, autocommit=True) as admin:
        await admin.execute(f'CREATE DATABASE "{name}"')
    url = with_database(pg_server_url, name)
    replay = ("SELECT status FROM laurels_ingest(ARRAY[%s], ARRAY[8]::bigint[], ARRAY[1],"
              " ARRAY['2026-11-09T10:00:00Z']::timestamptz[], now(), ARRAY['2026-W46'],"
              " ARRAY[false], ARRAY[''], ARRAY[''])")
    try:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await migrated_before(conn, 21)
            ids = [f"tutorial-{g % 5000}:learner-{g % 977}:{g}" for g in range(20_000)]
            await conn.execute("SELECT laurels_completions_partition('2026-11-01')")
            await conn.execute(
                "WITH c AS (INSERT INTO completions (completion_id, user_id, points,"
                " completed_at, received_at, season) SELECT id, 8, 1, '2026-11-02T10:00:00Z',"
                " now(), '2026-W45' FROM unnest(%s::text[]) AS id"
                " RETURNING completion_id, seq, completed_at)"
                " INSERT INTO completion_ids SELECT *, true FROM c", (ids,))
            await conn.execute("SELECT laurels_build_id_filter()")
            assert (await migrate(url))[:1] == ["021_id_filter_four_bits.sql"]
            cur = await conn.execute("SELECT blocks, ids FROM completion_ids_filter_size")
            assert await cur.fetchone() == (0, 0)
            cur = await conn.execute("SELECT count(*) FROM completion_ids_filter")
            assert await cur.fetchone() == (0,)
            cur = await conn.execute(replay, (ids[7],))
            assert [r[0] for r in await cur.fetchall()] == ["exists"]  # no filter: probed
            await conn.execute("SELECT * FROM laurels_seal_completion_ids('2026-11-01', 10)")
            cur = await conn.execute("SELECT blocks, ids FROM completion_ids_filter_size")
            assert await cur.fetchone() == (16, 20_000)
            hit = await (await conn.execute(MAYBE, (ids,))).fetchone()
            assert hit == (20_000, 20_000)  # four bits of every sealed id are set
            cur = await conn.execute(replay, (ids[9],))
            assert [r[0] for r in await cur.fetchall()] == ["exists"]  # through the filter
    finally:
        async with await psycopg.AsyncConnection.connect(pg_server_url,
                                                         autocommit=True) as admin:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def test_migration_021_waits_for_a_seal_step_at_work(pg_server_url: str) -> None:
    """A seal step may be building the filter the old way (two bits) when
    021 runs: the migration waits for it (the seal step's lock), so no
    two-bit filter commits after the four-bit test is in place."""
    name = f"laurels_t_m021w_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(pg_server_url, autocommit=True) as admin:
        await admin.execute(f'CREATE DATABASE "{name}"')
    url = with_database(pg_server_url, name)
    try:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn, \
                await psycopg.AsyncConnection.connect(url) as step:
            await migrated_before(conn, 21)
            await step.execute(
                "SELECT pg_advisory_xact_lock(hashtext('laurels completion ids seal step'))")
            migration = asyncio.create_task(migrate(url))

            async def waiting() -> bool:
                cur = await conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND wait_event_type = 'Lock' AND wait_event = 'advisory'")
                row = await cur.fetchone()
                return row is not None and row[0] == 1

            await eventually(waiting, what="the migration to wait for the seal step")
            assert not migration.done()
            await step.execute("UPDATE completion_ids_filter_size SET blocks = 16, ids = 1")
            await step.commit()  # the step's (two-bit) filter commits first ...
            assert (await migration)[:1] == ["021_id_filter_four_bits.sql"]
            cur = await conn.execute("SELECT blocks, ids FROM completion_ids_filter_size")
            assert await cur.fetchone() == (0, 0)  # ... and the migration empties it
    finally:
        async with await psycopg.AsyncConnection.connect(pg_server_url,
                                                         autocommit=True) as admin:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def counts(conn: Any) -> dict[str, int]:
    cur = await conn.execute("SELECT (SELECT count(*) FROM completions) AS completions,"
                             " (SELECT count(*) FROM completion_ids) AS ids")
    row = await cur.fetchone()
    assert row is not None
    return {"completions": row[0], "ids": row[1]}
