"""Reading SQL as text, for the tests that hold the migrations, the named
queries and db/schema.sql to their rules (test_function_versions.py,
test_triggers_named.py): comments out, statements split, functions,
triggers and writes found. A reader of text, not a parser: it knows the
shapes this project writes, and each test checks it on examples."""

from __future__ import annotations

import re
from dataclasses import dataclass

from laurels.db.schema import SCHEMA_FILE

_STRING_OR_COMMENT = re.compile(r"'(?:[^']|'')*'|--[^\n]*|/\*.*?\*/", re.S)
_DOLLAR = re.compile(r"\$(\w*)\$")
# The statements that take a lock a `-- locks:` line names (as
# tests/integration/test_lock_order.py finds them).
LOCKING = re.compile(r"\bFOR (?:NO KEY )?UPDATE\b|\bFOR (?:KEY )?SHARE\b|pg_(?:try_)?advisory"
                     r"|\bLOCK TABLE\b", re.I)


def code(sql: str) -> str:
    """`sql` without its comments (strings kept; a function's body, between
    dollar quotes, is code too and loses its comments as well)."""
    return _STRING_OR_COMMENT.sub(lambda m: m.group(0) if m.group(0)[0] == "'" else " ", sql)


def statements(sql: str) -> list[str]:
    """The statements of a migration, comments out, split at the semicolons
    outside strings and dollar quotes."""
    text, out, start, i = code(sql), [], 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "'":
            i = text.index("'", i + 1) + 1
            while i < len(text) and text[i] == "'":  # '' inside a string
                i = text.index("'", i + 1) + 1
            continue
        if ch == "$" and (m := _DOLLAR.match(text, i)):
            i = text.index(m.group(0), m.end()) + len(m.group(0))
            continue
        if ch == ";":
            out.append(text[start:i])
            start = i + 1
        i += 1
    out.append(text[start:])
    return [" ".join(s.split()) for s in out if s.strip()]


VERSIONED = re.compile(r"^(\w+?)_v(\d+)$")


def family(name: str) -> tuple[str, int]:
    """A function's name without its version, and the version (0: none)."""
    m = VERSIONED.match(name)
    return (m.group(1), int(m.group(2))) if m else (name, 0)


CALL = re.compile(r"\b([a-z_][a-z0-9_]*)\s*\(", re.I)


def calls(sql: str, among: set[str]) -> set[str]:
    """The functions of `among` that `sql` (comments out) calls."""
    return {m.group(1) for m in CALL.finditer(code(sql)) if m.group(1) in among}


# -- db/schema.sql -------------------------------------------------------------------

_FUNCTION = re.compile(r"^CREATE FUNCTION (\w+)\(.*?\bAS \$\$(.*?)\n\$\$;$", re.M | re.S)
_TRIGGER = re.compile(
    r"^CREATE TRIGGER (?P<name>\w+) (?P<when>BEFORE|AFTER|INSTEAD OF) (?P<events>.+?)"
    r" ON public\.(?P<table>\w+)(?: REFERENCING .+?)? FOR EACH (?P<each>ROW|STATEMENT)"
    r"(?: WHEN \((?P<cond>.+)\))? EXECUTE FUNCTION (?P<function>\w+)\(\);$", re.M)
_PARTITION = re.compile(r"^CREATE TABLE (\w+) PARTITION OF (\w+) ", re.M)
_CHANGED = re.compile(r"old\.(\w+) IS DISTINCT FROM new\.(\w+)", re.I)


@dataclass(frozen=True)
class Trigger:
    name: str
    table: str
    events: frozenset[str]  # INSERT, UPDATE, DELETE, TRUNCATE
    columns: frozenset[str]  # UPDATE OF these (empty: any)
    per_row: bool
    changed: frozenset[str]  # WHEN only old.c IS DISTINCT FROM new.c: one of these is set
    function: str


def schema_text() -> str:
    return SCHEMA_FILE.read_text()


def schema_functions(text: str) -> dict[str, str]:
    """Each function of db/schema.sql: its body."""
    return {m.group(1): m.group(2) for m in _FUNCTION.finditer(text)}


def schema_partitions(text: str) -> dict[str, str]:
    """Each partition of db/schema.sql: its table."""
    return dict(_PARTITION.findall(text))


def schema_triggers(text: str) -> list[Trigger]:
    found = []
    for m in _TRIGGER.finditer(text):
        events, columns = set(), set()
        for event in m["events"].split(" OR "):
            kind, _, of = event.partition(" OF ")
            events.add(kind)
            columns |= {c.strip() for c in of.split(",") if c.strip()}
        changed: set[str] = set()
        if m["cond"]:
            pairs = _CHANGED.findall(m["cond"])
            rest = _CHANGED.sub("", m["cond"])
            if pairs and all(a == b for a, b in pairs) and not re.sub(r"[()\s]|\bOR\b", "",
                                                                       rest, flags=re.I):
                changed = {a for a, _ in pairs}
        found.append(Trigger(m["name"], m["table"], frozenset(events), frozenset(columns),
                             m["each"] == "ROW", frozenset(changed), m["function"]))
    return found


# -- what a statement writes ---------------------------------------------------------

_WRITE = re.compile(
    r"\bINSERT\s+INTO\s+(?:ONLY\s+)?(?P<insert>\w+)"
    r"|(?<!\bDO\s)(?<!\bFOR\s)(?<!\bKEY\s)\bUPDATE\s+(?:ONLY\s+)?(?P<update>\w+)"
    r"(?:\s+(?:AS\s+)?(?!SET\b)\w+)?\s+SET\b"
    r"|\bDELETE\s+FROM\s+(?:ONLY\s+)?(?P<delete>\w+)"
    r"|\bTRUNCATE\s+(?:TABLE\s+)?(?:ONLY\s+)?(?P<truncate>\w+)", re.I)
_SET_END = re.compile(r"\bWHERE\b|\bFROM\b|\bRETURNING\b|;|$", re.I)
_SET_COLUMN = re.compile(r"(?:^|,)\s*(\w+)\s*=(?!=)")
_DO_UPDATE = re.compile(r"\bON\s+CONFLICT\b.*?\bDO\s+UPDATE\s+SET\b", re.I | re.S)


@dataclass(frozen=True)
class Write:
    table: str
    event: str
    columns: frozenset[str] | None = None  # an UPDATE's SET columns


def _set_columns(text: str) -> frozenset[str]:
    """The columns a SET clause (text just after SET) assigns, at its top level."""
    depth, top = 0, []
    for ch in text[:_SET_END.search(text).start()]:  # type: ignore[union-attr]
        depth += ch == "("
        depth -= ch == ")"
        top.append(ch if depth == 0 else " ")
    return frozenset(c.lower() for c in _SET_COLUMN.findall("".join(top)))


def writes(sql: str) -> set[Write]:
    """The tables `sql` (comments out) inserts into, updates (with the
    columns it sets), deletes from or truncates; an upsert's DO UPDATE is
    an UPDATE of its table."""
    text = code(sql)
    found: set[Write] = set()
    matches = list(_WRITE.finditer(text))
    for i, m in enumerate(matches):
        event = m.lastgroup or ""
        table = m.group(event)
        if event == "update":
            found.add(Write(table, "UPDATE", _set_columns(text[m.end():])))
            continue
        found.add(Write(table, event.upper()))
        if event == "insert":
            segment = text[m.end():matches[i + 1].start() if i + 1 < len(matches) else None]
            if up := _DO_UPDATE.search(segment):
                found.add(Write(table, "UPDATE", _set_columns(segment[up.end():])))
    return found


def fires(trigger: Trigger, write: Write, partitions: dict[str, str]) -> bool:
    """Whether `write` fires `trigger`: on its table (a partition's write
    fires its table's row triggers, not its statement triggers), for its
    event, and, for an UPDATE, when it sets a column the trigger watches."""
    if write.table != trigger.table and not (
            trigger.per_row and partitions.get(write.table) == trigger.table):
        return False
    if write.event not in trigger.events:
        return False
    if write.event == "UPDATE" and write.columns is not None:
        if trigger.columns and not trigger.columns & write.columns:
            return False
        if trigger.changed and not trigger.changed & write.columns:
            return False
    return True
