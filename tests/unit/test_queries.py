"""The named queries (db/queries.sql) and the code that runs them agree: a
query nothing runs is dead code, a name the code runs must exist."""

from __future__ import annotations

import re
from pathlib import Path

from laurels.db import QUERIES

SRC = Path(__file__).parents[2] / "src" / "laurels"
# A query is run where its name is passed (`db.fetch("x", ...)`), or named
# as a string a caller passes on (rebuild.Source, verify's sums).
RUNS = re.compile(r'"([a-z][a-z_0-9]+)"')


def test_every_named_query_is_run_by_the_service_and_exists() -> None:
    code = "\n".join(p.read_text() for p in SRC.rglob("*.py"))
    run = set(RUNS.findall(code))
    assert run, "the pattern finds the calls"
    assert sorted(set(QUERIES) - run) == [], "named queries nothing in src/ runs"
    calls = set(re.findall(r'\b(?:fetch|fetch_one|run|stream|stream_column|q)\(\s*"([a-z_0-9]+)"',
                           code))
    assert sorted(calls - set(QUERIES)) == [], "queries run that queries.sql does not name"
