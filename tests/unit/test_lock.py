"""Issue 65, point 2: the README and CI install from requirements.lock. The
lock must hold a pinned, hashed version of every dependency pyproject.toml
names (the dev extra and the build tools included), each within its range:
a range changed without moving the lock fails here, not on a user's machine."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def locked() -> dict[str, tuple[str, int]]:
    """Each pinned name: its version and how many hashes it carries."""
    pins: dict[str, tuple[str, int]] = {}
    name = ""
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if m := PIN.match(line):
            name = canonicalize_name(m[1])
            pins[name] = (m[2], 0)
        elif line.strip().startswith("--hash=sha256:") and name:
            version, hashes = pins[name]
            pins[name] = (version, hashes + 1)
    return pins


def wanted() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = [*project["project"]["dependencies"],
             *project["project"]["optional-dependencies"]["dev"],
             *project["build-system"]["requires"]]
    names += [line for line in (ROOT / "requirements-build.in").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    return [Requirement(n) for n in names]


def test_every_dependency_is_locked_within_its_range_with_hashes() -> None:
    pins = locked()
    assert len(pins) > 50
    for req in wanted():
        version, hashes = pins.get(canonicalize_name(req.name), ("", 0))
        assert version, f"{req.name} is not in requirements.lock"
        assert req.specifier.contains(version, prereleases=True), (
            f"requirements.lock pins {req.name}=={version}, outside {req.specifier}")
        assert hashes, f"{req.name} has no hash in requirements.lock"
    assert all(h for _v, h in pins.values()), "every pin carries its hashes"


def test_the_readme_and_ci_install_from_the_lock() -> None:
    first = (ROOT / "README.md").read_text().split("```", 2)[1]
    assert "pip install -r requirements.lock" in first
    assert "pip install --no-deps --no-build-isolation -e ." in first
    assert "pip install -q -r requirements.lock" in (ROOT / ".ci" / "run").read_text()
