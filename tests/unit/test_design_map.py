"""docs/design.md's map of the folders is held to the tree: every folder
and top-level module of src/laurels is in it, and every module of a folder
is named in that folder's entry (by its file name, or a `*_x.py` pattern),
and nothing it names is gone."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "laurels"


def entries() -> dict[str, str]:
    """The map's entries: a folder (`core/`) or a module (`runtime.py`) at
    its left, and the text beside and under it."""
    doc = (ROOT / "docs" / "design.md").read_text()
    block = doc.split("## Map of the folders", 1)[1].split("```", 2)[1]
    out: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        m = re.match(r"^  (\S+)\s", line + " ")
        if m and not line.startswith("   "):
            current = m.group(1)
            out[current] = line[len(m.group(0)):]
        elif current is not None and line.startswith("   "):
            out[current] += " " + line.strip()
    return out


def tree() -> dict[str, list[str]]:
    """Each folder of src/laurels with its modules (a subfolder's as
    `sub/`), and each top-level module."""
    out: dict[str, list[str]] = {p.name: [] for p in SRC.glob("*.py")}
    for folder in sorted(p for p in SRC.iterdir() if (p / "__init__.py").exists()):
        mods = [p.name for p in folder.glob("*.py") if p.name != "__init__.py"]
        mods += [f"{p.name}/" for p in folder.iterdir() if (p / "__init__.py").exists()]
        out[f"{folder.name}/"] = mods
    return out


def test_every_folder_and_module_is_on_the_map() -> None:
    mapped, real = entries(), tree()
    assert set(mapped) == set(real), (f"not on the map: {sorted(set(real) - set(mapped))}; "
                                      f"gone: {sorted(set(mapped) - set(real))}")
    for folder, modules in real.items():
        text = mapped[folder]
        named = set(re.findall(r"[\w*]+\.py|\w+/", text))
        missing = [m for m in modules
                   if m not in named and not any(fnmatch.fnmatch(m, n) for n in named)]
        assert not missing, f"{folder}: {missing} not named on the map"
        here = {p.name for p in (SRC / folder).rglob("*.py")}  # (a subfolder's too)
        gone = [n for n in named if n.endswith(".py") and "*" not in n and n not in here]
        assert not gone, f"{folder}: the map names {gone}, which are gone"


def test_the_map_reader_sees_what_it_checks() -> None:
    """The reader finds the folders (a check that cannot fail checks nothing)."""
    mapped = entries()
    assert "core/" in mapped and "seasons.py" in mapped["core/"]
    assert "runtime.py" in mapped
