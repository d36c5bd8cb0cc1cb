"""Every writer is a move of a model machine (issue 63; tests/moves.py).

The writers are enumerated from the code, never listed by hand here: the
OpenAPI document's writing methods (every route of the app), every command
of the CLI, the background loops a process runs with every option on, and
the public coroutines of the kinds' and groups' lifecycle classes. Each
must be in tests/moves.py's WRITERS (with a rule a machine has) or READERS
(with why it writes nothing)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

import pytest
import typer.main

import laurels.challenges
from laurels.api import create_app
from laurels.cli import app as cli
from laurels.lifecycle.board_kinds import BoardKinds
from laurels.lifecycle.teams import Teams
from laurels.lifecycle.windows import Windows
from laurels.process.settings import Secrets, Settings
from laurels.reads.groups import Groups
from laurels.runtime import Runtime, background_loops
from tests.integration.test_model_challenges import ChallengesMachine
from tests.integration.test_model_faults import FaultMachine
from tests.integration.test_model_interleaved import InterleavingMachine
from tests.integration.test_model_kinds import KindsMachine
from tests.moves import READERS, WRITERS

pytestmark = pytest.mark.once

MACHINES: dict[str, Any] = {m.__name__: m for m in (InterleavingMachine, KindsMachine,
                                                     FaultMachine, ChallengesMachine)}
# The challenges' classes, of every module of their package (enumerated).
CHALLENGE_MODULES = [importlib.import_module(f"laurels.challenges.{info.name}")
                     for info in pkgutil.iter_modules(laurels.challenges.__path__)]
CHALLENGE_CLASSES = [c for m in CHALLENGE_MODULES for c in vars(m).values()
                     if inspect.isclass(c) and c.__module__ == m.__name__]
WRITING = {"post", "put", "patch", "delete"}
DB, REDIS = "postgresql://127.0.0.1:1/none", "redis://127.0.0.1:1/0"


def runtime() -> Runtime:
    """A service graph with every option on; nothing connects."""
    settings = Settings(
        database_url=DB, redis_url=REDIS, ingest_token="i" * 24, admin_token="a" * 24,
        user_token_secret="u" * 32, webhook_url="http://127.0.0.1:9/hooks",
        league_tiers=("bronze", "silver"), league_promote=(1,), league_demote=(1,),
        retain_completions_days=400, process_id="p", redis_embedded=True)
    return Runtime(settings, Secrets("i" * 24, "a" * 24, "u" * 32), DB, REDIS)


def writers() -> set[str]:
    rt = runtime()
    found = {f"{method.upper()} {path}"
             for path, ops in create_app(rt, migrate=False).openapi()["paths"].items()
             for method in ops if method in WRITING}

    def commands(command: Any, words: list[str]) -> None:
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                commands(sub, [*words, name])
        else:
            found.add(" ".join(["cli", *words]))

    commands(typer.main.get_command(cli), [])
    found |= {f"loop {name}" for name in background_loops(rt)}
    for cls in (BoardKinds, Groups, Teams, Windows, *CHALLENGE_CLASSES):
        found |= {f"{cls.__name__}.{name}" for name, fn in vars(cls).items()
                  if not name.startswith("_") and inspect.iscoroutinefunction(fn)}
    return found


def test_every_writer_has_a_move_and_every_move_a_rule() -> None:
    found = writers()
    assert len(found) > 60, sorted(found)  # the enumeration itself works
    unknown = sorted(found - set(WRITERS) - set(READERS))
    assert not unknown, f"writers with no move in tests/moves.py: {unknown}"
    both = sorted(set(WRITERS) & set(READERS))
    assert not both, both
    for writer, (machine, name) in WRITERS.items():
        fn = getattr(MACHINES[machine], name, None)
        assert getattr(fn, "hypothesis_stateful_rule", None) is not None, (
            f"{writer}: {machine} has no rule {name}")
    gone = sorted(w for w in [*WRITERS, *READERS]
                  if w not in found and not w.startswith(("step ", "fault ")))
    assert not gone, f"tests/moves.py names writers the code no longer has: {gone}"
