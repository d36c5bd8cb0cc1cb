"""Challenges against real `laurels serve` processes (issue 67; CONTRACT.md,
"Challenges"): joins sent at once over HTTP to several workers, and a
decision killed with SIGKILL midway.

- 1,000 learners join a challenge of `max_size` 100 at once (aiohttp, every
  request to 127.0.0.1, through `laurels serve --workers 4`): exactly 100
  joined, numbered 1..100 in the order their joins committed (no gap, no
  duplicate, `joined_at` non-decreasing by position), and each of the 900
  others told `409 challenge_full`.
- A process killed (SIGKILL, as a power cut would) inside the decision, at
  `challenge_deciding` (holding the challenge's row, before its statement)
  or `challenge_decided` (after it, before the commit), leaves nothing
  decided; two processes started next race the decision and make it once:
  one result and one `challenge_result` notification per ranked
  participant, one `challenge.decided` delivery, which the receiver gets.

No test depends on the date: the windows are relative to the real now
(started in the past, ending seconds ahead, grace 0), and the decision is
waited for by polling.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import psycopg
import pytest

from tests.helpers import (
    ADMIN,
    INGEST,
    WEBHOOK_SECRET,
    Receiver,
    Server,
    server_env,
    start_server,
    token_for,
    wait_until,
)

pytestmark = pytest.mark.slow

JOINERS = 1_000
CAP = 100
WORKERS = 4
REWARDS = [{"from": 1, "to": 1, "reward": "gold"}, {"from": 2, "to": 3, "reward": "silver"}]


def iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def rows(database_url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(sql, args).fetchall()


def define(server: Server, cid: str, **body: Any) -> dict[str, Any]:
    resp = server.client(ADMIN).put(f"/v1/admin/challenges/{cid}",
                                    json={"title": cid.title(), **body})
    assert resp.status_code == 201, resp.text
    return dict(resp.json())


def clean_log(server: Server) -> None:
    text = server.log.read_text(errors="replace")
    assert "Traceback" not in text and "ERROR" not in text, text[-3000:]


# -- 1,000 joins at once ----------------------------------------------------------------


async def join_all(url: str, env: dict[str, str], cid: str, learners: range
                   ) -> list[tuple[int, int, str, dict[str, Any]]]:
    """Every learner's join, sent at once, each with their own token:
    (learner, status, content type, body)."""
    tokens = {uid: token_for(env, uid) for uid in learners}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=120)) as session:

        async def one(uid: int) -> tuple[int, int, str, dict[str, Any]]:
            async with session.post(f"{url}/v1/challenges/{cid}/join",
                                    headers={"Authorization": f"Bearer {tokens[uid]}"}
                                    ) as resp:
                body = await resp.json(content_type=None)
                return uid, resp.status, resp.headers.get("content-type", ""), body

        return list(await asyncio.gather(*(one(uid) for uid in learners)))


def test_a_thousand_joins_at_once_leave_exactly_the_cap_in_commit_order(
        serve: Any, database_url: str) -> None:
    server = serve("--workers", str(WORKERS), LAURELS_DATABASE_POOL_SIZE="8",
                   LAURELS_POOL_TIMEOUT_SECONDS="120", LAURELS_WRITE_RATE_LIMIT="0")
    assert server.url.startswith("http://127.0.0.1:")
    now = datetime.now(UTC)
    define(server, "rush", starts_at=iso(now - timedelta(hours=1)),
           ends_at=iso(now + timedelta(hours=1)), join="required", max_size=CAP)
    answers = asyncio.run(join_all(server.url, server.env, "rush", range(1, JOINERS + 1)))
    assert Counter(status for _, status, _, _ in answers) == {200: CAP, 409: JOINERS - CAP}
    joined = {uid: body for uid, status, _, body in answers if status == 200}
    for uid, status, ctype, body in answers:
        if status == 409:
            assert ctype.startswith("application/problem+json"), (uid, ctype)
            assert body["code"] == "challenge_full" and body["status"] == 409, (uid, body)
        else:
            assert body["challenge_id"] == "rush" and body["user_id"] == uid, body
            assert body["joined_at"] is not None
    # The joins, in the order they committed (their position: the row's count
    # under its lock): 1..100, each learner once, the ones told 200.
    kept = rows(database_url, "SELECT position, user_id, joined_at FROM challenge_joins"
                              " WHERE challenge_id = 'rush' ORDER BY position")
    assert [p for p, _, _ in kept] == list(range(1, CAP + 1))
    assert {u for _, u, _ in kept} == set(joined) and len({u for _, u, _ in kept}) == CAP
    assert {u: iso(at) for _, u, at in kept} == {u: b["joined_at"] for u, b in joined.items()}
    late = [(p, at, q, later) for (p, _, at), (q, _, later) in itertools.pairwise(kept)
            if later < at]
    assert not late, f"a join numbered later has an earlier joined_at: {late[:5]}"
    assert rows(database_url, "SELECT joined FROM challenges WHERE challenge_id = 'rush'"
                ) == [(CAP,)]
    assert httpx.get(f"{server.url}/v1/challenges/rush").json()["participants"] == CAP
    # Again: a joined learner gets their first joined_at; a refused one is still refused.
    first = next(iter(joined))
    again = server.client(token_for(server.env, first)).post("/v1/challenges/rush/join")
    assert again.status_code == 200 and again.json() == joined[first]
    refused = next(uid for uid, status, _, _ in answers if status == 409)
    retry = server.client(token_for(server.env, refused)).post("/v1/challenges/rush/join")
    assert retry.status_code == 409 and retry.json()["code"] == "challenge_full"
    server.stop()
    clean_log(server)


# -- a decision killed midway -----------------------------------------------------------


@pytest.mark.parametrize("point", ["challenge_deciding", "challenge_decided"])
def test_a_decision_killed_midway_is_decided_once_by_the_next_processes(
        tmp_path: Path, database_url: str, redis_url: str, key_prefix: str,
        point: str) -> None:
    with Receiver(secret=WEBHOOK_SECRET) as receiver:
        env = server_env(database_url, redis_url, key_prefix, tmp_path / "d",
                         LAURELS_WEBHOOK_URL=receiver.url, LAURELS_WEBHOOK_SECRET=WEBHOOK_SECRET,
                         LAURELS_CLOSE_SEASONS="false")
        crashing = start_server({**env, "LAURELS_FAILPOINTS": point}, tmp_path / "a.log")
        try:
            now = datetime.now(UTC)
            # Learners 1..5 with 10..50 points in the window, recorded first.
            with httpx.Client(base_url=crashing.url, timeout=30,
                              headers={"Authorization": f"Bearer {INGEST}"}) as c:
                resp = c.post("/v1/completions/batch", json={"completions": [
                    {"completion_id": f"k{u}", "user_id": u, "points": 10 * u,
                     "completed_at": iso(now - timedelta(minutes=5))} for u in range(1, 6)]})
                assert {r["status"] for r in resp.json()["results"]} == {"recorded"}, resp.text
            define(crashing, "sprint", starts_at=iso(now - timedelta(minutes=10)),
                   ends_at=iso(datetime.now(UTC) + timedelta(seconds=2)), grace_seconds=0,
                   rewards=REWARDS)
            # Its challenges loop reaches the decision at the end, and dies there.
            assert crashing.process.wait(30) == -9
        finally:
            crashing.stop()
        assert rows(database_url, "SELECT decided_at, participants FROM challenges"
                    ) == [(None, None)]
        assert rows(database_url, "SELECT count(*) FROM challenge_results") == [(0,)]
        assert rows(database_url, "SELECT count(*) FROM notifications"
                                  " WHERE kind = 'challenge_result'") == [(0,)]
        assert rows(database_url, "SELECT count(*) FROM webhook_deliveries WHERE"
                                  " type = 'challenge.decided' OR kind = 'challenge_result'"
                    ) == [(0,)]
        # Two processes start on the same stores; their loops race the decision.
        servers = [start_server(env, tmp_path / f"{n}.log") for n in "bc"]
        try:
            wait_until(lambda: rows(database_url, "SELECT count(*) FROM challenges"
                                                  " WHERE decided_at IS NOT NULL") == [(1,)],
                       30, "the challenge decided")

            def told() -> list[Any]:
                return [e for e in receiver.events if e["type"] == "challenge.decided"]

            sent = wait_until(told, 30, "the challenge.decided event received")
            wait_until(lambda: len({e["id"] for e in receiver.events
                                    if e["type"] == "notification.created"
                                    and e["data"]["kind"] == "challenge_result"}) == 5,
                       30, "every challenge_result notification sent")
            board = servers[0].client().get("/v1/challenges/sprint/leaderboard").json()
        finally:
            for s in servers:
                s.stop()
        for s in servers:
            clean_log(s)
    want = [(5, 1, 50, "gold"), (4, 2, 40, "silver"), (3, 3, 30, "silver"), (2, 4, 20, None),
            (1, 5, 10, None)]
    assert board["decided"] and [(e["user_id"], e["rank"], e["score"], e["reward"])
                                 for e in board["entries"]] == want
    assert rows(database_url, "SELECT user_id, rank, score, reward FROM challenge_results"
                              " ORDER BY rank") == want
    assert rows(database_url, "SELECT participants FROM challenges") == [(5,)]
    assert rows(database_url, "SELECT user_id, count(*) FROM notifications"
                              " WHERE kind = 'challenge_result' GROUP BY 1 ORDER BY 1"
                ) == [(u, 1) for u in range(1, 6)]
    assert rows(database_url, "SELECT count(*) FROM webhook_deliveries"
                              " WHERE type = 'challenge.decided'") == [(1,)]
    assert rows(database_url, "SELECT user_id, count(*) FROM webhook_deliveries"
                              " WHERE kind = 'challenge_result' GROUP BY 1 ORDER BY 1"
                ) == [(u, 1) for u in range(1, 6)]
    assert len({e["id"] for e in sent}) == 1
    assert sent[0]["data"] == {"challenge_id": "sprint", "participants": 5, "rewarded": [
        {"user_id": 5, "rank": 1, "reward": "gold"}, {"user_id": 4, "rank": 2, "reward": "silver"},
        {"user_id": 3, "rank": 3, "reward": "silver"}]}
