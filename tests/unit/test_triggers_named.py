"""A trigger is named where it fires: several do another concern's work in
the transaction of the statement that fires them (a league join inside an
ingest, a webhook delivery inside a notifier's write), so a reader of a
named query must learn it from the query's description, not from
db/schema.sql.

Each trigger of db/schema.sql is mapped to its table, events and watched
columns; each named query to what it writes, directly or through the
functions it calls (their bodies in db/schema.sql, and the triggers those
fire in turn). A query whose statement fires a trigger names the trigger in
its description, and has a `-- locks:` line when the trigger's function
takes a lock; docs/design.md's table lists every trigger."""

from __future__ import annotations

from pathlib import Path

import pytest

from laurels.db import HEADS, LOCKS, QUERIES
from tests.unit.sql_text import (
    LOCKING,
    Trigger,
    Write,
    calls,
    code,
    fires,
    schema_functions,
    schema_partitions,
    schema_text,
    schema_triggers,
    writes,
)

pytestmark = pytest.mark.once

DESIGN = Path(__file__).parents[2] / "docs" / "design.md"


class Schema:
    def __init__(self, text: str) -> None:
        self.functions = schema_functions(text)
        self.partitions = schema_partitions(text)
        self.triggers = schema_triggers(text)

    def reached(self, sql: str) -> set[str]:
        """The functions `sql` runs: those it calls, those they call."""
        seen: set[str] = set()
        todo = calls(sql, set(self.functions))
        while todo:
            name = todo.pop()
            seen.add(name)
            todo |= calls(self.functions[name], set(self.functions)) - seen
        return seen

    def fired(self, sql: str) -> set[Trigger]:
        """The triggers `sql` fires, and those their functions fire in turn."""
        found: set[Trigger] = set()
        bodies = [sql, *(self.functions[f] for f in self.reached(sql))]
        while bodies:
            written: set[Write] = set().union(*(writes(b) for b in bodies))
            new = {t for t in self.triggers
                   if t not in found and any(fires(t, w, self.partitions) for w in written)}
            found |= new
            bodies = [self.functions[f] for t in new
                      for f in {t.function} | self.reached(f"{t.function}()")]
        return found

    def locks(self, trigger: Trigger) -> bool:
        """Whether the trigger's function (or one it calls) takes a lock."""
        return any(LOCKING.search(code(self.functions[f]))
                   for f in {trigger.function} | self.reached(f"{trigger.function}()"))


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Schema(schema_text())


def test_the_schema_is_read_as_it_is(schema: Schema) -> None:
    """The reader finds every trigger of db/schema.sql, with its events."""
    by_name = {t.name: t for t in schema.triggers}
    assert len(by_name) == schema_text().count("\nCREATE TRIGGER ") == 7
    refreshed = by_name["notification_refreshed_webhook"]
    assert (refreshed.table, refreshed.events, refreshed.columns, refreshed.per_row,
            refreshed.changed) == ("notifications", frozenset({"UPDATE"}), frozenset({"data"}),
                                   True, frozenset({"dedup_key"}))
    assert by_name["audit_append_only"].events == {"UPDATE", "DELETE"}
    assert not by_name["league_join"].per_row
    assert schema.partitions["completions_default"] == "completions"


def test_every_query_that_fires_a_trigger_names_it(schema: Schema) -> None:
    silent, unlocked = [], []
    for name, sql in QUERIES.items():
        for trigger in sorted(schema.fired(sql), key=lambda t: t.name):
            if trigger.name not in HEADS[name]:
                silent.append(f"{name} fires {trigger.name} ({trigger.function})")
            if schema.locks(trigger) and name not in LOCKS:
                unlocked.append(f"{name}: {trigger.name} locks")
    assert silent == [], "say which trigger fires, what it does and what it locks"
    assert unlocked == [], "a trigger that locks: the query's `-- locks:` line says so"


def test_the_triggers_the_service_fires_are_the_known_ones(schema: Schema) -> None:
    """The map as it is now, so that a reader that stopped finding writes
    (a new shape of statement) fails here rather than passing silently."""
    fired = {name: sorted(t.name for t in schema.fired(sql)) for name, sql in QUERIES.items()}
    assert {k: v for k, v in fired.items() if v} == {
        "ingest_batch": ["league_join", "outbox_notify"],
        "insert_outbox": ["outbox_notify"],
        "set_voided": ["league_join_on_restore"],
        "set_voided_many": ["league_join_on_restore"],
        "insert_notification": ["notification_webhook"],
        "notify_season_final": ["notification_webhook"],
        "refresh_overtaken": ["notification_refreshed_webhook"],
        "decide_league_week": ["notification_webhook"],
        "decide_challenge": ["notification_webhook"],
        "notify_league_zones": ["notification_refreshed_webhook", "notification_webhook"],
    }


def test_design_md_lists_every_trigger(schema: Schema) -> None:
    text = DESIGN.read_text()
    assert "Triggers: which statement fires which, and whose work it does" in text
    missing = [t.name for t in schema.triggers if f"`{t.name}`" not in text]
    assert missing == []


def test_writes_are_read_from_the_statements_shapes() -> None:
    sql = """
    WITH a AS (INSERT INTO outbox (seq) VALUES (1)),
         b AS (UPDATE notifications n SET data = z.data::jsonb, updated_at = now(),
                      dedup_key = z.dedup_key FROM z WHERE n.id = z.id),
         c AS (DELETE FROM completions_default WHERE true)
    INSERT INTO users AS u (user_id) VALUES (1)
    ON CONFLICT (user_id) DO UPDATE SET erased_at = coalesce(u.erased_at, now()),
        display_name = NULL
    RETURNING u.user_id;
    SELECT 1 FROM seasons FOR UPDATE;  -- UPDATE audit SET nothing = 1
    SELECT 1 FROM seasons FOR NO KEY UPDATE OF seasons;
    TRUNCATE completion_ids_sealing;
    UPDATE notifications SET read = true WHERE id = 1;
    """
    assert writes(sql) == {
        Write("outbox", "INSERT"),
        Write("notifications", "UPDATE", frozenset({"data", "updated_at", "dedup_key"})),
        Write("completions_default", "DELETE"),
        Write("users", "INSERT"),
        Write("users", "UPDATE", frozenset({"erased_at", "display_name"})),
        Write("completion_ids_sealing", "TRUNCATE"),
        Write("notifications", "UPDATE", frozenset({"read"})),
    }


def test_a_trigger_fires_for_its_table_events_and_columns(schema: Schema) -> None:
    by_name = {t.name: t for t in schema.triggers}
    parts = schema.partitions
    refreshed, join = by_name["notification_refreshed_webhook"], by_name["league_join"]
    # UPDATE OF data, WHEN the dedup key changes: a write setting both
    assert fires(refreshed, Write("notifications", "UPDATE",
                                  frozenset({"data", "dedup_key"})), parts)
    assert not fires(refreshed, Write("notifications", "UPDATE", frozenset({"data"})), parts)
    assert not fires(refreshed, Write("notifications", "UPDATE", frozenset({"read"})), parts)
    assert not fires(refreshed, Write("notifications", "INSERT"), parts)
    # A statement trigger of a partitioned table: not for a write to a partition
    assert fires(join, Write("completions", "INSERT"), parts)
    assert not fires(join, Write("completions_default", "INSERT"), parts)
    assert not fires(join, Write("completions", "DELETE"), parts)
