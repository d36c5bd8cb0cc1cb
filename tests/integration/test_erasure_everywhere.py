"""Issue 38: an erased or hidden learner is gone from every table and board,
whatever runs beside the erasure. Each defect found from outside, forced
with the project's pause points (laurels.core.failpoints; no sleep decides an
outcome), and the three suspicions settled.

After each scenario the enumerated invariants hold (tests/invariants.py:
every table of the catalogue, every key under the prefix)."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from laurels.core import failpoints
from laurels.core.errors import DomainError
from laurels.core.seasons import parse_season
from laurels.core.validation import ProfileIn
from laurels.runtime import Runtime, Services
from tests.invariants import (
    HintTap,
    blocked_or_done,
    check_erased_everywhere,
    check_hidden_nowhere,
)

W48, W49, W50 = "2026-W48", "2026-W49", "2026-W50"
S48, S49, S50 = (parse_season(w, zone="UTC") for w in (W48, W49, W50))  # (as Seasons)
ALL = parse_season("all", zone="UTC")
NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)  # W49, open
LEAGUES: dict[str, Any] = {"league_tiers": ("bronze", "silver", "gold"), "league_size": 5,
                           "league_promote": (2,), "league_demote": (1,)}


def item(cid: str, uid: int, points: int, season: str = W49, minutes: int = 60
         ) -> dict[str, Any]:
    at = parse_season(season, zone="UTC").starts_at + timedelta(minutes=minutes)
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": at.isoformat()}


async def leagues(rt: Runtime, now: datetime = NOW, **overrides: Any) -> Services:
    svc = rt.derive(clock=lambda: now, close_seasons=False, **{**LEAGUES, **overrides})
    await svc.leagues.store_settings()
    return svc


async def rows(svc: Services, sql: str, *args: Any) -> list[dict[str, Any]]:
    async with svc.db.connection() as conn:
        cur = await conn.execute(sql, args)  # type: ignore[arg-type]
        return await cur.fetchall()


async def invariants_hold(svc: Services) -> None:
    """The enumerated invariants for every learner PostgreSQL says is
    erased, hidden or suspended (the scenarios' closing check)."""
    erased = {r["user_id"] for r in await rows(
        svc, "SELECT user_id FROM users WHERE erased_at IS NOT NULL")}
    private = {r["user_id"] for r in await rows(
        svc, "SELECT user_id FROM users WHERE visibility = 'hidden' OR suspended_at IS NOT NULL")}
    await check_erased_everywhere(svc, erased)
    await check_hidden_nowhere(svc, private | erased)


async def zone_notices(svc: Services, uid: int) -> list[dict[str, Any]]:
    return [n["data"] for n in (await svc.notifications.newest(uid))["notifications"]
            if n["kind"] == "league_zone"]


# -- 1. a placement racing an erasure ---------------------------------------------------


async def test_a_placement_racing_an_erasure_places_nobody_erased(rt: Runtime) -> None:
    """The erasure has deleted the learner's league rows and not committed;
    a placer runs meanwhile. It waits for the erasure (the week's league
    lock), then finds them gone: no membership, no result, no notice."""
    svc = await leagues(rt)
    await svc.ingestor.record([item(f"p{u}", u, u) for u in range(1, 7)])
    with failpoints.hold("erase_deleted") as held:
        erase = asyncio.create_task(svc.learners.erase(5))
        await held.reached()
        place = asyncio.create_task(svc.leagues.place(S49))
        await blocked_or_done(svc, place)
        assert not place.done(), "the placer must wait for the erasure"
    await erase
    await place
    assert await svc.leagues.decide(S49)
    assert not await rows(svc, "SELECT 1 FROM league_members WHERE user_id = 5")
    assert not await rows(svc, "SELECT 1 FROM league_results WHERE user_id = 5")
    assert (await svc.leagues.summary(parse_season(W49, zone="UTC")))["tiers"][0]["members"] == 5
    await check_erased_everywhere(svc, {5})


async def test_a_decision_racing_an_erasure_keeps_no_result_of_the_erased(rt: Runtime) -> None:
    svc = await leagues(rt)
    await svc.ingestor.record([item(f"d{u}", u, u) for u in range(1, 7)])
    await svc.leagues.place(S49)
    with failpoints.hold("league_deciding") as held:
        decide = asyncio.create_task(svc.leagues.decide(S49))
        await held.reached()
        erase = asyncio.create_task(svc.learners.erase(6))
        await blocked_or_done(svc, erase)
        assert not erase.done()
    assert await decide
    await erase
    assert not await rows(svc, "SELECT 1 FROM league_results WHERE user_id = 6")
    assert not await rows(svc, "SELECT 1 FROM notifications WHERE user_id = 6")
    await check_erased_everywhere(svc, {6})


# -- 2. the zone pass racing an erasure -----------------------------------------------------


async def test_the_zone_pass_racing_an_erasure_leaves_no_notice_of_the_erased(
        rt: Runtime) -> None:
    """The zone pass holds the cohort's members and is about to notify the
    leader; the leader is erased meanwhile. The erasure waits for the pass
    (the week's league lock) and then deletes the notice it wrote."""
    svc = await leagues(rt)
    await svc.ingestor.record([item(f"z{u}", u, u) for u in range(1, 6)])
    await svc.leagues.place(S49)
    await svc.projector.drain(min_age_seconds=0)
    with failpoints.hold("league_zoning") as held:
        zones = asyncio.create_task(svc.leagues.zones(S49))
        await held.reached()
        erase = asyncio.create_task(svc.learners.erase(5))
        await blocked_or_done(svc, erase)
        assert not erase.done(), "the erasure must wait for the zone pass"
    assert await zones == 2  # 5 and 4 entered the promotion zone
    await erase
    assert await zone_notices(svc, 5) == []
    assert not await rows(svc, "SELECT 1 FROM notifications WHERE user_id = 5")
    await check_erased_everywhere(svc, {5})


# -- 3. retention, then an erasure, a hide or a rename ----------------------------------------


OLD = ["2026-W40", "2026-W41"]  # October: retired 30 days after it closes


async def retired(rt: Runtime) -> Services:
    """Learners 1 and 2 completed in October and this week; learner 4 only
    in October, whose month is then retired: only the archive and the
    all-time board know them."""
    cfg = {"periods": ("week", "month", "all"), "retain_completions_days": 30}
    svc = rt.derive(clock=lambda: NOW, close_seasons=False, **cfg)
    for n, week in enumerate(OLD):
        await svc.ingestor.record([item(f"{week}-{u}", u, u + n, week) for u in (1, 2, 4)])
    await svc.ingestor.record([item(f"now-{u}", u, 1) for u in (1, 2)])
    await svc.learners.update(4, ProfileIn(display_name="Dora"))
    closing = rt.derive(clock=lambda: NOW, **cfg)
    await closing.lifecycle.finalize_due(NOW)
    await closing.rebuilder.run(ALL)
    assert date(2026, 10, 1) in await closing.partitions.retire(NOW, 30)
    assert not await rows(closing, "SELECT 1 FROM completions WHERE user_id = 4")
    return closing


async def all_time(svc: Services) -> list[tuple[int | None, str, int]]:
    body = await svc.reads.top(parse_season("all", zone="UTC"), 100)
    assert body["total"] == len(body["entries"])
    return [(e["user_id"], e["display_name"], e["score"]) for e in body["entries"]]


async def test_erasing_a_learner_whose_completions_were_all_retired_reaches_all_time(
        rt: Runtime) -> None:
    svc = await retired(rt)
    assert (4, "Dora", 4 + 5) in await all_time(svc)
    await svc.learners.erase(4)
    assert [e[0] for e in await all_time(svc)] == [2, 1]
    with pytest.raises(DomainError) as refused:
        await svc.reads.around(parse_season("all", zone="UTC"), 4, 5)
    assert refused.value.code in ("not_ranked", "user_erased")
    assert (await svc.verifier.verify(ALL)).consistent
    assert not await rows(svc, "SELECT 1 FROM erasures WHERE user_id = 4")  # job done
    await check_erased_everywhere(svc, {4})


@pytest.mark.parametrize("change", ["hidden", "renamed"])
async def test_hiding_or_renaming_a_retired_learner_reaches_all_time(rt: Runtime,
                                                                     change: str) -> None:
    svc = await retired(rt)
    body = (ProfileIn(visibility="hidden") if change == "hidden"
            else ProfileIn(display_name="Dorothea"))
    await svc.learners.update(4, body)
    board = await all_time(svc)
    if change == "hidden":
        assert [e[0] for e in board] == [2, 1]
    else:
        assert (4, "Dorothea", 9) in board
    assert (await svc.verifier.verify(ALL)).consistent
    await invariants_hold(svc)


# -- 4. a late completion never joins a week earlier than one played ---------------------------


async def test_a_late_completion_joins_no_earlier_week(rt: Runtime) -> None:
    """Placed in W50 while W49 is in its grace: a late W49 completion counts
    on W49's board and joins no league of W49."""
    svc = await leagues(rt, now=NOW + timedelta(days=7), league_grace_seconds=86_400)
    await svc.ingestor.record([item(f"a{u}", u, 3, W50) for u in (1, 2, 3)])
    await svc.leagues.place(S50)
    await svc.ingestor.record([item("late", 1, 9, W49)])
    assert not await rows(svc, "SELECT 1 FROM league_joins WHERE user_id = 1 AND season = %s",
                          W49)
    top = await svc.reads.top(parse_season(W49, zone="UTC"), 10)
    assert [(e["user_id"], e["score"]) for e in top["entries"]] == [(1, 9)]
    view = await svc.leagues.learner(1, parse_season(W49, zone="UTC"))
    assert view["status"] == "none"
    # A restore of an earlier week's completion joins nothing either.
    await svc.corrections.void("late", "test")
    await svc.corrections.restore("late")
    assert not await rows(svc, "SELECT 1 FROM league_joins WHERE season = %s", W49)
    await invariants_hold(svc)


async def test_two_joins_that_raced_keep_the_learner_in_the_week_joined_first(
        rt: Runtime) -> None:
    """Two ingests of one learner in flight at once (W50, then a late W49)
    each wrote a join without seeing the other. The placer settles it in
    joining order: W50 is played, the later join of W49 is dropped."""
    svc = await leagues(rt, now=NOW + timedelta(days=7), league_grace_seconds=86_400)
    await svc.ingestor.record([item("y50", 8, 3, W50)])
    async with svc.db.connection() as conn:  # as the two ingests leave them, in this order
        await conn.execute("INSERT INTO league_joins (season, user_id) VALUES (%s, 7), (%s, 7)",
                           (W50, W49))
    await svc.leagues.place(S49)
    await svc.leagues.place(S50)
    placed = await rows(svc, "SELECT season FROM league_members WHERE user_id = 7")
    assert placed == [{"season": W50}]
    assert not await rows(svc, "SELECT 1 FROM league_joins WHERE user_id = 7 AND season = %s",
                          W49)
    assert (await svc.leagues.learner(7, parse_season(W50, zone="UTC")))["status"] == "placed"
    await invariants_hold(svc)


# -- 5. whatever moves a member into a zone notifies them --------------------------------------


MOVES = ["void", "suspend", "hide", "erase", "restore", "unhide"]


@pytest.mark.parametrize("move", MOVES)
async def test_whatever_moves_a_member_into_the_zone_notifies_them(rt: Runtime,
                                                                   move: str) -> None:
    """Bronze cohort of five, two promote: 5 and 4 lead, 3 is third. A void
    of 5's completion, 5's suspension, hiding or erasure takes the leader
    off: 3 moves up to second, into the zone, with no completion of their
    own. A restore of 3's voided 100 points, or 3 (who has them) turning
    public again, puts 3 first. Either way 3 is told."""
    svc = await leagues(rt)
    await svc.ingestor.record([item(f"m{u}", u, u) for u in range(1, 6)])
    await svc.leagues.place(S49)
    await svc.ingestor.record([item("big3", 3, 100)])
    if move == "restore":
        await svc.corrections.void("big3", "test")
    if move == "unhide":
        await svc.learners.update(3, ProfileIn(visibility="hidden"))
    if move in ("void", "suspend", "hide", "erase"):
        await svc.corrections.void("big3", "test")
    await svc.projector.drain(min_age_seconds=0)
    await svc.leagues.zones(S49)
    assert await zone_notices(svc, 3) == []
    moved = {
        "void": lambda: svc.corrections.void("m5", "test"),
        "suspend": lambda: svc.learners.suspend(5, True, "test"),
        "hide": lambda: svc.learners.update(5, ProfileIn(visibility="hidden")),
        "erase": lambda: svc.learners.erase(5),
        "restore": lambda: svc.corrections.restore("big3"),
        "unhide": lambda: svc.learners.update(3, ProfileIn(visibility="public")),
    }[move]
    await moved()
    await svc.projector.drain(min_age_seconds=0)
    assert await svc.leagues.zones(S49) >= 1
    rank = 1 if move in ("restore", "unhide") else 2
    assert await zone_notices(svc, 3) == [{"tier": "bronze", "cohort_id": f"{W49}.0.0",
                                           "zone": "promotion", "rank": rank}]
    if move in ("suspend", "hide", "erase"):
        await check_hidden_nowhere(svc, {5})


async def test_a_void_is_read_by_the_zone_pass_only_once_applied(rt: Runtime) -> None:
    """A void's touch waits for its outbox row: a zone pass between the
    void's commit and its apply leaves the touch for the next pass."""
    svc = await leagues(rt)
    await svc.ingestor.record([item(f"v{u}", u, u) for u in range(1, 6)])
    await svc.leagues.place(S49)
    await svc.projector.drain(min_age_seconds=0)
    await svc.leagues.zones(S49)
    with failpoints.hold("correction_committed") as held:
        void = asyncio.create_task(svc.corrections.void("v5", "test"))
        await held.reached()
        assert await svc.leagues.zones(S49) == 0  # not applied yet: nothing read
    await void
    assert await svc.leagues.zones(S49) == 1  # 3 enters the zone
    assert await zone_notices(svc, 3) == [{"tier": "bronze", "cohort_id": f"{W49}.0.0",
                                           "zone": "promotion", "rank": 2}]
    await invariants_hold(svc)


async def test_a_pending_learner_placed_late_is_seen_by_the_zone_pass(rt: Runtime) -> None:
    """Learner 1 completes in W50 before anyone else, but waits for W49's
    decision to be placed; 7 and 8 (silver already) are placed and zoned
    meanwhile. Once 1 is placed (promoted: silver) their cohort is read
    again, though nobody in it completed anything since the last pass."""
    svc = await leagues(rt, now=NOW + timedelta(days=7))
    async with svc.db.connection() as conn:
        await conn.execute("INSERT INTO league_tiers (user_id, tier, season)"
                           " VALUES (7, 1, '2026-W47'), (8, 1, '2026-W47')")
    await svc.ingestor.record([item("p49", 1, 9, W49)])
    await svc.leagues.place(S49)
    await svc.ingestor.record([item("p50-1", 1, 50, W50)])
    await svc.ingestor.record([item("p50-7", 7, 1, W50), item("p50-8", 8, 2, W50)])
    await svc.leagues.place(S50)
    await svc.projector.drain(min_age_seconds=0)
    # 8 in silver's promotion zone: two of five promote ceil(2 * 2 / 5) = 1.
    assert await svc.leagues.zones(S50) == 1
    assert await zone_notices(svc, 1) == []  # pending: no cohort yet
    assert await svc.leagues.decide(S49)  # 1 goes up to silver
    await svc.leagues.place(S50)
    await svc.leagues.zones(S50)
    assert await zone_notices(svc, 1) == [{"tier": "silver", "cohort_id": f"{W50}.1.0",
                                           "zone": "promotion", "rank": 1}]
    await invariants_hold(svc)


# -- 6. rank events name no learner by name; an erasure scrubs them -----------------------------


async def test_rank_events_carry_no_name_and_an_erasure_scrubs_them(rt: Runtime) -> None:
    svc = rt.derive(clock=lambda: NOW)
    await svc.learners.update(1, ProfileIn(display_name="Ada"))
    await svc.learners.update(2, ProfileIn(display_name="Bo"))
    await svc.ingestor.record([item("r1", 1, 5)])
    await svc.ingestor.record([item("r2", 2, 9)])  # 2 enters the top 10 and passes 1
    await svc.ingestor.record([item("r3", 3, 20)])  # 3 passes 2 and 1
    stream = svc.board.season_keys(S49).notify_stream
    events = [fields for _, fields in await svc.redis.xrange(stream)]
    assert events and all("name" not in f for f in events)
    assert not any(b"Ada" in v or b"Bo" in v for f in events for v in
                   (x.encode() if isinstance(x, str) else x for x in f.values()))
    await svc.learners.erase(2)
    left = [fields for _, fields in await svc.redis.xrange(stream)]
    assert all(int(f["uid"]) != 2 for f in left)
    assert all("2" not in [p.lstrip("0") for p in f["passed"].split(",") if p] for f in left)
    assert any(int(f["uid"]) == 3 for f in left)  # 3's event stays, without 2
    await svc.notifier.consume()
    assert await svc.redis.xlen(stream) == 0  # handled events are deleted
    await check_erased_everywhere(svc, {2})


# -- suspicions ------------------------------------------------------------------------------------


async def test_retention_waits_for_the_deployments_league_weeks_whatever_its_settings(
        rt: Runtime) -> None:
    """A process started without league settings (its own switch off) must
    not retire a month whose league weeks the deployment has not decided."""
    cfg = {"periods": ("week",), "retain_completions_days": 30}
    svc = await leagues(rt, **cfg)
    for week in OLD:
        await svc.ingestor.record([item(f"{week}-{u}", u, u, week) for u in (1, 2)])
    closing = rt.derive(clock=lambda: NOW, **cfg)  # no LAURELS_LEAGUE_TIERS
    assert not closing.settings.leagues
    await closing.lifecycle.finalize_due(NOW)
    assert await closing.partitions.retire(NOW, 30) == []
    for week in OLD:
        assert await svc.leagues.decide(parse_season(week, zone="UTC"))
    assert date(2026, 10, 1) in await closing.partitions.retire(NOW, 30)
    await invariants_hold(svc)


async def test_a_correction_the_projector_applies_to_an_archived_week_sends_a_hint(
        rt: Runtime) -> None:
    """A void of a finalized week with no board in Redis, applied by the
    projector (its fast path held): every process's cached pages of the
    archive must hear of it."""
    svc = rt.derive(clock=lambda: NOW - timedelta(days=1))  # W48 in its grace
    await svc.ingestor.record([item("f1", 1, 5, W48), item("f2", 2, 3, W48)])
    closing = rt.derive(clock=lambda: NOW)
    assert await closing.lifecycle.finalize(S48)
    keys = [k async for k in svc.redis.scan_iter(
        match=f"{svc.board.season_keys(S48).base}:*", count=1000)]
    await svc.redis.unlink(*keys)  # the archive's keys expired
    svc.board.forget(S48)
    async with HintTap(svc, [S48]) as tap:
        with failpoints.hold("correction_committed") as held:
            void = asyncio.create_task(closing.corrections.void("f1", "test"))
            await held.reached()
            await tap.drain()
            assert await closing.projector.drain(min_age_seconds=0) == 1
            assert {h.get("season") for h in await tap.drain()} == {W48}
        await void
    top = await svc.reads.top(parse_season(W48, zone="UTC"), 10)
    assert [(e["user_id"], e["score"]) for e in top["entries"]] == [(2, 3)]
    await invariants_hold(svc)


# -- the invariants themselves can fail ------------------------------------------------------


async def test_the_erasure_invariant_covers_a_table_and_a_key_added_later(rt: Runtime) -> None:
    """A table the check was never told about, holding an erased learner's
    id, is found; so is a key no name of board/keys.py builds, and a column that
    speaks of learners in a shape the check cannot read."""
    svc = rt.derive(clock=lambda: NOW)
    await svc.ingestor.record([item("k1", 1, 5), item("k2", 2, 3)])
    await svc.learners.erase(2)
    await check_erased_everywhere(svc, {2})
    async with svc.db.connection() as conn:
        await conn.execute("CREATE TABLE later_feature (id int, user_id bigint, data jsonb)")
        await conn.execute("INSERT INTO later_feature VALUES (1, 1, '{\"by_user_id\": 2}')")
    with pytest.raises(AssertionError, match=r"later_feature\.data names \[2\]"):
        await check_erased_everywhere(svc, {2})
    async with svc.db.connection() as conn:
        await conn.execute("DROP TABLE later_feature")
        await conn.execute("CREATE TABLE later_feature (learner bigint)")
    with pytest.raises(AssertionError, match=r"later_feature\.learner"):
        await check_erased_everywhere(svc, {2})
    async with svc.db.connection() as conn:
        await conn.execute("DROP TABLE later_feature")
    stray = svc.board.season_keys(S49).base + ":v1:stray"
    await svc.redis.set(stray, "2")
    with pytest.raises(AssertionError, match=r"keys\.py does not declare"):
        await check_erased_everywhere(svc, {2})
    await svc.redis.delete(stray)
    hidden = svc.board.season_keys(S49).version("99").hidden
    await svc.redis.zadd(hidden, {"0000000000000000002": 1})
    with pytest.raises(AssertionError, match=r"names \[2\]"):
        await check_erased_everywhere(svc, {2})
    await svc.redis.delete(hidden)


async def test_the_visibility_invariant_sees_every_read_it_names(rt: Runtime) -> None:
    """Told that a public learner must be hidden, the check finds them on the
    board, on others' neighbourhoods, on the friends board, on a group's
    board, on their cohort's board and in another's notification."""
    from laurels.core.validation import GroupIn, MembersIn

    svc = await leagues(rt)
    await svc.rebuilder.run(S49)
    await svc.groups.put("g", GroupIn(name="G", access="public"))
    await svc.groups.change_members("g", MembersIn(add=[1, 2], remove=[]))
    await svc.ingestor.record([item("s1", 1, 5)])
    await svc.ingestor.record([item("s2", 2, 9)])  # 2 passes 1
    await svc.leagues.place(S49)
    await svc.notifier.consume()
    await check_hidden_nowhere(svc, set())
    with pytest.raises(AssertionError) as found:
        await check_hidden_nowhere(svc, {2})
    for read in ("board 2026-W49", "1's neighbours on 2026-W49", "friends on 2026-W49",
                 "group g on 2026-W49", f"cohort {W49}.0.0", "1's notifications"):
        assert f"{read} shows [2]" in str(found.value), read
