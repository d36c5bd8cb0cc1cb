"""The import-linter contracts (pyproject.toml, [tool.importlinter]; run by
.ci/run's lint stage) name every top-level module of laurels: a module added
later must be placed in each forbidden contract (as a source, as forbidden,
or as one its sources may import), never left out unchecked."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "laurels"
# What each contract's sources may import besides themselves.
MAY_IMPORT = {
    "The client stands alone (it ships to those who embed it): backoff only": {"backoff"},
    "The stores' doors (db, board, keys) know no domain module": {
        "errors", "kinds", "metrics", "ranking", "seasons", "states", "zones"},
    "The core is pure: no store, no domain service, no process": set(),
}


def top_level() -> set[str]:
    return {p.stem for p in SRC.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}


def names(modules: list[str]) -> set[str]:
    return {m.removeprefix("laurels.") for m in modules}


@pytest.mark.parametrize("name", sorted(MAY_IMPORT))
def test_every_module_is_placed_in_each_contract(name: str) -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["name"] == name)
    sources, forbidden = names(contract["source_modules"]), names(contract["forbidden_modules"])
    assert not sources & forbidden
    placed = sources | forbidden | MAY_IMPORT[name]
    assert placed == top_level(), (f"not placed: {sorted(top_level() - placed)}; "
                                   f"gone: {sorted(placed - top_level())}")
