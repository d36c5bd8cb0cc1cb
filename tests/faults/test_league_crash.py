"""Weekly leagues against processes that are really killed (SIGKILL), as a
power cut would (issue 28): a join is never lost after its completion
commits, and a decision killed midway decides nothing, then exactly once
when the service runs again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from laurels.core.seasons import season_of
from tests.helpers import INGEST, server_env, start_server, token_for, wait_until

pytestmark = pytest.mark.slow

LEAGUES = {"LAURELS_LEAGUE_TIERS": "bronze,silver,gold", "LAURELS_LEAGUE_SIZE": "5",
           "LAURELS_LEAGUE_PROMOTE": "2", "LAURELS_LEAGUE_DEMOTE": "1",
           "LAURELS_CLOSE_SEASONS": "false"}


def post(base: str, items: list[dict[str, Any]]) -> None:
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {INGEST}"},
                      timeout=30) as c:
        resp = c.post("/v1/completions/batch", json={"completions": items})
        assert resp.status_code == 200, resp.text


def rows(database_url: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(sql).fetchall()  # type: ignore[arg-type]


def test_a_join_committed_before_a_kill_is_placed_after_it(tmp_path: Path, database_url: str,
                                                           redis_url: str,
                                                           key_prefix: str) -> None:
    env = server_env(database_url, redis_url, key_prefix, tmp_path / "d", **LEAGUES)
    crashing = start_server({**env, "LAURELS_FAILPOINTS": "ingest_after_commit"},
                            tmp_path / "a.log")
    with pytest.raises(httpx.TransportError):
        post(crashing.url, [{"completion_id": "j1", "user_id": 7, "points": 3}])
    assert crashing.process.wait(10) == -9
    assert rows(database_url, "SELECT user_id, placed FROM league_joins") == [(7, False)]
    server = start_server(env, tmp_path / "b.log")
    try:
        me = server.client(token_for(env, 7))
        league = wait_until(lambda: (b := me.get("/v1/users/7/league").json())["status"]
                            == "placed" and b, 20, "learner 7 placed")
        assert league["tier"] == "bronze" and league["cohort_id"]
        assert rows(database_url, "SELECT user_id FROM league_members") == [(7,)]
    finally:
        server.stop()


def test_a_decision_killed_midway_decides_once_after_a_restart(
        tmp_path: Path, database_url: str, redis_url: str, key_prefix: str) -> None:
    """Last week's leagues are due: the first process dies inside the
    decision (its transaction rolls back); the next decides them, once, with
    a result and a notification per member."""
    last_week = season_of(datetime.now(UTC) - timedelta(days=7), "week", zone="UTC")
    at = (last_week.starts_at + timedelta(hours=3)).isoformat()
    env = server_env(database_url, redis_url, key_prefix, tmp_path / "d", **LEAGUES)
    crashing = start_server({**env, "LAURELS_FAILPOINTS": "league_deciding"},
                            tmp_path / "a.log")
    post(crashing.url, [{"completion_id": f"d{u}", "user_id": u, "points": u,
                         "completed_at": at} for u in range(1, 8)])
    assert crashing.process.wait(30) == -9  # the projector's loop reached the decision
    assert rows(database_url, "SELECT count(*) FROM league_results") == [(0,)]
    assert rows(database_url, "SELECT count(*) FROM league_weeks WHERE decided_at IS NOT NULL"
                ) == [(0,)]
    server = start_server(env, tmp_path / "b.log")
    try:
        wait_until(lambda: rows(database_url, "SELECT count(*) FROM league_results")
                   == [(7,)], 30, "the week decided")
        results = dict(rows(database_url, "SELECT user_id, outcome FROM league_results"))
        # Cohort 0: 1..5 (2 promote); cohort 1: 6 and 7 (ceil(2 * 2 / 5) = 1).
        assert results[7] == "promoted" and results[6] == "stayed"
        assert results[5] == results[4] == "promoted" and results[1] == "stayed"
        notes = rows(database_url, "SELECT user_id, count(*) FROM notifications"
                                   " WHERE kind = 'league_result' GROUP BY 1")
        assert sorted(notes) == [(u, 1) for u in range(1, 8)]
        league = server.client(token_for(env, 5)).get(
            "/v1/users/5/league", params={"season": last_week.name}).json()
        assert league["result"] == {"rank": 1, "outcome": "promoted", "new_tier": "silver"}
    finally:
        server.stop()
