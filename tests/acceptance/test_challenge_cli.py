"""`laurels challenges` (issue 67; CONTRACT.md, CLI and "Challenges: boards
with a start and an end"): a challenge defined (by options, or a JSON
file), listed (a table, or --json), joined, shown live, decided once with
its rewards, and deleted; each refusal one line on stderr, a failing exit
and nothing on stdout.

In process (typer's runner) against the test's PostgreSQL and Redis, as a
one-shot command runs (tests/acceptance/test_cli.py runs the real
processes): the commands' clock is the test's, so nothing here depends on
the day it runs."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from laurels.cli import app
from laurels.process.settings import Secrets
from laurels.runtime import Runtime
from tests.helpers import ADMIN, INGEST, USER_SECRET, make_settings, server_env

pytestmark = pytest.mark.once

WINDOW = ["--starts-at", "2025-12-02T00:00:00Z", "--ends-at", "2025-12-08T00:00:00Z"]
SPRINT = ["define", "sprint", "--title", "December sprint", *WINDOW, "--join", "required",
          "--max-size", "2", "--reward", "1:gold", "--reward", "2-10:silver"]


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@dataclass
class Cli:
    env: dict[str, str]
    now: datetime
    record: Any  # (user_id, points, completed_at) items -> None

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(app, ["challenges", *args], env=self.env)

    def ok(self, *args: str) -> Any:
        """A command's --json answer (it must succeed)."""
        out = self.run(*args, "--json")
        assert out.exit_code == 0 and "Traceback" not in out.stderr, (args, out.stderr)
        return json.loads(out.stdout)

    def line(self, *args: str) -> str:
        """A command's one line for people (it must succeed)."""
        out = self.run(*args)
        assert out.exit_code == 0, (args, out.stderr)
        [said] = out.stdout.splitlines()
        return said

    def refused(self, *args: str, code: int = 1) -> str:
        """A refusal: its exit code, nothing on stdout, one last line on stderr."""
        out = self.run(*args)
        assert (out.exit_code, out.stdout) == (code, ""), (args, out.exit_code, out.stdout)
        assert "Traceback" not in out.stderr, out.stderr
        last = out.stderr.strip().splitlines()[-1]
        assert last.startswith("laurels: "), last
        return last


@pytest.fixture
def cli(tmp_path: Path, database_url: str, redis_url: str, key_prefix: str,
        monkeypatch: pytest.MonkeyPatch) -> Cli:
    """The commands with the test's clock (every service a command's
    Runtime builds reads `laurels.runtime._now`)."""
    env = server_env(database_url, redis_url, key_prefix, tmp_path / "data")
    settings = make_settings(tmp_path, database_url, redis_url, key_prefix)

    def record(items: list[tuple[int, int, str]]) -> None:
        async def run() -> None:
            rt = Runtime(settings, Secrets(INGEST, ADMIN, USER_SECRET), database_url, redis_url)
            await rt.open(run_migrations=False)
            try:
                outcomes = await rt.ingestor.record([
                    {"completion_id": f"c{n}", "user_id": uid, "points": points,
                     "completed_at": at} for n, (uid, points, at) in enumerate(items)])
                assert {o.status for o in outcomes} == {"recorded"}, outcomes
            finally:
                await rt.close()

        asyncio.run(run())

    state = Cli(env, moment("2025-11-30T12:00:00"), record)
    monkeypatch.setattr("laurels.runtime._now", lambda: state.now)
    return state


def test_a_challenge_is_defined_listed_joined_shown_decided_and_deleted(
        cli: Cli, tmp_path: Path) -> None:
    sprint = cli.ok(*SPRINT)
    assert sprint == {
        "challenge_id": "sprint", "title": "December sprint", "board": "global",
        "metric": "points", "starts_at": "2025-12-02T00:00:00Z",
        "ends_at": "2025-12-08T00:00:00Z", "join": "required", "max_size": 2,
        "participants": 0, "rewards": [{"from": 1, "to": 1, "reward": "gold"},
                                       {"from": 2, "to": 10, "reward": "silver"}],
        "status": "upcoming", "decided": False, "notify": False, "grace_seconds": 0}
    # Before the start anything may change: the whole definition again.
    said = cli.line(*SPRINT[:3], "December SQL sprint", *SPRINT[4:])
    assert said.startswith("laurels: challenge sprint updated: sprint: December SQL sprint, "
                           "on global by points"), said
    body = tmp_path / "open.json"
    body.write_text(json.dumps({"title": "Open week", "starts_at": "2025-12-10T00:00:00Z",
                                "ends_at": "2025-12-17T00:00:00Z", "notify": True}))
    assert cli.line("define", "open-week", "--file", str(body)).startswith(
        "laurels: challenge open-week created: ")

    listed = cli.ok()
    assert [c["challenge_id"] for c in listed["challenges"]] == ["open-week", "sprint"]
    assert listed["next"] is None and listed["challenges"][1]["title"] == "December SQL sprint"
    table = cli.run().stdout  # a table for people
    assert "December SQL sprint" in table and "1:gold, 2-10:silver" in table, table
    assert "required (at most 2)" in table and "upcoming" in table, table
    assert cli.ok("--status", "active")["challenges"] == []

    assert cli.ok("join", "sprint", "--user", "1")["joined_at"] == "2025-11-30T12:00:00Z"
    assert cli.line("join", "sprint", "--user", "2") == (
        "laurels: learner 2 joined sprint at 2025-11-30T12:00:00Z")
    assert cli.refused("join", "sprint", "--user", "3") == "laurels: challenge sprint is full (2)"
    assert cli.ok("join", "open-week", "--user", "3") == {
        "challenge_id": "open-week", "user_id": 3, "joined_at": None}
    assert "is open: learner 3 takes part" in cli.line("join", "open-week", "--user", "3")

    cli.now = moment("2025-12-06T00:00:00")
    cli.record([(1, 10, "2025-12-02T10:00:00Z"), (2, 30, "2025-12-03T10:00:00Z"),
                (3, 50, "2025-12-03T11:00:00Z"),  # 3 did not join: not counted
                (1, 5, "2025-12-01T10:00:00Z")])  # before the start: not counted
    shown = cli.ok("show", "sprint")
    assert (shown["challenge"]["status"], shown["challenge"]["participants"]) == ("active", 2)
    assert (shown["board"]["total"], shown["board"]["decided"]) == (2, False)
    assert [(e["rank"], e["user_id"], e["score"], e["reward"])
            for e in shown["board"]["entries"]] == [(1, 2, 30, None), (2, 1, 10, None)]
    table = cli.run("show", "sprint").stdout
    assert "Learner 2" in table and "active; join required (at most 2)" in table, table
    around = cli.ok("show", "sprint", "--user", "1", "--radius", "1")["around"]
    assert [(e["user_id"], e["self"]) for e in around["neighbors"]] == [(2, False), (1, True)]
    mine = cli.ok("--user", "2")
    assert [(c["challenge_id"], c["rank"], c["score"]) for c in mine["challenges"]] == [
        ("sprint", 1, 30)]
    assert cli.line("decide") == "laurels: no challenge is due"

    cli.now = moment("2025-12-08T00:00:01")
    assert cli.ok("decide") == {"decided": ["sprint"]}
    assert cli.ok("decide") == {"decided": []}  # decided once
    decided = cli.ok("show", "sprint")
    assert decided["challenge"]["decided"] and decided["challenge"]["status"] == "ended"
    assert [(e["user_id"], e["reward"]) for e in decided["board"]["entries"]] == [
        (2, "gold"), (1, "silver")]
    assert cli.ok("--user", "2")["challenges"][0]["reward"] == "gold"
    assert cli.refused("join", "sprint", "--user", "4") == (
        "laurels: challenge sprint has ended")
    assert "only its title" in cli.refused(*SPRINT[:11], "3", *SPRINT[12:])  # max-size 3

    assert cli.line("delete", "sprint") == "laurels: challenge sprint deleted"
    assert cli.refused("delete", "sprint") == "laurels: no challenge sprint"
    assert cli.refused("show", "sprint") == "laurels: no challenge sprint"
    assert [c["challenge_id"] for c in cli.ok()["challenges"]] == ["open-week"]


def test_each_refusal_is_one_line(cli: Cli, tmp_path: Path) -> None:
    assert cli.line(*SPRINT).startswith("laurels: challenge sprint created: ")
    cli.now = moment("2025-12-03T00:00:00")  # started: only title, rewards, a later end
    said = cli.refused(*SPRINT[:5], "2025-12-01T00:00:00Z", *SPRINT[6:])
    assert said == ("laurels: challenge sprint has started: only its title, rewards and a "
                    "later ends_at may change"), said
    assert cli.ok(*SPRINT[:3], "Renamed", *SPRINT[4:])["title"] == "Renamed"
    not_json = tmp_path / "body.txt"
    not_json.write_text("title: x")
    for args, code, says in (
            (["define", "x", "--title", "X", *WINDOW, "--reward", "gold"], 2,
             "--reward gold: say FROM-TO:REWARD"),
            (["define", "x", "--title", "X", *WINDOW, "--reward", "1-x:gold"], 2, "--reward"),
            (["define", "x", "--file", str(tmp_path / "missing.json")], 2, "--file"),
            (["define", "x", "--file", str(not_json)], 2, "is not JSON"),
            (["define", "Not An Id", "--title", "X", *WINDOW], 1, "challenge_id must match"),
            (["define", "x", *WINDOW], 1, "title"),
            (["define", "x", "--title", "X", *WINDOW, "--metric", "speed"], 1, "metric"),
            (["define", "x", "--title", "X", "--starts-at", "2025-11-01T00:00:00Z",
              "--ends-at", "2025-11-02T00:00:00Z"], 1, "ends_at must be in the future"),
            (["--status", "lost"], 2, "--status: upcoming, active or ended"),
            (["show", "nope"], 1, "no challenge nope"),
            (["join", "nope", "--user", "1"], 1, "no challenge nope")):
        assert says in cli.refused(*args, code=code), args
