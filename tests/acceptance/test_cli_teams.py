"""`laurels teams` (CONTRACT.md, CLI and "Team boards") as real processes:
team kinds listed (a table, or --json), defined, retitled and deleted, and a
kind's board read (every team named, as the operator reads it), on the
test's PostgreSQL and Redis; each refusal one line on stderr, a failing exit
and nothing on stdout. The groups, their members and the completions are
the platform's, written here through the services their endpoints call.
Seasons never close here (LAURELS_CLOSE_SEASONS=false): the week is fixed,
whatever the day the test runs."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from laurels.core.validation import validate_group, validate_members
from laurels.process.settings import Secrets
from laurels.runtime import Runtime
from tests.helpers import ADMIN, INGEST, USER_SECRET, laurels_bin, make_settings, server_env

pytestmark = [pytest.mark.once, pytest.mark.slow]

SEASON = "2025-W49"
AT = "2025-12-03T10:00:00Z"


class Cli:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([laurels_bin(), "teams", *args], env=self.env,
                              capture_output=True, text=True, timeout=120)

    def ok(self, *args: str) -> Any:
        """A command's --json answer (it must succeed)."""
        out = self.run(*args, "--json")
        assert out.returncode == 0 and "Traceback" not in out.stderr, (args, out.stderr)
        return json.loads(out.stdout)

    def said(self, *args: str) -> str:
        """A command's output for people (it must succeed)."""
        out = self.run(*args)
        assert out.returncode == 0 and "Traceback" not in out.stderr, (args, out.stderr)
        return out.stdout

    def refused(self, *args: str, code: int = 1) -> str:
        """A refusal: its exit code, nothing on stdout, one last line on stderr."""
        out = self.run(*args)
        assert (out.returncode, out.stdout) == (code, ""), (args, out)
        assert "Traceback" not in out.stderr, out.stderr
        last = out.stderr.strip().splitlines()[-1]
        assert last.startswith("laurels: "), last
        return last


def platform(settings: Any, database_url: str, redis_url: str) -> None:
    """Classes 7a (members-only: learners 1, 2) and 7b (public: 3, 4) of the
    kind `classes`, a group of no kind (chess: 1, 3), and the week's
    completions, applied to its board."""
    async def run() -> None:
        rt = Runtime(settings, Secrets(INGEST, ADMIN, USER_SECRET), database_url, redis_url)
        await rt.open(run_migrations=False)
        try:
            for gid, access, team, members in (("7a", "members", "classes", [1, 2]),
                                               ("7b", "public", "classes", [3, 4]),
                                               ("chess", "public", None, [1, 3])):
                await rt.groups.put(gid, validate_group({"access": access, "team": team}))
                await rt.groups.change_members(gid, validate_members({"add": members}))
            outcomes = await rt.ingestor.record([
                {"completion_id": f"c{uid}", "user_id": uid, "points": points,
                 "completed_at": AT} for uid, points in ((1, 10), (2, 5), (3, 8), (4, 8))])
            assert {o.status for o in outcomes} == {"recorded"}, outcomes
            await rt.projector.drain(min_age_seconds=0)
        finally:
            await rt.close()

    asyncio.run(run())


@pytest.fixture
def cli(tmp_path: Path, database_url: str, redis_url: str, key_prefix: str) -> Cli:
    return Cli(server_env(database_url, redis_url, key_prefix, tmp_path / "data",
                          LAURELS_CLOSE_SEASONS="false"))


def test_team_kinds_are_listed_defined_read_and_deleted(
        cli: Cli, tmp_path: Path, database_url: str, redis_url: str, key_prefix: str) -> None:
    assert cli.ok() == {"team_kinds": []}
    classes = cli.ok("define", "classes", "--title", "Classes")
    assert {k: classes[k] for k in ("team", "title", "aggregate", "top")} == {
        "team": "classes", "title": "Classes", "aggregate": "sum", "top": None}
    assert cli.said("define", "squads", "--aggregate", "top", "--top", "3") == (
        "laurels: team kind squads defined: Squads, its groups ranked by the sum of its 3 "
        "best members' scores\n")
    assert cli.said("define", "classes", "--title", "Forms") == (
        "laurels: team kind classes updated: Forms, its groups ranked by the sum of its "
        "members' scores\n")
    assert "delete it first" in cli.refused("define", "classes", "--aggregate", "mean")
    assert "top must be 1 to 100" in cli.refused("define", "pairs", "--aggregate", "top")
    assert "team must match" in cli.refused("define", "Not-A-Kind")
    listed = cli.ok("list")
    assert [(k["team"], k["title"], k["top"]) for k in listed["team_kinds"]] == [
        ("classes", "Forms", None), ("squads", "Squads", 3)]
    assert listed == cli.ok()  # no subcommand: the list too
    table = cli.said()
    assert "Forms" in table and "Squads" in table and "created at" in table, table

    platform(make_settings(tmp_path, database_url, redis_url, key_prefix, close_seasons=False),
             database_url, redis_url)
    board = cli.ok("board", "classes", "--season", SEASON)
    assert {k: board[k] for k in ("team", "title", "season", "board", "aggregate", "total",
                                  "next")} == {
        "team": "classes", "title": "Forms", "season": SEASON, "board": "global",
        "aggregate": "sum", "total": 2, "next": None}
    assert [(e["rank"], e["group_id"], e["name"], e["score"], e["members"])
            for e in board["entries"]] == [(1, "7b", "7b", 16, 2), (2, "7a", "7a", 15, 2)]
    said = cli.said("board", "classes", "--season", SEASON, "--limit", "1")
    first = said.splitlines()[0]
    assert first == ("laurels: Forms (classes) on global, 2025-W49: 2 teams ranked by the sum "
                     "of its members' scores; the top 1"), said
    assert "7b" in said and "7a" not in said, said
    assert cli.ok("board", "squads", "--season", SEASON)["total"] == 0  # no group in it

    assert cli.refused("board", "nope", "--season", SEASON) == (
        "laurels: no team kind nope is defined")
    assert "no board kind skill is defined" in cli.refused(
        "board", "classes", "--board", "skill:sql", code=2)
    assert "no ISO week 99" in cli.refused("board", "classes", "--season", "2025-W99", code=2)

    assert cli.said("delete", "squads") == "laurels: team kind squads deleted\n"
    assert cli.ok("delete", "classes") == {"team": "classes", "deleted": True}
    assert cli.refused("delete", "classes") == "laurels: no team kind classes is defined"
    assert cli.ok() == {"team_kinds": []}
    assert os.path.isdir(tmp_path) and not (tmp_path / "data").exists()  # no secret written
