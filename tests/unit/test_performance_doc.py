"""Issue 65, point 14: docs/performance.md was a 2,072-line diary whose first
table was a week old. It opens with today's figures: the table is the one
`python -m bench.plot --table` makes of bench/results.json (generated, not
typed: a new run's results change both together), under 300 lines."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from bench.plot import table

pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parents[2]


def test_the_figures_are_the_benchs_results() -> None:
    doc = (ROOT / "docs" / "performance.md").read_text()
    assert doc.count("\n") < 300
    results = orjson.loads((ROOT / "bench" / "results.json").read_bytes())
    assert table(results) in doc, "run `python -m bench.plot --table` into docs/performance.md"
    assert results["when"][:10] in doc  # the run's date, said
    first = doc.index("## ")
    assert doc[first:].startswith("## Today's figures")
