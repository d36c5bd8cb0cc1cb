"""The house rules the README's contributing section checks by hand, run
by every CI run: each store has one door, routes never hold a store, no
module grows past 400 lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.once

SRC = Path(__file__).parents[2] / "src" / "laurels"
MAX_LINES = 400


def sources() -> dict[str, str]:
    return {str(p.relative_to(SRC.parent)): p.read_text() for p in sorted(SRC.rglob("*.py"))}


def test_every_redis_command_runs_in_board() -> None:
    outside = [f"{name}:{n}" for name, text in sources().items()
               if not name.startswith("laurels/board/")
               for n, line in enumerate(text.splitlines(), 1)
               if re.search(r"\.redis\.|scripts\[", line)]
    assert outside == []


def test_every_sql_statement_runs_in_db() -> None:
    sql = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b")
    outside = [f"{name}:{n}" for name, text in sources().items()
               if not name.startswith("laurels/db/")
               for n, line in enumerate(text.splitlines(), 1) if sql.search(line)]
    assert outside == []


def outside_the_doors(pattern: re.Pattern[str]) -> list[str]:
    """The lines matching `pattern` outside the stores' doors. (board/ runs
    Redis, its pipelines `execute`; process/settings.py parses a URL with libpq's
    parser; process/embedded/ starts the servers.)"""
    kept = ("laurels/db/", "laurels/board/", "laurels/process/embedded/",
            "laurels/process/settings.py")
    return [f"{name}:{n}" for name, text in sources().items() if not name.startswith(kept)
            for n, line in enumerate(text.splitlines(), 1) if pattern.search(line)]


def test_domain_code_holds_transactions_not_connections() -> None:
    """Outside db/, PostgreSQL is reached through a `Tx` (a transaction or a
    held connection) and named queries: no raw connection, no cursor, no
    execute (issue 41: typed doors)."""
    raw = re.compile(r"\bConn\b|\.connection\(\)|\.getconn\(|\.cursor\(|\.execute\(|"
                     r"import psycopg$|AsyncConnection")
    assert outside_the_doors(raw) == []


def test_one_error_says_a_store_is_down() -> None:
    """Only db/ and board/ know their library's errors; above them a store
    that does not answer is `StoreUnavailable` (issue 41)."""
    library = re.compile(r"\b(RedisError|RedisClusterException|redis\.exceptions|"
                         r"psycopg\.(Error|OperationalError|errors))\b")
    assert outside_the_doors(library) == []


def test_no_route_holds_a_store() -> None:
    # Code that would hold a store (not the word "Redis" in a message, nor
    # the stores' exception types, which problems.py maps to 503).
    store = re.compile(r"\bDatabase\b|\.db\b|\.redis\b|\bRedis\(")
    found = [f"{name}:{n}" for name, text in sources().items()
             if name.startswith("laurels/api/")
             for n, line in enumerate(text.splitlines(), 1) if store.search(line)]
    assert found == []


def test_no_module_is_over_400_lines() -> None:
    long = {name: text.count("\n") for name, text in sources().items()
            if text.count("\n") > MAX_LINES}
    assert long == {}


MAX_FUNCTION_LINES = 60


def long_functions(text: str) -> list[str]:
    """The functions (and methods) of a module's text over MAX_FUNCTION_LINES."""
    return [f"{node.name}:{node.lineno} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno is not None
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]


def test_no_function_is_over_60_lines() -> None:
    """A function longer than a screen is split into named steps (issue 66)."""
    long = {name: found for name, text in sources().items()
            if (found := long_functions(text))}
    assert long == {}
    assert long_functions("def f():\n" + "    x = 1\n" * 61) == ["f:1 (62 lines)"]
