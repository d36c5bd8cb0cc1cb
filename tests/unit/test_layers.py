"""The import-linter contracts (pyproject.toml, [tool.importlinter]; run by
.ci/run's lint stage) name every top-level package of laurels: one added
later must be placed in the layers, and in each forbidden contract as a
source, as forbidden, or as one its sources may import, never left out
unchecked."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "laurels"
CORE = {f"core.{p.stem}" for p in (SRC / "core").glob("*.py") if p.stem != "__init__"}
# What each forbidden contract's sources may import besides themselves.
MAY_IMPORT = {
    "The client stands alone (it ships to those who embed it): backoff only": {
        "core", "core.backoff"},
    "The stores' doors (db, board) know no domain module": {
        "api", "challenges", "cli", "client", "ingest", "leagues", "learners", "lifecycle", "live",
        "process", "projection", "reads", "runtime",  # (the layers keep them out)
        "core", "core.errors", "core.metrics", "core.ranking", "core.registry",
        "core.seasons", "core.spans", "core.states", "core.time_zones"},
    "The core is pure: no store, no domain service, no process": set(),
}
LAYERS = "The concerns are layered: each imports only those below it"


def top_level() -> set[str]:
    """The packages under laurels/, and its modules (runtime.py)."""
    return {p.stem for p in SRC.glob("*.py")} | {
        p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}


def names(modules: list[str]) -> set[str]:
    return {m.removeprefix("laurels.") for m in modules}


def contract(name: str) -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    found: dict[str, object] = next(c for c in config["contracts"] if c["name"] == name)
    return found


def test_every_package_is_a_layer() -> None:
    layers = contract(LAYERS)["layers"]
    assert isinstance(layers, list)
    placed = {m for layer in layers for m in names(re.split(r"\s*[|:]\s*", layer))}
    assert placed == top_level() - {"client"}, (
        f"not placed: {sorted(top_level() - {'client'} - placed)}; "
        f"gone: {sorted(placed - top_level())}")


@pytest.mark.parametrize("name", sorted(MAY_IMPORT))
def test_every_module_is_placed_in_each_forbidden_contract(name: str) -> None:
    c = contract(name)
    sources, forbidden = names(c["source_modules"]), names(c["forbidden_modules"])  # type: ignore[arg-type]
    assert not sources & forbidden
    tops = {t for t in top_level() if t != "core"} | CORE | {"core"}
    placed = sources | forbidden | MAY_IMPORT[name]
    if "core" in sources:  # the core's own modules are the source
        placed |= CORE
    assert placed == tops, (f"not placed: {sorted(tops - placed)}; "
                            f"gone: {sorted(placed - tops)}")
