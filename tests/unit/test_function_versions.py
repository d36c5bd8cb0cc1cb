"""A function's body never changes under its name (procrastinate's rule;
migration 038, docs/design.md "Functions have versioned names"): during a
rolling deploy a process of the previous version still calls the names it
knows, so a migration that changed what one of them does would run, in that
process, a body it was not written for. A change is a new function
`<name>_v<N+1>`; the named queries call the newest version; the old one
stays until a later migration drops it.

The migrations up to and including 038 are grandfathered (they redefined
laurels_ingest in place eight times); 038 gave every function its `_v1`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from laurels.db import QUERIES, migrations
from tests.unit.sql_text import calls, family, statements

pytestmark = pytest.mark.once

GRANDFATHERED = 38  # the migrations up to this one changed functions in place

_CREATE = re.compile(r"^CREATE (?:OR REPLACE )?(?:FUNCTION|PROCEDURE) (\w+)\s*\(", re.I)
_ALTER = re.compile(r"^ALTER (?:FUNCTION|PROCEDURE) (\w+)\b(.*)$", re.I)
_DROP = re.compile(r"^DROP (?:FUNCTION|PROCEDURE) (?:IF EXISTS )?(.*)$", re.I)
_TRIGGER = re.compile(r"^CREATE (?:OR REPLACE )?TRIGGER (\w+) .*? ON (?:ONLY )?(?:public\.)?(\w+)"
                      r" .*\bEXECUTE (?:FUNCTION|PROCEDURE) (\w+)\s*\(", re.I)
_DROP_TRIGGER = re.compile(r"^DROP TRIGGER (?:IF EXISTS )?(\w+) ON (?:public\.)?(\w+)", re.I)


@dataclass
class History:
    """The functions as the migrations, read in order, leave them."""

    text: dict[str, str] = field(default_factory=dict)  # name: its latest definition
    born: dict[str, int] = field(default_factory=dict)  # name: the migration defining it first
    alive: set[str] = field(default_factory=set)
    triggers: dict[tuple[str, str], str] = field(default_factory=dict)  # (table, name): function
    broken: list[str] = field(default_factory=list)  # the rule's violations, in order


def _normal(statement: str) -> str:
    """A definition as compared: `OR REPLACE` aside (comments and runs of
    blanks are gone already: sql_text.statements)."""
    return re.sub(r"^CREATE OR REPLACE ", "CREATE ", statement, flags=re.I)


def read(files: list[tuple[int, str, str]], grandfathered: int = GRANDFATHERED) -> History:
    h = History()
    for version, file, text in files:
        for st in statements(text):
            _read_statement(h, st, version, file, later=version > grandfathered)
    return h


def _read_statement(h: History, st: str, version: int, file: str, later: bool) -> None:
    if m := _CREATE.match(st):
        _created(h, m.group(1), _normal(st), version, file, later)
    elif m := _ALTER.match(st):
        name, action = m.group(1), m.group(2)
        if later and name in h.born and not re.search(r"\bOWNER TO\b", action, re.I):
            h.broken.append(f"{file} alters {name}: a process of the previous version runs "
                            f"it; define {family(name)[0]}_v{family(name)[1] + 1} instead")
    elif m := _DROP.match(st):
        for name in re.findall(r"(\w+)\s*(?:\([^)]*\))?\s*(?:,|$)", m.group(1)):
            h.alive.discard(name)
    elif m := _TRIGGER.match(st):
        h.triggers[(m.group(2), m.group(1))] = m.group(3)
    elif m := _DROP_TRIGGER.match(st):
        h.triggers.pop((m.group(2), m.group(1)), None)


def _created(h: History, name: str, text: str, version: int, file: str, later: bool) -> None:
    known = h.born.get(name, version) < version  # defined by an earlier file
    base, n = family(name)
    if later and known and text != h.text[name]:
        h.broken.append(f"{file} redefines {name} (of migration {h.born[name]:03d}) with "
                        f"another body: name it {base}_v{n + 1} instead")
    if later and not known and n == 0:
        h.broken.append(f"{file} defines {name} without a version: name it {name}_v1")
    h.text[name] = text
    h.born.setdefault(name, version)
    h.alive.add(name)


def newest(h: History, name: str) -> str:
    """The newest version of `name`'s function that is defined now."""
    base = family(name)[0]
    return max((n for n in h.alive if family(n)[0] == base), key=lambda n: family(n)[1],
               default=name)


def stale_calls(h: History, queries: dict[str, str]) -> list[str]:
    """Calls of a named query to a function that has a newer version, or
    that no migration defines any more."""
    known = set(h.born)
    found = []
    for query, sql in queries.items():
        for name in sorted(calls(sql, known)):
            if name not in h.alive:
                found.append(f"{query} calls {name}, which a migration dropped")
            elif newest(h, name) != name:
                found.append(f"{query} calls {name}: call {newest(h, name)}")
    return found


def stale_triggers(h: History) -> list[str]:
    return [f"trigger {name} on {table} runs {fn}: point it at {newest(h, fn)}"
            for (table, name), fn in sorted(h.triggers.items()) if newest(h, fn) != fn]


# -- the project ---------------------------------------------------------------------


def test_no_migration_after_038_redefines_a_function_name() -> None:
    history = read(migrations())
    assert history.broken == []


def test_the_named_queries_call_the_newest_version_of_each_function() -> None:
    history = read(migrations())
    assert {"laurels_ingest", "laurels_ingest_v1"} <= history.alive
    assert stale_calls(history, QUERIES) == []
    assert "laurels_ingest_v1(" in QUERIES["ingest_batch"]


def test_every_trigger_runs_the_newest_version_of_its_function() -> None:
    history = read(migrations())
    assert len(history.triggers) == 7
    assert stale_triggers(history) == []


def test_every_function_has_a_versioned_name() -> None:
    """Since 038, each function the schema has is a `_vN` or has one (its
    unversioned name kept for the processes of the previous version)."""
    history = read(migrations())
    bare = sorted(n for n in history.alive
                  if family(n)[1] == 0 and f"{n}_v1" not in history.alive)
    assert bare == []


# -- the rules, on migrations made up for them ----------------------------------------

BASE = [
    (37, "037_x.sql", "CREATE FUNCTION laurels_f(p int) RETURNS int LANGUAGE sql AS $$\n"
                      "    SELECT p  -- one\n$$;\n"),
    (38, "038_x.sql", "CREATE FUNCTION laurels_f_v1(p int) RETURNS int LANGUAGE sql AS $$\n"
                      "    SELECT p\n$$;\n"
                      "CREATE FUNCTION laurels_t_v1() RETURNS trigger LANGUAGE plpgsql AS $$\n"
                      "BEGIN RETURN NULL; END $$;\n"
                      "CREATE TRIGGER t AFTER INSERT ON x FOR EACH STATEMENT\n"
                      "    EXECUTE FUNCTION laurels_t_v1();\n"),
]


def test_a_later_migration_may_not_change_a_body_under_its_name() -> None:
    changed = (39, "039_y.sql", "CREATE OR REPLACE FUNCTION laurels_f_v1(p int) RETURNS int\n"
                                "LANGUAGE sql AS $$ SELECT p + 1 $$;")
    assert read([*BASE, changed]).broken == [
        "039_y.sql redefines laurels_f_v1 (of migration 038) with another body: name it "
        "laurels_f_v2 instead"]
    # The same text again (another layout, other comments) changes nothing.
    same = (39, "039_y.sql", "-- again\nCREATE OR REPLACE FUNCTION laurels_f_v1(p int)\n"
                             "RETURNS int LANGUAGE sql AS $$\n    SELECT p -- same\n$$;")
    assert read([*BASE, same]).broken == []
    # Grandfathered: 038 gave laurels_f a new name; 037 and 038 may change in place.
    assert read(BASE).broken == []


def test_a_dropped_name_is_not_made_again_with_another_body() -> None:
    again = (40, "040_z.sql", "DROP FUNCTION laurels_f_v1(int);\n"
                              "CREATE FUNCTION laurels_f_v1(p int) RETURNS int LANGUAGE sql\n"
                              "AS $$ SELECT 2 * p $$;")
    assert [b.split(" (")[0] for b in read([*BASE, again]).broken] == [
        "040_z.sql redefines laurels_f_v1"]


def test_a_later_migration_may_not_alter_a_function_nor_add_an_unversioned_one() -> None:
    altered = (39, "039_y.sql", "ALTER FUNCTION laurels_f_v1(int) SET jit = off;\n"
                                "ALTER FUNCTION laurels_f_v1(int) OWNER TO laurels;\n"
                                "CREATE FUNCTION laurels_g(p int) RETURNS int LANGUAGE sql\n"
                                "AS $$ SELECT p $$;")
    assert read([*BASE, altered]).broken == [
        "039_y.sql alters laurels_f_v1: a process of the previous version runs it; define "
        "laurels_f_v2 instead",
        "039_y.sql defines laurels_g without a version: name it laurels_g_v1"]


def test_a_query_calling_an_older_version_or_a_dropped_one_is_named() -> None:
    v2 = (39, "039_y.sql", "CREATE FUNCTION laurels_f_v2(p int) RETURNS int LANGUAGE sql\n"
                           "AS $$ SELECT p + 1 $$;\nDROP FUNCTION laurels_f(int);")
    history = read([*BASE, v2])
    assert history.broken == []
    assert stale_calls(history, {
        "old": "SELECT laurels_f(1)", "older": "-- laurels_f_v2(1)\nSELECT laurels_f_v1 (1)",
        "new": "SELECT laurels_f_v2(%(p)s)", "other": "SELECT count(*) FROM t"}) == [
        "old calls laurels_f, which a migration dropped",
        "older calls laurels_f_v1: call laurels_f_v2"]


def test_a_trigger_left_on_an_older_function_is_named() -> None:
    v2 = (39, "039_y.sql", "CREATE FUNCTION laurels_t_v2() RETURNS trigger LANGUAGE plpgsql\n"
                           "AS $$ BEGIN RETURN NULL; END $$;")
    assert stale_triggers(read([*BASE, v2])) == [
        "trigger t on x runs laurels_t_v1: point it at laurels_t_v2"]
    moved = (40, "040_z.sql", "CREATE OR REPLACE TRIGGER t AFTER INSERT ON x FOR EACH STATEMENT"
                              " EXECUTE FUNCTION laurels_t_v2();")
    assert stale_triggers(read([*BASE, v2, moved])) == []


def test_statements_split_where_sql_does() -> None:
    text = ("CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $fn$ SELECT 'a;b' $fn$;\n"
            "-- a comment; with a semicolon\nSELECT 'it''s; one' /* c; */ ;\nSELECT 2")
    assert statements(text) == [
        "CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $fn$ SELECT 'a;b' $fn$",
        "SELECT 'it''s; one'", "SELECT 2"]
