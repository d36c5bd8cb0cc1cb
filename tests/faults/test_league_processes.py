"""Weekly leagues from several real processes on shared stores (issue 28):
10,000 learners join in the same minute at the start of a week through
three `laurels serve` processes, whose placement loops race; then three
processes start on the week once it is due, each running the decision loop
(the first to start usually wins; the race inside one statement is forced
by a pause point in tests/integration/test_leagues.py).

Checked: every learner who joined is placed exactly once; in each tier and
week every cohort is full but the newest, numbered without a gap; the
decision happens once, with one result and one `league_result`
notification per member."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from laurels.core.seasons import season_of
from tests.faults.test_league_crash import post, rows
from tests.helpers import Server, server_env, start_server, wait_until

pytestmark = [pytest.mark.once, pytest.mark.slow]

LEARNERS = 10_000
BATCH = 1_000
SIZE = 30
LEAGUES = {"LAURELS_LEAGUE_TIERS": "bronze,silver,gold", "LAURELS_LEAGUE_SIZE": str(SIZE),
           "LAURELS_LEAGUE_PROMOTE": "7", "LAURELS_LEAGUE_DEMOTE": "5",
           "LAURELS_CLOSE_SEASONS": "false", "LAURELS_WRITE_RATE_LIMIT": "0",
           "LAURELS_LATE_GRACE_SECONDS": str(10**7)}


def serve_three(env: dict[str, str], logs: Path, name: str) -> list[Server]:
    return [start_server(env, logs / f"{name}{i}.log") for i in range(3)]


def test_ten_thousand_joins_and_a_decision_from_three_processes(
        tmp_path: Path, database_url: str, redis_url: str, key_prefix: str) -> None:
    # last week: due once graced
    week = season_of(datetime.now(UTC) - timedelta(days=7), "week", zone="UTC")
    start = week.starts_at + timedelta(seconds=30)  # all in the first minute
    env = server_env(database_url, redis_url, key_prefix, tmp_path / "d", **LEAGUES)
    # 1. Joins, with the decision held off (a grace far beyond the test).
    servers = serve_three({**env, "LAURELS_LEAGUE_GRACE_SECONDS": str(10**7)}, tmp_path, "j")
    try:
        batches = [[{"completion_id": f"j{u}", "user_id": u, "points": 1 + u % 97,
                     "completed_at": (start + timedelta(microseconds=u)).isoformat()}
                    for u in range(b, b + BATCH)] for b in range(1, LEARNERS + 1, BATCH)]
        with ThreadPoolExecutor(6) as pool:
            list(pool.map(lambda ib: post(servers[ib[0] % 3].url, ib[1]), enumerate(batches)))
        wait_until(lambda: rows(database_url, "SELECT count(*) FROM league_members")
                   == [(LEARNERS,)], 120, "every join placed")
    finally:
        for s in servers:
            s.stop()
    placed = rows(database_url, "SELECT m.user_id, m.tier, m.cohort, j.join_seq"
                                " FROM league_members m JOIN league_joins j"
                                " USING (user_id, season) ORDER BY j.join_seq")
    assert len({u for u, *_ in placed}) == LEARNERS
    sizes: Counter[tuple[int, int]] = Counter((t, c) for _, t, c, _ in placed)
    cohorts = sorted(c for t, c in sizes if t == 0)
    assert {t for t, _ in sizes} == {0} and cohorts == list(range(len(cohorts)))
    assert all(sizes[(0, c)] == SIZE for c in cohorts[:-1]), sizes
    assert len(cohorts) == -(-LEARNERS // SIZE)
    # (Joining order across processes is the order placement sees the joins
    # committed: a join numbered earlier whose transaction commits later is
    # placed later, so cohorts need not follow join_seq here; a single
    # writer's order is tested in tests/integration/test_leagues.py.)
    # 2. The week is due: three processes start, each deciding what is due.
    servers = serve_three({**env, "LAURELS_LEAGUE_GRACE_SECONDS": "0"}, tmp_path, "d")
    try:
        wait_until(lambda: rows(database_url, "SELECT count(*) FROM notifications"
                                              " WHERE kind = 'league_result'")
                   == [(LEARNERS,)], 120, "every member notified of the result")
    finally:
        for s in servers:
            s.stop()
    results: list[Any] = rows(database_url, "SELECT outcome, count(*), count(DISTINCT user_id)"
                                            " FROM league_results GROUP BY 1 ORDER BY 1")
    assert sum(n for _, n, _ in results) == LEARNERS
    assert all(n == distinct for _, n, distinct in results)
    outcomes = dict((o, n) for o, n, _ in results)
    # The outcome follows the final rank (ties share a rank, and a zone),
    # among the n ranked of its cohort: ceil(7 * n / SIZE) promote (the
    # newest cohort, not full, fewer).
    assert SIZE == 30
    assert rows(database_url, "SELECT count(*) FROM league_results r JOIN"
                              " (SELECT tier, cohort, count(rank) AS n FROM league_results"
                              "  GROUP BY 1, 2) c USING (tier, cohort)"
                              " WHERE (r.rank <= ceil(7 * c.n / 30.0))"
                              " <> (r.outcome = 'promoted')") == [(0,)]
    assert outcomes["promoted"] >= 7 * (len(cohorts) - 1)
    assert "demoted" not in outcomes  # the lowest tier demotes nobody
    assert rows(database_url, "SELECT count(*) FROM league_weeks WHERE decided_at IS NOT NULL"
                ) == [(1,)]
    assert rows(database_url, "SELECT count(*) FROM league_tiers WHERE tier = 1"
                ) == [(outcomes["promoted"],)]
