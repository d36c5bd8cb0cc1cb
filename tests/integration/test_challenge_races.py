"""Challenges' decision under races, on the real stores (issue 67;
CONTRACT.md, "Challenges", The end): decided exactly once by two service
graphs racing it (each its own pools, as two processes have), whatever the
interleaving; joins numbered with `joined_at` in the order they commit,
and none committed behind the decision; a decided board that never drifts
under the corrections, completions and visibility changes that follow; and
an erasure after (or racing) the decision that takes the learner out of
everything it wrote while the others keep their ranks.

The challenges' clock is the test's (`Clock`); interleavings are forced with
pause points (core/failpoints.py) and `blocked_or_done` (a session waiting
for a lock), never with sleeps. The SIGKILLed decision and the joins over
HTTP are in tests/acceptance/test_challenge_processes.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from laurels.core import failpoints
from laurels.core.errors import DomainError
from laurels.core.validation import ProfileIn
from laurels.live.webhooks import store_settings
from laurels.process.settings import Secrets, Settings
from laurels.runtime import Runtime, Services
from tests.conftest import opened_runtime
from tests.helpers import ADMIN, INGEST, USER_SECRET, Receiver, eventually, receiving
from tests.invariants import blocked_or_done, check_erased_everywhere

START = datetime(2026, 11, 2, tzinfo=UTC)  # a Monday: the window inside its week
ENDS = START + timedelta(hours=48)
BEFORE = START - timedelta(hours=1)
RUNNING = START + timedelta(hours=24)
AFTER = ENDS + timedelta(seconds=1)
REWARDS = [{"from": 1, "to": 1, "reward": "gold"}, {"from": 2, "to": 3, "reward": "silver"},
           {"from": 4, "to": 4, "reward": "bronze"}]


@dataclass
class Clock:
    now: datetime = BEFORE

    def __call__(self) -> datetime:
        return self.now


def at(minutes: int) -> str:
    return (START + timedelta(minutes=minutes)).isoformat()


def services(rt: Runtime, clock: Clock, receiver: Receiver, **overrides: Any) -> Services:
    """A service graph on `rt`'s pools, on the test's clock, with webhooks on
    (every delivery is recorded in webhook_deliveries; none is sent unless
    the test sends it)."""
    return rt.derive(clock=clock, close_seasons=False, webhook_url=receiver.url, **overrides)


@pytest.fixture
async def rt2(settings: Settings) -> AsyncIterator[Runtime]:
    """A second service graph on the same stores, with pools of its own."""
    async for runtime in opened_runtime(settings):
        yield runtime


async def query(svc: Services, sql: str, *args: Any) -> list[dict[str, Any]]:
    async with svc.db.connection() as conn:
        cur = await conn.execute(sql, args)
        return [dict(r) for r in await cur.fetchall()]


async def define(svc: Services, clock: Clock, cid: str, **body: Any) -> None:
    """A challenge over [START, ENDS), defined before its start."""
    was, clock.now = clock.now, BEFORE
    await svc.challenges.define(cid, {"title": cid.title(), "starts_at": START.isoformat(),
                                      "ends_at": ENDS.isoformat(), "rewards": REWARDS, **body})
    clock.now = was


async def record(svc: Services, items: list[tuple[str, int, int, int]]) -> None:
    """(completion id, learner, points, minutes after START): all recorded."""
    outcomes = await svc.ingestor.record([
        {"completion_id": c, "user_id": u, "points": p, "completed_at": at(m)}
        for c, u, p, m in items])
    assert [o.status for o in outcomes] == ["recorded"] * len(items), outcomes


async def board(svc: Services, cid: str) -> list[tuple[int | None, int, int, str | None]]:
    body, nxt = await svc.challenge_standings.board(cid, 1000, None)
    assert nxt is None and body["total"] == len(body["entries"])
    return [(e["user_id"], e["rank"], e["score"], e["reward"]) for e in body["entries"]]


async def results(svc: Services, cid: str) -> list[tuple[int, int, int, str | None]]:
    rows = await query(svc, "SELECT user_id, rank, score, reward FROM challenge_results"
                            " WHERE challenge_id = %s ORDER BY rank, user_id", cid)
    return [(r["user_id"], r["rank"], r["score"], r["reward"]) for r in rows]


async def result_notes(svc: Services, cid: str) -> list[tuple[int, dict[str, Any]]]:
    rows = await query(svc, "SELECT user_id, data FROM notifications"
                            " WHERE kind = 'challenge_result' AND season = %s"
                            " ORDER BY user_id, id", f"challenge:{cid}")
    return [(r["user_id"], r["data"]) for r in rows]


async def decided_events(svc: Services, cid: str) -> list[dict[str, Any]]:
    """The challenge.decided deliveries of a challenge: (status, body data)."""
    return await query(svc, "SELECT status, body FROM webhook_deliveries"
                            " WHERE type = 'challenge.decided'"
                            " AND body #>> '{data,challenge_id}' = %s ORDER BY created_at", cid)


async def seed(svc: Services, clock: Clock, cid: str) -> None:
    """Learners 1..5 with 50, 40, 30, 20 and 10 points in the window
    (learner 1 in two completions); learner 6, hidden, with 99; learner 7
    only before the window and learner 8 only after its end."""
    await define(svc, clock, cid)
    clock.now = RUNNING
    await record(svc, [(f"{cid}-1a", 1, 20, 60), (f"{cid}-1b", 1, 30, 120),
                       (f"{cid}-2", 2, 40, 90), (f"{cid}-3", 3, 30, 100),
                       (f"{cid}-4", 4, 20, 110), (f"{cid}-5", 5, 10, 130),
                       (f"{cid}-6", 6, 99, 140), (f"{cid}-7", 7, 99, -10)])
    await svc.learners.update(6, ProfileIn(visibility="hidden"))
    clock.now = AFTER
    await record(svc, [(f"{cid}-8", 8, 99, 48 * 60)])  # at ENDS: outside [starts, ends)


SEEDED = [(1, 1, 50, "gold"), (2, 2, 40, "silver"), (3, 3, 30, "silver"), (4, 4, 20, "bronze"),
          (5, 5, 10, None)]


async def check_decided_once(svc: Services, cid: str,
                             want: list[tuple[int, int, int, str | None]],
                             participants: int) -> None:
    """One decision's traces, each once: the challenge decided, a result and
    a challenge_result notification (and its notification.created delivery)
    per ranked participant, one challenge.decided delivery."""
    assert await results(svc, cid) == want
    assert await board(svc, cid) == want
    row = (await query(svc, "SELECT decided_at IS NOT NULL AS decided, participants"
                            " FROM challenges WHERE challenge_id = %s", cid))[0]
    assert row == {"decided": True, "participants": participants}
    notes = await result_notes(svc, cid)
    assert notes == [(u, {"challenge_id": cid, "title": cid.title(), "rank": r, "score": s,
                          "reward": w}) for u, r, s, w in sorted(want)]
    deliveries = await query(svc, "SELECT d.user_id, count(*) AS n FROM webhook_deliveries d"
                                  " JOIN notifications n ON n.id = d.notification_id"
                                  " WHERE d.type = 'notification.created'"
                                  " AND n.kind = 'challenge_result' AND n.season = %s"
                                  " GROUP BY 1 ORDER BY 1", f"challenge:{cid}")
    assert [(d["user_id"], d["n"]) for d in deliveries] == [(u, 1) for u, *_ in sorted(want)]
    events = await decided_events(svc, cid)
    assert len(events) == 1, events
    assert events[0]["body"]["data"] == {
        "challenge_id": cid, "participants": participants,
        "rewarded": [{"user_id": u, "rank": r, "reward": w} for u, r, _, w in want if w]}


# -- (i) two deciders racing --------------------------------------------------------------


@pytest.mark.parametrize("point", [None, "challenge_deciding", "challenge_decided"])
async def test_two_deciders_racing_decide_once(rt: Runtime, rt2: Runtime,
                                               point: str | None) -> None:
    """Two service graphs (their own pools, as two processes) race the
    decision of a due challenge: exactly one call decides it. Held at a
    pause point (before its statement, or after it and before the commit)
    the first holds the challenge's row: the second waits for it, then finds
    it decided. Without a hold, four calls (two a graph) and both graphs'
    `decide_due` run side by side: one True, whoever it is."""
    clock = Clock()
    async with receiving() as receiver:
        a, b = services(rt, clock, receiver), services(rt2, clock, receiver)
        await store_settings(a.db, a.settings)
        await seed(a, clock, "race")
        assert await results(a, "race") == []
        if point is None:
            got = await asyncio.gather(a.decider.decide("race"), b.decider.decide("race"),
                                       a.decider.decide("race"), b.decider.decide("race"))
            dues = await asyncio.gather(a.decider.decide_due(), b.decider.decide_due())
            assert sorted(got) == [False, False, False, True], got
            assert list(dues) == [[], []], dues
        else:
            with failpoints.hold(point) as held:
                first = asyncio.create_task(a.decider.decide("race"))
                await held.reached()
                second = asyncio.create_task(b.decider.decide("race"))
                await blocked_or_done(a, second)
                assert not second.done(), "the second decider waits for the challenge's row"
                assert await results(b, "race") == []  # nothing committed yet
                held.release()
                assert [await first, await second] == [True, False]
        assert await b.decider.decide_due() == [] and not await a.decider.decide("race")
        await check_decided_once(a, "race", SEEDED, participants=6)  # open: 6 counted
        # The platform is told once (the delivery, sent from either graph).
        assert a.webhooks is not None and b.webhooks is not None
        for hooks in (a.webhooks, b.webhooks):
            async with hooks.client() as http:
                await hooks.deliver_due(http)

        def told() -> list[Any]:
            return [e for e in receiver.events if e["type"] == "challenge.decided"]

        sent = await eventually(told, 10, "the challenge.decided event sent")
        assert len({e["id"] for e in sent}) == 1
        assert sent[0]["data"]["rewarded"] == [
            {"user_id": u, "rank": r, "reward": w} for u, r, _, w in SEEDED if w]


async def test_joined_challenge_decided_once_counts_the_joins(rt: Runtime, rt2: Runtime) -> None:
    """A challenge with a required join, decided by racing graphs: its
    participants are the joins (a joined learner with nothing counted is
    one), and only joined learners' completions from their join count."""
    clock = Clock()
    async with receiving() as receiver:
        a, b = services(rt, clock, receiver), services(rt2, clock, receiver)
        await store_settings(a.db, a.settings)
        await define(a, clock, "joined", join="required", max_size=4)
        clock.now = BEFORE
        for uid in (1, 2):
            assert (await a.challenges.join("joined", uid))["joined_at"] is not None
        clock.now = RUNNING
        for uid in (3, 9):  # 3 joins after its first completion; 9 never completes
            await b.challenges.join("joined", uid)
        await record(a, [("j1", 1, 5, 60), ("j2", 2, 7, 60), ("j3a", 3, 50, 60),
                         ("j4", 4, 99, 60)])
        clock.now = RUNNING + timedelta(hours=2)
        await record(b, [("j3b", 3, 4, 25 * 60)])  # after 3's join: counts
        with pytest.raises(DomainError) as full:
            await a.challenges.join("joined", 4)
        assert full.value.code == "challenge_full"
        clock.now = AFTER
        got = await asyncio.gather(b.decider.decide_due(), a.decider.decide_due())
        assert sorted(got) == [[], ["joined"]]
        # 3's 50 came before their join; 4 never joined; 9 joined with nothing.
        await check_decided_once(a, "joined", [(2, 1, 7, "gold"), (1, 2, 5, "silver"),
                                               (3, 3, 4, "silver")], participants=4)
        assert [row["user_id"] for row in await query(
            a, "SELECT user_id FROM challenge_joins WHERE challenge_id = 'joined'"
               " ORDER BY position")] == [1, 2, 3, 9]


# -- joins: numbered in the order they commit -----------------------------------------------


class Ticking:
    """A clock a millisecond later at every reading."""

    def __init__(self, start: datetime) -> None:
        self.start, self.readings = start, 0

    def __call__(self) -> datetime:
        self.readings += 1
        return self.start + timedelta(milliseconds=self.readings)


async def test_a_join_numbered_later_never_has_an_earlier_joined_at(
        rt: Runtime, settings: Settings) -> None:
    """Joins are numbered (`position`) in the order they commit, under the
    challenge's row; a join's `joined_at` must follow the same order. Forced
    here: learner 3's join holds the row (`challenge_joining`); learner 1's
    join starts, and waits for a connection of its process's busy pool;
    learner 2's starts later and queues for the row first; then 1's queues
    behind it. Whichever of them gets the row first, the one numbered
    later must not have the earlier `joined_at` (a join that read the clock
    before it held the row failed this whenever 2 got the row first)."""
    clock = Ticking(RUNNING)
    a = rt.derive(clock=clock, close_seasons=False)
    await a.challenges.define("order", {"title": "Order", "starts_at": START.isoformat(),
                                        "ends_at": ENDS.isoformat(), "join": "required"})
    small = Runtime(settings.model_copy(update={"database_pool_size": 2}),
                    Secrets(INGEST, ADMIN, USER_SECRET), settings.database_url or "",
                    settings.redis_url or "")
    await small.open(run_migrations=False)
    try:
        b = small.derive(clock=clock, close_seasons=False)
        with failpoints.hold("challenge_joining") as held:
            third = asyncio.create_task(a.challenges.join("order", 3))
            await held.reached()
            async with AsyncExitStack() as busy:  # b's pool: every connection taken
                for _ in range(2):
                    await busy.enter_async_context(b.db.connection())
                first = asyncio.create_task(b.challenges.join("order", 1))
                await eventually(lambda: b.db.pool.get_stats().get("requests_waiting", 0),
                                 10, "learner 1's join waiting for a connection")
                second = asyncio.create_task(a.challenges.join("order", 2))
                await blocked_or_done(a, second)  # 2 waits for the row
                assert not first.done() and not second.done()
            await eventually(lambda: lock_waiters(a, 2), 10, "1 and 2 waiting for the row")
            held.release()
            joined = {3: await third, 2: await second, 1: await first}
    finally:
        await small.close()
    kept = await query(a, "SELECT position, user_id, joined_at FROM challenge_joins"
                          " WHERE challenge_id = 'order' ORDER BY position")
    # 3 first; then 2 and 1 in either order: a waiter for a row that was
    # updated meanwhile locks its newest version, and the two waiters race
    # for it (PostgreSQL's READ COMMITTED), whatever order they queued in.
    assert [r["position"] for r in kept] == [1, 2, 3] and kept[0]["user_id"] == 3
    assert {r["user_id"]: iso(r["joined_at"]) for r in kept} == {
        u: j["joined_at"] for u, j in joined.items()}
    at = [r["joined_at"] for r in kept]
    assert at == sorted(at), f"joined_at out of position order: {kept}"


async def test_a_join_waiting_behind_the_decision_is_refused(rt: Runtime) -> None:
    """A join that asked a moment before the end, and waited for the
    challenge's row while the decision held it, finds the challenge ended
    and decided when it gets the row: `challenge_ended`, never a join
    committed after the decision (whose participants are frozen)."""
    clock = Clock()
    async with receiving() as receiver:
        svc = services(rt, clock, receiver)
        await define(svc, clock, "closing", join="required")
        clock.now = RUNNING
        await svc.challenges.join("closing", 1)
        with failpoints.hold("challenge_deciding") as held:
            deciding = asyncio.create_task(svc.decider.decide("closing", AFTER))
            await held.reached()
            clock.now = ENDS - timedelta(milliseconds=1)  # the join asks before the end
            joining = asyncio.create_task(svc.challenges.join("closing", 2))
            await blocked_or_done(svc, joining)
            assert not joining.done()
            clock.now = AFTER
            held.release()
            assert await deciding
            with pytest.raises(DomainError) as ended:
                await joining
        assert ended.value.code == "challenge_ended"
        assert [r["user_id"] for r in await query(
            svc, "SELECT user_id FROM challenge_joins WHERE challenge_id = 'closing'")] == [1]
        assert (await svc.challenges.get("closing"))["participants"] == 1


async def lock_waiters(svc: Services, n: int) -> bool:
    rows = await query(svc, "SELECT count(*) AS n FROM pg_stat_activity"
                            " WHERE datname = current_database() AND wait_event_type = 'Lock'")
    return bool(rows[0]["n"] >= n)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


# -- (iii) a decided board never drifts -------------------------------------------------


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_a_decided_board_never_drifts(rt: Runtime, policy: str) -> None:
    """After the decision: a completion voided and restored, more
    completions in its window (a ranked learner's, a newcomer's), a
    learner's every completion voided, learners hidden, suspended and shown
    again, the hidden-at-the-decision one shown, every Redis key lost, the
    decision asked again: the decided results never change, and the board
    shows exactly them less whom it may not show now, at their decided
    ranks and scores."""
    clock = Clock()
    async with receiving() as receiver:
        svc = services(rt, clock, receiver, tie_policy=policy)
        await store_settings(svc.db, svc.settings)
        await define(svc, clock, "frozen")
        clock.now = RUNNING
        # 1 and 2 tie on 30 (1 reached it first); 3 has 25; 4 and 5 tie on 10.
        await record(svc, [("f1a", 1, 10, 60), ("f1b", 1, 20, 70), ("f2", 2, 30, 80),
                           ("f3", 3, 25, 90), ("f4", 4, 10, 100), ("f5", 5, 10, 100),
                           ("f6", 6, 70, 100)])
        await svc.learners.update(6, ProfileIn(visibility="hidden"))
        clock.now = AFTER
        assert await svc.decider.decide_due() == ["frozen"]
        want = ([(1, 1, 30, "gold"), (2, 1, 30, "gold"), (3, 3, 25, "silver"),
                 (4, 4, 10, "bronze"), (5, 4, 10, "bronze")] if policy == "shared" else
                [(1, 1, 30, "gold"), (2, 2, 30, "silver"), (3, 3, 25, "silver"),
                 (4, 4, 10, "bronze"), (5, 5, 10, None)])
        assert await board(svc, "frozen") == want
        frozen_notes = await result_notes(svc, "frozen")
        frozen_events = await decided_events(svc, "frozen")
        around = await svc.challenge_standings.around("frozen", 3, 5)
        mine = await svc.challenge_standings.of_learner(4, None)
        shown = (await svc.challenges.get("frozen"))

        async def unchanged(*gone: int) -> None:
            assert await results(svc, "frozen") == want
            assert await board(svc, "frozen") == [e for e in want if e[0] not in gone]
            assert await result_notes(svc, "frozen") == frozen_notes
            assert await decided_events(svc, "frozen") == frozen_events
            assert await svc.challenges.get("frozen") == shown
            if 3 not in gone:
                assert await svc.challenge_standings.around("frozen", 3, 5) == {
                    **around, "neighbors": [n for n in around["neighbors"]
                                            if n["user_id"] not in gone]}
            assert await svc.challenge_standings.of_learner(4, None) == mine

        await svc.corrections.void("f1b", "after the decision")  # 1 would fall to 10
        await unchanged()
        await svc.corrections.restore("f1b")
        await unchanged()
        await svc.corrections.void("f3", "after the decision")  # stays voided
        await unchanged()
        # Late completions in the window: 5 would lead, 9 would enter.
        await record(svc, [("late5", 5, 100, 47 * 60), ("late9", 9, 500, 60)])
        await unchanged()
        for hide in (2, 4):
            await svc.learners.update(hide, ProfileIn(visibility="hidden"))
        await unchanged(2, 4)
        await svc.learners.suspend(1, True, "after the decision")
        await unchanged(1, 2, 4)
        await svc.learners.suspend(1, False, None)
        for show in (2, 4, 6):  # 6 was hidden at the decision: no result to show
            await svc.learners.update(show, ProfileIn(visibility="public"))
        await unchanged()
        async for key in svc.redis.scan_iter(match=f"{svc.keys.prefix}:*"):
            await svc.redis.unlink(key)
        await unchanged()
        assert not await svc.decider.decide("frozen") and await svc.decider.decide_due() == []
        await unchanged()
        with pytest.raises(DomainError) as late:  # a decided challenge: only its title changes
            await svc.challenges.define("frozen", {
                "title": "Frozen", "starts_at": START.isoformat(),
                "ends_at": (ENDS + timedelta(hours=1)).isoformat(), "rewards": REWARDS})
        assert late.value.code == "challenge_conflict"
        await unchanged()


# -- (c) erasure after the decision --------------------------------------------------------


@pytest.mark.parametrize("when", ["after", "challenge_deciding", "challenge_decided"])
async def test_an_erasure_after_the_decision_takes_the_learner_out(rt: Runtime,
                                                                   when: str) -> None:
    """Learner 2 (rank 2, silver) is erased after the decision, or while the
    decision holds the challenge's row (before its statement, or after it
    and before its commit: the erasure waits, then finds it decided): they
    are gone from the decided board, the results, their notifications and
    the pending challenge.decided delivery's `rewarded`; the others keep
    their decided ranks, scores, rewards and notifications."""
    clock = Clock()
    async with receiving() as receiver:
        svc = services(rt, clock, receiver)
        await store_settings(svc.db, svc.settings)
        await seed(svc, clock, "erased")
        if when == "after":
            assert await svc.decider.decide("erased")
            assert await board(svc, "erased") == SEEDED
            assert await svc.learners.erase(2)
        else:
            with failpoints.hold(when) as held:
                deciding = asyncio.create_task(svc.decider.decide("erased"))
                await held.reached()
                erasing = asyncio.create_task(svc.learners.erase(2))
                await blocked_or_done(svc, erasing)
                assert not erasing.done(), "the erasure waits for the decision's row"
                held.release()
                assert await deciding
                assert await erasing
        kept = [e for e in SEEDED if e[0] != 2]
        assert await results(svc, "erased") == kept
        assert await board(svc, "erased") == kept  # 3 stays third, with silver
        assert [u for u, _ in await result_notes(svc, "erased")] == [1, 3, 4, 5]
        assert await query(svc, "SELECT id FROM notifications WHERE user_id = 2") == []
        events = await decided_events(svc, "erased")
        assert len(events) == 1 and events[0]["status"] == "pending"
        assert events[0]["body"]["data"] == {
            "challenge_id": "erased", "participants": 6,
            "rewarded": [{"user_id": u, "rank": r, "reward": w} for u, r, _, w in kept if w]}
        assert (await svc.challenge_standings.around("erased", 3, 1))["user"]["rank"] == 3
        assert (await svc.challenge_standings.of_learner(2, None))["challenges"] == []
        with pytest.raises(DomainError) as gone:
            await svc.challenges.join("erased", 2)
        assert gone.value.code == "not_found"
        await check_erased_everywhere(svc, {2})
        # Sent now, the event names the others only.
        assert svc.webhooks is not None
        async with svc.webhooks.client() as http:
            await svc.webhooks.deliver_due(http)
        sent = await eventually(lambda: [e for e in receiver.events
                                         if e["type"] == "challenge.decided"],
                                10, "the challenge.decided event sent")
        assert [r["user_id"] for r in sent[0]["data"]["rewarded"]] == [1, 3, 4]
