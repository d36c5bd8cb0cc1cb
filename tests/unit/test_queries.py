"""The named queries (db/queries/*.sql) and the code that runs them agree: a
query nothing runs is dead code, a name the code runs must exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from laurels.db import QUERIES

pytestmark = pytest.mark.once

SRC = Path(__file__).parents[2] / "src" / "laurels"
# A query is run where its name is passed (`db.fetch("x", ...)`), or named
# as a string a caller passes on (rebuild.Source, verify's sums).
RUNS = re.compile(r'"([a-z][a-z_0-9]+)"')


def test_every_named_query_is_run_by_the_service_and_exists() -> None:
    code = "\n".join(p.read_text() for p in SRC.rglob("*.py"))
    run = set(RUNS.findall(code))
    assert run, "the pattern finds the calls"
    assert sorted(set(QUERIES) - run) == [], "named queries nothing in src/ runs"
    calls = set(re.findall(r'\b(?:fetch|fetch_one|run|stream\w*|q)\(\s*"([a-z_0-9]+)"',
                           code))
    assert sorted(calls - set(QUERIES)) == [], "queries run that db/queries/ does not name"


def test_every_query_says_what_it_does_in_its_owners_file() -> None:
    """Each named query is described (a comment line besides its locks) and
    lives in the file of the module that runs it, at its path
    (`queries/projection/rebuild.sql` for `projection/rebuild.py`), or in
    shared.sql when several do (issue 41: queries by owner)."""
    folder = SRC / "db" / "queries"
    # The client package runs no SQL (and shares some names with the API).
    code = {p.relative_to(SRC).with_suffix("").as_posix(): p.read_text()
            for p in SRC.rglob("*.py") if not {"db", "client"} & set(p.parts)}
    for entry in sorted(folder.rglob("*.sql")):
        owner = entry.relative_to(folder).with_suffix("").as_posix()
        for block in re.split(r"^-- name: ", entry.read_text(), flags=re.M)[1:]:
            name, _, body = block.partition("\n")
            name = name.strip()
            described = [line for line in body.splitlines()
                         if line.startswith("--") and not line.startswith("-- locks:")]
            assert described, f"{entry.name}: {name} says nothing of what it does"
            users = {m for m, text in code.items() if f'"{name}"' in text}
            if owner == "shared":
                assert len(users) > 1, f"{name} is run by {users} alone: move it there"
            elif owner != "db":
                assert users <= {owner}, f"{name} in {entry.name} is run by {users}"
