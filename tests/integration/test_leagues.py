"""Weekly leagues on the real stores (issue 28; docs/contract.md, Leagues):
joining with the first counted completion, placement in joining order
(every cohort full but the newest), the decision once, from PostgreSQL,
the next week placed by the new tiers, pending learners, zones."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from laurels.core import failpoints
from laurels.core.seasons import Season, parse_season
from laurels.core.validation import ProfileIn
from laurels.leagues.rules import parse_cohort_id
from laurels.runtime import Runtime, Services

W49, W50 = (parse_season(w, zone="UTC") for w in ("2026-W49", "2026-W50"))
NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)  # W49, open
LEAGUES: dict[str, Any] = {"league_tiers": ("bronze", "silver", "gold"), "league_size": 5,
                           "league_promote": (2,), "league_demote": (1,)}


def item(cid: str, uid: int, points: int, season: Season = W49, minutes: int = 60
         ) -> dict[str, Any]:
    at = season.starts_at + timedelta(minutes=minutes)
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": at.isoformat()}


async def leagues(rt: Runtime, now: datetime = NOW, **overrides: Any) -> Services:
    svc = rt.derive(clock=lambda: now, close_seasons=False, **{**LEAGUES, **overrides})
    await svc.leagues.store_settings()
    return svc


async def members(svc: Services, season: Season) -> dict[int, tuple[int, int]]:
    """learner -> (tier, cohort)"""
    async with svc.db.connection() as conn:
        cur = await conn.execute("SELECT user_id, tier, cohort FROM league_members"
                                 " WHERE season = %s", (season,))
        return {r["user_id"]: (r["tier"], r["cohort"]) for r in await cur.fetchall()}


def full_but_newest(placed: dict[int, tuple[int, int]], size: int) -> bool:
    sizes = Counter(placed.values())
    for tier in {t for t, _ in sizes}:
        cohorts = sorted(c for t, c in sizes if t == tier)
        if cohorts != list(range(len(cohorts))):
            return False
        if any(sizes[(tier, c)] != size for c in cohorts[:-1]):
            return False
    return True


async def test_joining_placement_and_decision(rt: Runtime) -> None:
    svc = await leagues(rt)
    await svc.learners.update(11, ProfileIn(visibility="hidden"))  # hidden: does not join
    await svc.ingestor.record([item(f"a{u}", u, u) for u in range(1, 13)])
    await svc.ingestor.record([item("again1", 1, 1)])  # a second completion: no second join
    assert await svc.leagues.place(W49) == 3
    placed = await members(svc, W49)
    assert sorted(placed) == [u for u in range(1, 13) if u != 11]
    assert full_but_newest(placed, 5)
    assert {c for _, c in placed.values()} == {0, 1, 2}
    # The first five to join fill cohort 0, in joining order.
    assert sorted(u for u, (_, c) in placed.items() if c == 0) == [1, 2, 3, 4, 5]
    cohort0 = (await svc.leagues.learner(3, W49))
    assert cohort0["status"] == "placed" and cohort0["tier"] == "bronze"
    entries = cohort0["entries"]
    assert [(e["user_id"], e["zone"]) for e in entries] == [
        (5, "promotion"), (4, "promotion"), (3, None), (1, None), (2, None)]  # 1 has 2 points
    assert cohort0["self"] == {"rank": 3, "score": 3, "zone": None}
    assert await svc.leagues.decide(W49)
    assert not await svc.leagues.decide(W49)  # once
    async with svc.db.connection() as conn:
        cur = await conn.execute("SELECT user_id, rank, outcome, new_tier FROM league_results"
                                 " WHERE season = %s ORDER BY user_id", (W49,))
        results = {r["user_id"]: (r["rank"], r["outcome"], r["new_tier"])
                   for r in await cur.fetchall()}
    assert results[5] == (1, "promoted", 1) and results[4] == (2, "promoted", 1)
    assert results[3][1] == "stayed" and results[2] == (4, "stayed", 0)  # a tie; no demotion
    notes = await svc.notifications.newest(5)
    [result] = [n for n in notes["notifications"] if n["kind"] == "league_result"]
    assert result["data"] == {"tier": "bronze", "cohort_id": f"{W49}.0.0", "rank": 1,
                              "outcome": "promoted", "new_tier": "silver"}
    # The next week places them by their new tier.
    svc50 = await leagues(rt, now=NOW + timedelta(days=7))
    await svc50.ingestor.record([item(f"b{u}", u, u, W50) for u in (1, 4, 5, 7)])
    await svc50.leagues.place(W50)
    assert await members(svc50, W50) == {1: (0, 0), 4: (1, 0), 5: (1, 0), 7: (0, 0)}


async def test_a_learner_is_pending_until_their_earlier_week_is_decided(rt: Runtime) -> None:
    svc = await leagues(rt, now=NOW + timedelta(days=7))  # W50; W49 still undecided
    await svc.ingestor.record([item("p49", 1, 9), item("q49", 2, 1)])
    await svc.leagues.place(W49)
    await svc.ingestor.record([item("p50", 1, 5, W50), item("r50", 3, 5, W50)])
    await svc.leagues.place(W50)
    assert await members(svc, W50) == {3: (0, 0)}  # learner 1 waits for W49
    view = await svc.leagues.learner(1, W50)
    assert view["status"] == "pending" and view["cohort_id"] is None
    assert await svc.leagues.decide(W49)
    await svc.leagues.place(W50)
    assert await members(svc, W50) == {3: (0, 0), 1: (1, 0)}  # promoted, then placed


async def test_placement_from_many_processes_fills_cohorts_in_order(rt: Runtime) -> None:
    """Joins from several writers at once, placers racing: every cohort of
    a tier is full but the newest, and nobody is placed twice."""
    svc = await leagues(rt)
    writers = [svc.ingestor.record([item(f"m{w}-{u}", 1000 * w + u + 1, 1) for u in range(40)])
               for w in range(5)]
    placers = [svc.leagues.place(W49) for _ in range(4)]
    await asyncio.gather(*writers, *placers)
    await svc.leagues.place(W49)
    placed = await members(svc, W49)
    assert len(placed) == 200 and full_but_newest(placed, 5)


async def test_a_decision_held_midway_leaves_no_trace_and_runs_once(rt: Runtime) -> None:
    """A decision stopped before its statement (a crash: its transaction
    rolls back) decides nothing; a second decider waits for the first."""
    svc = await leagues(rt)
    await svc.ingestor.record([item(f"d{u}", u, u) for u in range(1, 7)])
    await svc.leagues.place(W49)
    with failpoints.hold("league_deciding") as held:
        first = asyncio.create_task(svc.leagues.decide(W49))
        await held.reached()
        second = asyncio.create_task(svc.leagues.decide(W49))
        await asyncio.sleep(0)
        assert not second.done()
    assert sorted([await first, await second]) == [False, True]
    assert parse_cohort_id(f"{W49}.0.1") is not None


@pytest.mark.parametrize("hidden_after", [True, False])
async def test_a_member_who_turns_hidden_leaves_the_board_and_stays(rt: Runtime,
                                                                   hidden_after: bool) -> None:
    svc = await leagues(rt)
    await svc.ingestor.record([item(f"h{u}", u, 10 * u) for u in range(1, 6)])
    await svc.leagues.place(W49)
    if hidden_after:
        await svc.learners.update(5, ProfileIn(visibility="hidden"))
    view = await svc.leagues.learner(1, W49)
    assert [e["user_id"] for e in view["entries"]] == ([4, 3, 2, 1] if hidden_after
                                                       else [5, 4, 3, 2, 1])
    await svc.leagues.decide(W49)
    result = (await svc.leagues.learner(5, W49))["result"]
    assert result == ({"rank": None, "outcome": "stayed", "new_tier": "bronze"} if hidden_after
                      else {"rank": 1, "outcome": "promoted", "new_tier": "silver"})


async def test_zones_notify_those_who_enter_one(rt: Runtime) -> None:
    svc = await leagues(rt, league_tiers=("bronze", "silver"))
    await svc.ingestor.record([item(f"z{u}", u, u) for u in range(1, 6)])
    await svc.leagues.place(W49)
    await svc.projector.drain(min_age_seconds=0)
    await svc.leagues.zones(W49)
    zones = {u: [n["data"]["zone"] for n in (await svc.notifications.newest(u))["notifications"]
                 if n["kind"] == "league_zone"] for u in range(1, 6)}
    assert zones == {1: [], 2: [], 3: [], 4: ["promotion"], 5: ["promotion"]}
    # Learner 1 overtakes everyone: 1 enters the zone, 4 leaves it.
    await svc.ingestor.record([item("z1b", 1, 100)])
    await svc.projector.drain(min_age_seconds=0)
    await svc.leagues.zones(W49)
    firsts = [n["data"] for n in (await svc.notifications.newest(1))["notifications"]
              if n["kind"] == "league_zone"]
    assert firsts == [{"tier": "bronze", "cohort_id": f"{W49}.0.0", "zone": "promotion",
                       "rank": 1}]


async def test_a_learner_back_in_a_zone_has_one_unread_notice_with_the_latest(rt: Runtime
                                                                             ) -> None:
    """Zones are written for whole cohorts at once: a learner pushed out by
    others' completions loses the zone, and entering it again refreshes the
    unread notice (at most one per learner and week) instead of adding one."""
    svc = await leagues(rt, league_tiers=("bronze", "silver"))

    async def step(*items: dict[str, Any]) -> None:
        await svc.ingestor.record(list(items))
        await svc.leagues.place(W49)
        await svc.projector.drain(min_age_seconds=0)
        await svc.leagues.zones(W49)

    async def notices(uid: int) -> list[dict[str, Any]]:
        return [n["data"] for n in (await svc.notifications.newest(uid))["notifications"]
                if n["kind"] == "league_zone"]

    async def zone_of() -> dict[int, str | None]:
        async with svc.db.connection() as conn:
            cur = await conn.execute("SELECT user_id, zone FROM league_members"
                                     " WHERE season = %s", (W49,))
            return {r["user_id"]: r["zone"] for r in await cur.fetchall()}

    await step(*(item(f"r{u}", u, u) for u in range(1, 6)))  # 5 and 4 promote
    await step(item("r3b", 3, 10))  # 3 first, 5 second: 4 is pushed out
    assert await zone_of() == {1: None, 2: None, 3: "promotion", 4: None, 5: "promotion"}
    await step(item("r4b", 4, 20))  # 4 first again, 3 second, 5 out
    assert await zone_of() == {1: None, 2: None, 3: "promotion", 4: "promotion", 5: None}
    cohort = f"{W49}.0.0"
    assert await notices(4) == [{"tier": "bronze", "cohort_id": cohort, "zone": "promotion",
                                 "rank": 1}]
    assert await notices(5) == [{"tier": "bronze", "cohort_id": cohort, "zone": "promotion",
                                 "rank": 1}]
    assert await notices(3) == [{"tier": "bronze", "cohort_id": cohort, "zone": "promotion",
                                 "rank": 1}]


async def test_erasure_removes_a_learner_from_every_cohort_and_result(rt: Runtime) -> None:
    svc = await leagues(rt)
    await svc.ingestor.record([item(f"e{u}", u, u) for u in range(1, 6)])
    await svc.leagues.place(W49)
    await svc.leagues.decide(W49)
    await svc.learners.erase(5)
    async with svc.db.connection() as conn:
        for table in ("league_joins", "league_members", "league_results", "league_tiers"):
            cur = await conn.execute(f"SELECT count(*) AS n FROM {table} WHERE user_id = 5")  # noqa: S608
            row = await cur.fetchone()
            assert row is not None and row["n"] == 0, table
    view = await svc.leagues.learner(4, W49)
    assert 5 not in [e["user_id"] for e in view["entries"]]
    assert view["result"] == {"rank": 2, "outcome": "promoted", "new_tier": "silver"}


async def test_someone_else_s_completion_pushes_a_learner_into_the_demotion_zone(
        rt: Runtime) -> None:
    """A silver cohort of three (promote 1, demote 2 of 5, scaled to three:
    ceil(3/5) = 1 and floor(6/5) = 1): the last is in the demotion zone.
    Learner 3 climbs out of it with a completion of their own, which pushes
    learner 4 in: learner 4 is notified, though they did nothing."""
    rules = {"league_tiers": ("bronze", "silver", "gold"), "league_promote": (3, 1, 1),
             "league_demote": (1, 2, 2)}
    svc = await leagues(rt, **rules)
    await svc.ingestor.record([item(f"w{u}", u, u) for u in range(1, 6)])
    await svc.leagues.place(W49)
    assert await svc.leagues.decide(W49)  # 3, 4 and 5 go up to silver
    svc50 = await leagues(rt, now=NOW + timedelta(days=7), **rules)

    async def step(*items: dict[str, Any]) -> None:
        await svc50.ingestor.record(list(items))
        await svc50.leagues.place(W50)
        await svc50.projector.drain(min_age_seconds=0)
        await svc50.leagues.zones(W50)

    async def notices(uid: int) -> list[dict[str, Any]]:
        return [n["data"] for n in (await svc50.notifications.newest(uid))["notifications"]
                if n["kind"] == "league_zone"]

    await step(*(item(f"s{u}", u, 10 * u, W50) for u in (3, 4, 5)))
    assert await members(svc50, W50) == {u: (1, 0) for u in (3, 4, 5)}
    cohort = f"{W50}.1.0"
    assert await notices(3) == [{"tier": "silver", "cohort_id": cohort, "zone": "demotion",
                                 "rank": 3}]
    assert await notices(5) == [{"tier": "silver", "cohort_id": cohort, "zone": "promotion",
                                 "rank": 1}]
    assert await notices(4) == []
    await step(item("s3b", 3, 100, W50))  # 3 first; 4 is now last
    assert await notices(4) == [{"tier": "silver", "cohort_id": cohort, "zone": "demotion",
                                 "rank": 3}]
    view = await svc50.leagues.learner(4, W50)
    assert view["self"] == {"rank": 3, "score": 40, "zone": "demotion"}
    assert [(e["user_id"], e["zone"]) for e in view["entries"]] == [
        (3, "promotion"), (5, None), (4, "demotion")]


async def test_a_suspended_learner_does_not_join_and_a_suspended_member_stays(
        rt: Runtime) -> None:
    """Suspension is hidden to leagues: a learner suspended before their
    first completion does not join; a member suspended during the week
    leaves the cohort's board and ends it `stayed`, whatever they scored."""
    svc = await leagues(rt)
    await svc.learners.suspend(6, True, "spam")
    await svc.ingestor.record([item(f"u{u}", u, 10 * u) for u in range(1, 7)])
    await svc.leagues.place(W49)
    assert sorted(await members(svc, W49)) == [1, 2, 3, 4, 5]
    await svc.learners.suspend(5, True, "cheating")
    view = await svc.leagues.learner(1, W49)
    assert [e["user_id"] for e in view["entries"]] == [4, 3, 2, 1]
    assert await svc.leagues.decide(W49)
    assert (await svc.leagues.learner(5, W49))["result"] == {
        "rank": None, "outcome": "stayed", "new_tier": "bronze"}
    assert (await svc.leagues.learner(4, W49))["result"] == {
        "rank": 1, "outcome": "promoted", "new_tier": "silver"}
