"""One deployment, one set of settings (issue 40), as a platform team met
it: three `laurels serve` behind a load balancer on one PostgreSQL and one
Redis. A second process with missing or different secrets, or a projector
without the deployment's league settings, stops at start with one line
naming the variable, generates nothing, prints no secret and changes
nothing; with the same settings it serves."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import INGEST, laurels_bin, one_line_of, server_env

LEAGUES = {"LAURELS_LEAGUE_TIERS": "bronze,silver", "LAURELS_LEAGUE_SIZE": "5",
           "LAURELS_LEAGUE_PROMOTE": "1", "LAURELS_LEAGUE_DEMOTE": "1"}


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([laurels_bin(), *args], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def test_a_second_process_must_share_the_deployments_settings(
        serve: Any, tmp_path: Path, database_url: str, redis_url: str,
        key_prefix: str) -> None:
    first = serve(**LEAGUES)
    other_dir = tmp_path / "elsewhere"
    env = server_env(database_url, redis_url, key_prefix, other_dir, **LEAGUES,
                     LAURELS_PORT="1")  # never bound: it stops before it serves
    # No secrets of its own for a deployment that has them.
    bare = {k: v for k, v in env.items() if not k.endswith(("_TOKEN", "_TOKEN_SECRET"))}
    refused = run(bare, "serve")
    line = one_line_of(refused)
    assert refused.returncode != 0 and line.startswith("laurels: LAURELS_INGEST_TOKEN is not set")
    assert "generated" not in refused.stdout + refused.stderr
    assert not (other_dir / "secrets.json").exists()
    # Another secret, or another setting, while the first one runs.
    for change, name in ((dict(LAURELS_INGEST_TOKEN="another-token"), "LAURELS_INGEST_TOKEN"),
                         (dict(LAURELS_TIE_POLICY="first"), "LAURELS_TIE_POLICY")):
        refused = run({**env, **change}, "serve")
        line = one_line_of(refused)
        assert refused.returncode != 0 and line.startswith(f"laurels: {name} "), line
        assert "another-token" not in refused.stdout + refused.stderr
    # A projector started without the league settings turns nothing off.
    no_leagues = {k: v for k, v in env.items() if not k.startswith("LAURELS_LEAGUE_")}
    refused = run(no_leagues, "projector")
    assert one_line_of(refused).startswith("laurels: LAURELS_LEAGUE_TIERS is unset here")
    # ...nor does a one-shot command run with other values.
    refused = run({**no_leagues, "LAURELS_TIE_POLICY": "first"}, "verify", "--season",
                  "current")
    assert one_line_of(refused).startswith("laurels: LAURELS_TIE_POLICY is first here")
    # The same settings: it serves, and the first one's ingest token works on it.
    second = serve(**LEAGUES)
    assert second.client(INGEST).get("/readyz").status_code == 200
    assert first.client(INGEST).post("/v1/completions", json={
        "completion_id": "d1", "user_id": 1, "points": 1}).status_code == 201
    assert second.client(INGEST).post("/v1/completions", json={
        "completion_id": "d2", "user_id": 2, "points": 1}).status_code == 201


def test_a_one_shot_command_takes_the_settings_its_shell_leaves_unset(
        serve: Any, tmp_path: Path, database_url: str, redis_url: str,
        key_prefix: str) -> None:
    """Issue 65, point 11: an operator's shell rarely carries every shared
    setting. A one-shot command takes the deployment's recorded value of one
    it leaves unset (here the tie policy, which names the board's keys, and
    the periods, which name the day's board), and stops only on one it sets
    to another value."""
    shared = {"LAURELS_TIE_POLICY": "first", "LAURELS_PERIODS": "week,day", **LEAGUES}
    server = serve(**shared)
    assert server.client(INGEST).post("/v1/completions", json={
        "completion_id": "o1", "user_id": 1, "points": 3}).status_code == 201
    bare = server_env(database_url, redis_url, key_prefix, tmp_path / "shell")
    for season in ("current", "current-day"):
        out = run(bare, "verify", "--season", season)
        assert out.returncode == 0 and "consistent (1 learners checked)" in out.stdout, out
    refused = run({**bare, "LAURELS_PERIODS": "week"}, "verify", "--season", "current")
    assert one_line_of(refused).startswith("laurels: LAURELS_PERIODS is week here"), refused
