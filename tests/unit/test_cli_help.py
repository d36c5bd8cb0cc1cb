"""Issue 65, point 1: `laurels --help` crashed on a fresh install (rich 15
read "[/cohorts]" in a docstring as markup). Every command's help renders,
found by walking the command tree (a command added later is covered)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from laurels.cli import app


def commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command's path (typer may carry its own click: duck-typed)."""
    yield path
    for name, sub in getattr(group, "commands", {}).items():
        yield from commands(sub, (*path, name))


EVERY = sorted(commands(typer.main.get_command(app)))


def test_the_tree_is_walked_whole() -> None:
    assert len(EVERY) > 20 and ("kinds", "define") in EVERY and ("webhooks", "retry") in EVERY


@pytest.mark.parametrize("path", EVERY, ids=lambda p: " ".join(p) or "laurels")
def test_every_help_renders(path: tuple[str, ...]) -> None:
    shown = CliRunner().invoke(app, [*path, "--help"], terminal_width=100)
    assert shown.exit_code == 0, shown.output + repr(shown.exception)
    assert "Usage:" in shown.output and "Traceback" not in shown.output
    assert "[/" not in shown.output or "SEASON[/cohorts]" in shown.output
