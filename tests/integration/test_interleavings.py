"""Each interleaving that once let an erased learner come back or showed a
hidden one in public, forced deterministically with held pause points
(laurels.core.failpoints), never with sleeps. docs/concurrency.md explains the
lock order that makes each of them harmless.

After every scenario the store invariants of tests/invariants.py hold and
verify finds the board consistent with PostgreSQL.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from laurels.board import Delta, Profile
from laurels.board.keys import chunk_of
from laurels.core import failpoints
from laurels.core.ranking import member_uid, pad_uid
from laurels.core.seasons import Season, parse_season
from laurels.core.validation import ProfileIn
from laurels.runtime import Runtime, Services
from tests.invariants import HintTap, blocked_or_done, check_all

W47, W49 = (parse_season(w, zone="UTC") for w in ("2026-W47", "2026-W49"))
ALL = parse_season("all", zone="UTC")
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)  # W49; W47 closed, W48 in its grace
LATE_W47 = datetime(2026, 11, 24, 12, tzinfo=UTC)  # W47 still in its grace


def item(cid: str, uid: int, points: int, season: Season = W49, hour: int = 1
         ) -> dict[str, Any]:
    at = season.starts_at + timedelta(hours=hour)
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": at.isoformat()}


def services(rt: Runtime, now: datetime = NOW, **overrides: Any) -> Services:
    return rt.derive(clock=lambda: now, **overrides)


async def top(svc: Services, season: Season) -> list[tuple[int | None, str, int]]:
    body = await svc.reads.top(season, 100)
    return [(e["user_id"], e["display_name"], e["score"]) for e in body["entries"]]


async def consistent(svc: Services, season: Season) -> None:
    result = await svc.verifier.verify(season)
    assert result.consistent, result.body()


# -- 1. an erased learner comes back after a heal -----------------------------------


@pytest.mark.parametrize("point", ["ingest_after_commit", "fast_missing"])
async def test_erasure_while_the_fast_path_waits_on_a_missing_board(rt: Runtime,
                                                                    point: str) -> None:
    """The season has no board. A completion commits; before its fast path
    applies it, the learner is erased (erase.lua finds no board). The fast path
    then heals the board from PostgreSQL: the learner must not come back from
    the copy of the event it read before the erasure."""
    svc = services(rt)
    await svc.learners.update(2, ProfileIn(display_name="Bea"))
    await svc.ingestor.record([item("a1", 1, 3)])
    await svc.redis.delete(svc.board.season_keys(W49).current)  # the board is lost
    svc.board.forget(W49)
    with failpoints.hold(point) as held:
        ingest = asyncio.create_task(svc.ingestor.record([item("a2", 2, 7)]))
        await held.reached()
        erase = asyncio.create_task(svc.learners.erase(2))
        await blocked_or_done(svc, erase)  # the claimed outbox row makes it wait
    [outcome] = await ingest
    await erase
    assert outcome.status == "recorded"
    board = await top(svc, W49)
    assert board == [(1, "Learner 1", 3)]
    await consistent(svc, W49)
    await check_all(svc, [W49])


# -- 2. finalize racing an erasure ----------------------------------------------------


async def test_finalize_racing_an_erasure_keeps_nobody_erased(rt: Runtime) -> None:
    """Finalize has read the completions into the archive but not committed;
    the erasure runs meanwhile. The archive, the season_final notifications
    and the archived board (once Redis lets the keys go) hold no trace."""
    svc = services(rt, LATE_W47, keep_seasons=0)
    await svc.ingestor.record([item("f1", 1, 5, W47), item("f2", 2, 9, W47)])
    with failpoints.hold("finalize_before_commit") as held:
        finalize = asyncio.create_task(svc.lifecycle.finalize(W47))
        await held.reached()
        erase = asyncio.create_task(svc.learners.erase(2))
        await blocked_or_done(svc, erase)  # waits for the season's lock
    assert await finalize
    await erase
    assert await top(svc, W47) == [(1, "Learner 1", 5)]  # keys gone: from the archive
    for uid in (1, 2):
        notes = await svc.db.fetch("list_notifications", user_id=uid, limit=10)
        assert [n["kind"] for n in notes] == (["season_final"] if uid == 1 else [])
    await consistent(svc, W47)
    await check_all(svc, [W47])


# -- 3. finalize racing a visibility change --------------------------------------------


async def test_finalize_racing_hidden_keeps_the_archive_private(rt: Runtime) -> None:
    svc = services(rt, LATE_W47, keep_seasons=0)
    await svc.ingestor.record([item("v1", 1, 5, W47), item("v2", 2, 9, W47)])
    with failpoints.hold("finalize_before_commit") as held:
        finalize = asyncio.create_task(svc.lifecycle.finalize(W47))
        await held.reached()
        hide = asyncio.create_task(svc.learners.update(2, ProfileIn(visibility="hidden")))
        await blocked_or_done(svc, hide)
    assert await finalize
    await hide
    assert await top(svc, W47) == [(1, "Learner 1", 5)]
    me = await svc.reads.around(W47, 2, 1)
    assert me["user"]["rank"] == 1 and me["user"]["visibility"] == "hidden"
    await check_all(svc, [W47])


# -- 4. an erasure after the rebuild's snapshot ------------------------------------------


async def test_rebuild_succeeds_when_an_erasure_follows_its_snapshot(rt: Runtime) -> None:
    svc = services(rt)
    await svc.ingestor.record([item("r1", 1, 4), item("r2", 2, 6), item("r3", 3, 1)])
    with failpoints.hold("rebuild_snapshot_taken") as held:
        rebuild = asyncio.create_task(svc.rebuilder.run(W49))
        await held.reached()
        await svc.learners.erase(2)  # erase.lua reaches the building version too
    result = await rebuild
    assert result.events == 3  # the snapshot still had learner 2
    status = await svc.rebuilder.status(result.rebuild_id)
    assert status is not None and status["status"] == "succeeded"
    assert [u for u, _, _ in await top(svc, W49)] == [1, 3]
    await consistent(svc, W49)
    await check_all(svc, [W49])


# -- 5. a hint naming a learner who became hidden during a heal ---------------------------


async def test_no_hint_names_a_learner_hidden_during_a_heal(rt: Runtime) -> None:
    svc = services(rt)
    async with HintTap(svc, [W49]) as tap:
        with failpoints.hold("fast_missing") as held:
            ingest = asyncio.create_task(svc.ingestor.record([item("h1", 2, 7)]))
            await held.reached()  # no board: the fast path is about to heal it
            await svc.learners.update(2, ProfileIn(visibility="hidden"))
        await ingest
        hints = await tap.drain()
    assert hints, "the change was hinted"
    assert all(h.get("user_id") is None for h in hints), hints
    assert await top(svc, W49) == []
    me = await svc.reads.around(W49, 2, 0)
    assert me["user"]["visibility"] == "hidden" and me["user"]["score"] == 7
    await check_all(svc, [W49])


async def test_hints_name_only_public_learners(rt: Runtime) -> None:
    svc = services(rt)
    await svc.rebuilder.run(W49)  # a live board: applies hint at once
    await svc.learners.update(3, ProfileIn(visibility="anonymous"))
    await svc.learners.update(4, ProfileIn(visibility="hidden"))
    async with HintTap(svc, [W49]) as tap:
        for i, uid in enumerate((1, 3, 4)):
            await svc.ingestor.record([item(f"p{i}", uid, 2)])
        hints = await tap.drain()
    assert [h.get("user_id") for h in hints if h["season"] == W49.name] == [1, None, None]


# -- 6. smaller leaks ------------------------------------------------------------------------


async def test_a_profile_arriving_after_the_erasure_stays_out(rt: Runtime) -> None:
    svc = services(rt)
    await svc.ingestor.record([item("n1", 2, 5), item("n2", 1, 1)])
    with failpoints.hold("profile_committed") as held:
        rename = asyncio.create_task(svc.learners.update(2, ProfileIn(display_name="Bea")))
        await held.reached()  # committed in PostgreSQL, not yet projected
        await svc.learners.erase(2)
    await rename
    sk = svc.board.season_keys(W49)
    current = await svc.redis.get(sk.current)
    assert await svc.redis.hget(sk.version(current).users, pad_uid(2)) is None
    await consistent(svc, W49)
    await check_all(svc, [W49])


async def test_keys_created_after_finalize_expire_with_the_season(rt: Runtime) -> None:
    """A bitmap chunk, a hidden set and an erased set written after the
    season's keys got their expiry take the same expiry."""
    svc = services(rt, LATE_W47)
    await svc.ingestor.record([item("e1", 1, 5, W47), item("e2", 2, 3, W47)])
    async with svc.db.connection() as conn:  # the next seq opens a new bitmap chunk
        await conn.execute("ALTER SEQUENCE completion_seq RESTART WITH 131072")
    with failpoints.hold("ingest_after_commit") as held:
        late = asyncio.create_task(svc.ingestor.record([item("e3", 3, 2, W47)]))
        await held.reached()  # committed before the finalize: it is archived
        assert await svc.lifecycle.finalize(W47)
    [outcome] = await late
    assert outcome.status == "recorded" and chunk_of(outcome.seq or 0)[0] == 2
    await svc.learners.update(3, ProfileIn(visibility="hidden"))
    await svc.learners.erase(1)
    sk = svc.board.season_keys(W47)
    assert await svc.redis.pttl(sk.current) > 0
    assert await svc.redis.exists(sk.erased)
    await check_all(svc, [W47])


async def test_a_finalized_seasons_rebuild_gives_its_corrections_the_expiry(
        rt: Runtime) -> None:
    """A rebuild of a finalized season with a voided completion: the version
    being built writes the snapshot's corrections hash before it switches, and
    that hash expires with the season like every key of the version (found by
    the interleaving machine: it had no expiry until the switch, and none
    after it if the switch never came)."""
    svc = services(rt, LATE_W47)
    await svc.ingestor.record([item("x1", 1, 5, W47), item("x2", 2, 3, W47)])
    assert await svc.lifecycle.finalize(W47)
    await svc.corrections.void("x2", "test")
    sk = svc.board.season_keys(W47)
    with failpoints.hold("rebuild_before_switch") as held:
        rebuild = asyncio.create_task(svc.rebuilder.run(W47))
        await held.reached()
        building = await svc.redis.get(sk.building)
        corrections = sk.version(building).corrections
        assert await svc.redis.hlen(corrections) == 1
        assert await svc.redis.pttl(corrections) > 0
        await check_all(svc, [W47])
    await rebuild
    assert await svc.redis.pttl(corrections) > 0
    assert {u: s for u, _, s in await top(svc, W47)} == {1: 5}
    await consistent(svc, W47)
    await check_all(svc, [W47])


async def test_a_tombstoned_apply_tracks_its_bitmap(rt: Runtime) -> None:
    svc = services(rt)
    await svc.ingestor.record([item("t1", 2, 5)])
    rows = await svc.db.fetch("find_completions", completion_ids=["t1"])
    await svc.learners.erase(2)
    # The same event delivered late (as a rebuild stream or a stale worker would):
    from laurels.board import Delta, Profile

    late = Delta(rows[0]["seq"] + 70_000, 2, 5, rows[0]["completed_at"], W49,
                 Profile(0, "public", ""))
    assert await svc.board.apply([late]) == ["duplicate"]
    await check_all(svc, [W49])


# -- 7. a completion of the rebuild's snapshot applied live before its bits ---------


async def test_a_snapshot_completion_applied_live_counts_once(rt: Runtime) -> None:
    """The rebuild marks its version building, takes its snapshot (which holds
    a completion whose fast path has not run yet), and only then sets the
    snapshot's bits. The fast path runs in between and reaches the building
    version live: the rebuild must take those points out of its aggregate."""
    svc = services(rt)
    await svc.rebuilder.run(W49)
    await svc.ingestor.record([item("s1", 1, 4)])
    with failpoints.hold("ingest_after_commit") as ingest_held:
        ingest = asyncio.create_task(svc.ingestor.record([item("s2", 1, 6), item("s3", 2, 1)]))
        await ingest_held.reached()  # committed, not applied yet
        with failpoints.hold("rebuild_snapshot_taken") as rebuild_held:
            rebuild = asyncio.create_task(svc.rebuilder.run(W49))
            await rebuild_held.reached()  # building, snapshot holds s2 and s3
            ingest_held.release()
            await ingest  # applied to the current and the building version
    result = await rebuild
    assert result.events == 3
    assert {u: s for u, _, s in await top(svc, W49)} == {1: 10, 2: 1}
    await consistent(svc, W49)
    await check_all(svc, [W49])


# -- corrections during a rebuild (issue 15) ------------------------------------------------


@pytest.mark.parametrize("stale", [True, False])
async def test_a_correction_during_a_rebuild_waits_for_the_new_version(rt: Runtime,
                                                                     stale: bool) -> None:
    """A version being built takes no correction (its snapshot has the states):
    a late, older one (a restore overtaken by a void, projected after it) and
    a new one made during the build are both "deferred", answered by the
    current version, and taken by the new one once it is current. Found by
    the fault suite: a stale restore landing on the building version counted
    a voided completion twice."""
    svc = services(rt, close_seasons=False)
    await svc.ingestor.record([item("x", 1, 10), item("y", 2, 7)])
    for act in ("void", "restore", "void"):
        await getattr(svc.corrections, act)("x", *(["test"] if act == "void" else []))
    assert [u for u, _, _ in await top(svc, W49)] == [2]
    assert await svc.db.fetch("claim_outbox", min_age_seconds=0, limit=100) == []
    with failpoints.hold("rebuild_snapshot_taken") as held:
        rebuild = asyncio.create_task(svc.rebuilder.run(W49))
        await held.reached()
        if stale:  # the restore (correction 2) projected again, late
            user = await svc.db.fetch_one("get_user", user_id=1)
            assert user is not None
            x = await svc.db.fetch_one("lock_completion", completion_id="x")
            assert x is not None
            event = Delta(x["seq"], 1, 10, x["completed_at"], W49,
                          Profile(user["profile_version"], "public", ""), 2, True)
            assert await svc.board.apply([event]) == ["deferred"]
        else:  # a new correction while the board is rebuilt: restore x again
            await svc.corrections.restore("x")
        depth = await svc.db.fetch_one("outbox_depth")
        assert depth is not None and depth["depth"] == (0 if stale else 1)  # kept: deferred
    await rebuild
    await svc.projector.drain(min_age_seconds=0)
    want = [1, 2] if not stale else [2]
    assert [u for u, _, _ in await top(svc, W49)] == want
    await consistent(svc, W49)


# -- tombstones lost with the board (issue 15's model test found it) --------------------


async def lose_board(svc: Services, season: Season) -> None:
    """Redis forgets every key of a season, its erased set too (a flush, a
    failover to a replica that had nothing)."""
    base = svc.board.season_keys(season).base
    keys = [k async for k in svc.redis.scan_iter(match=f"{base}:*", count=1000)]
    if keys:
        await svc.redis.unlink(*keys)
    svc.board.forget(season)


async def on_board(svc: Services, season: Season) -> set[int]:
    """Who the current version holds, in Redis itself (reads also filter
    erased learners at the boundary, which would hide a leak from `top`)."""
    sk = svc.board.season_keys(season)
    vk = sk.version(await svc.redis.get(sk.current))
    members = [*await svc.redis.zrange(vk.public, 0, -1),
               *await svc.redis.zrange(vk.hidden, 0, -1)]
    return {member_uid(m) for m in members} | {int(u) for u in await svc.redis.hkeys(vk.users)}


@pytest.mark.parametrize("when", ["after_the_rebuild", "during_the_rebuild"])
async def test_a_rebuild_puts_back_the_tombstones_a_lost_board_took(rt: Runtime,
                                                                   when: str) -> None:
    """A completion commits; before its fast path applies it from memory,
    the learner is erased (the tombstone is written), then Redis loses the
    season with its tombstone and a rebuild builds it again from PostgreSQL.
    The fast path then applies its copy of the event: onto the new board
    (`after_the_rebuild`), or onto the version being built, between the
    rebuild's snapshot and its loading (`during_the_rebuild`). Either way
    the rebuild must have put the tombstone back, and the learner stays off."""
    svc = services(rt)
    await svc.ingestor.record([item("l1", 1, 3)])
    with failpoints.hold("ingest_after_commit") as ingest_held:
        ingest = asyncio.create_task(svc.ingestor.record([item("l2", 2, 7)]))
        await ingest_held.reached()
        await svc.learners.erase(2)
        await lose_board(svc, W49)
        if when == "after_the_rebuild":
            await svc.rebuilder.run(W49)
        else:
            with failpoints.hold("rebuild_snapshot_taken") as rebuild_held:
                rebuild = asyncio.create_task(svc.rebuilder.run(W49))
                await rebuild_held.reached()
                ingest_held.release()
                await ingest
                sk = svc.board.season_keys(W49)
                building = sk.version(await svc.redis.get(sk.building))
                # The copy reached the version being built (no tombstone yet).
                assert await svc.redis.zscore(building.public, pad_uid(2)) is not None
            await rebuild
    await ingest
    assert await on_board(svc, W49) == {1}
    assert await top(svc, W49) == [(1, "Learner 1", 3)]
    await consistent(svc, W49)
    await check_all(svc, [W49])


async def test_a_profile_of_an_erased_learner_stays_off_a_rebuilt_board(rt: Runtime) -> None:
    """The same for a profile change projected late: its name must not come
    back onto a board rebuilt after the tombstone was lost."""
    svc = services(rt)
    await svc.ingestor.record([item("p1", 2, 5), item("p2", 1, 1)])
    with failpoints.hold("profile_committed") as held:
        rename = asyncio.create_task(svc.learners.update(2, ProfileIn(display_name="Bea")))
        await held.reached()
        await svc.learners.erase(2)
        await lose_board(svc, W49)
        await svc.rebuilder.run(W49)
    await rename
    sk = svc.board.season_keys(W49)
    current = await svc.redis.get(sk.current)
    assert await svc.redis.hget(sk.version(current).users, pad_uid(2)) is None
    assert await svc.redis.sismember(sk.erased, pad_uid(2))
    await consistent(svc, W49)
    await check_all(svc, [W49])


async def test_a_rebuild_tombstones_only_erasures_that_may_concern_its_season(
        rt: Runtime) -> None:
    """A completion in a season commits no earlier than its start less the
    allowed clock skew (a day more for clocks that disagree), and its
    learner's erasure after it: a learner erased before that had nothing in
    the season, and its rebuild does not carry them (the all-time board,
    which has no start, carries every one)."""
    svc = services(rt, periods=("week", "all"), max_future_skew_seconds=300)
    since = W49.starts_at - timedelta(days=1, seconds=300)
    erased_at = {5: since - timedelta(minutes=1), 6: since + timedelta(minutes=1), 7: NOW}
    for uid, at in erased_at.items():
        await svc.learners.erase(uid)
        async with svc.db.connection() as conn:  # when PostgreSQL says it happened
            await conn.execute("UPDATE users SET erased_at = %s WHERE user_id = %s",
                               (at, uid))
    await svc.ingestor.record([item("q1", 1, 3)])
    for season in (W49, ALL):
        await lose_board(svc, season)
        await svc.rebuilder.run(season)
    erased = {s: {int(u) for u in await svc.redis.smembers(svc.board.season_keys(s).erased)}
              for s in (W49, ALL)}
    assert erased == {W49: {6, 7}, ALL: {5, 6, 7}}


async def test_a_rebuild_after_a_rollback_takes_erased_learners_off_the_current_board(
        rt: Runtime) -> None:
    """Redis rolls back to a copy from before an erasure (an older snapshot,
    a lagging replica): the board holds the learner again, without the
    tombstone. The rebuild that repairs it puts the tombstone back and takes
    them off the current version as well as the new one, from its snapshot
    on, not only at the switch."""
    svc = services(rt)
    await svc.ingestor.record([item("b1", 1, 3), item("b2", 2, 7)])
    sk = svc.board.season_keys(W49)
    names = [k async for k in svc.redis.scan_iter(match=f"{sk.base}:*", count=1000)]
    saved = {k: await svc.redis.dump(k) for k in names}
    await svc.learners.erase(2)
    await lose_board(svc, W49)
    for k, value in saved.items():  # the copy from before the erasure
        await svc.redis.restore(k, 0, value)
    assert await on_board(svc, W49) == {1, 2}
    with failpoints.hold("rebuild_before_switch") as held:
        rebuild = asyncio.create_task(svc.rebuilder.run(W49))
        await held.reached()
        assert await on_board(svc, W49) == {1}  # the current version, before the switch
        assert await svc.redis.sismember(sk.erased, pad_uid(2))
    await rebuild
    assert await on_board(svc, W49) == {1}
    await consistent(svc, W49)
    await check_all(svc, [W49])


# -- corrections among the other writers (issue 15) --------------------------------------


async def test_a_void_before_the_completions_own_fast_path_counts_nothing(rt: Runtime) -> None:
    """The completion commits; its fast path has not applied it when an
    operator voids it (projected at once). The completion's copy applied
    afterwards is a duplicate: the void set its bit."""
    svc = services(rt)
    await svc.ingestor.record([item("v0", 1, 2)])
    with failpoints.hold("ingest_after_commit") as held:
        ingest = asyncio.create_task(svc.ingestor.record([item("v1", 1, 9), item("v2", 2, 4)]))
        await held.reached()
        await svc.corrections.void("v1", "copied")
    await ingest
    await svc.projector.drain(min_age_seconds=0)
    assert await top(svc, W49) == [(2, "Learner 2", 4), (1, "Learner 1", 2)]
    await consistent(svc, W49)
    await check_all(svc, [W49])


async def test_a_late_void_projected_after_a_restore_changes_nothing(rt: Runtime) -> None:
    """A void commits, then waits before its fast path; a restore commits and
    is projected; the void's projection comes last, with an older correction
    number, and changes nothing (and so does the projector's re-delivery)."""
    svc = services(rt)
    await svc.ingestor.record([item("w1", 1, 9), item("w2", 2, 4)])
    with failpoints.hold("correction_committed") as held:
        late = asyncio.create_task(svc.corrections.void("w1", "suspected"))
        await held.reached()
        await svc.corrections.restore("w1", "cleared")
        assert await top(svc, W49) == [(1, "Learner 1", 9), (2, "Learner 2", 4)]
    assert (await late)["status"] == "voided"  # what it did, in its time
    await svc.projector.drain(min_age_seconds=0)
    assert await top(svc, W49) == [(1, "Learner 1", 9), (2, "Learner 2", 4)]
    row = await svc.db.fetch_one("lock_completion", completion_id="w1")
    assert row is not None and (row["counted"], row["correction"]) == (True, 2)
    await consistent(svc, W49)


async def test_a_replay_racing_a_void_is_a_duplicate(rt: Runtime) -> None:
    """A void holds the completion's row; a replay of the same completion
    meanwhile answers duplicate and counts nowhere, then the void lands."""
    svc = services(rt)
    await svc.ingestor.record([item("r1", 1, 9), item("r2", 2, 4)])
    with failpoints.hold("correction_locked") as held:
        void = asyncio.create_task(svc.corrections.void("r1", "copied"))
        await held.reached()
        [replay] = await svc.ingestor.record([item("r1", 1, 9)])
        assert replay.status == "duplicate"
    await void
    await svc.projector.drain(min_age_seconds=0)
    assert await top(svc, W49) == [(2, "Learner 2", 4)]
    await consistent(svc, W49)


@pytest.mark.parametrize("point", ["correction_locked", "correction_committed"])
async def test_an_erasure_racing_a_correction_keeps_the_learner_off(rt: Runtime,
                                                                   point: str) -> None:
    """A restore of an erased-to-be learner's completion is held with its
    locks (the erasure waits for the learner's row) or after its commit,
    holding the event in memory (the erasure runs through): either way the
    restore's projection must not bring the learner back."""
    svc = services(rt)
    await svc.ingestor.record([item("e1", 1, 3), item("e2", 2, 7), item("e3", 2, 1)])
    await svc.corrections.void("e2", "copied")
    with failpoints.hold(point) as held:
        restore = asyncio.create_task(svc.corrections.restore("e2", "cleared"))
        await held.reached()
        erase = asyncio.create_task(svc.learners.erase(2))
        await blocked_or_done(svc, erase)
        if point == "correction_committed":
            await erase
    await restore
    await erase
    await svc.projector.drain(min_age_seconds=0)
    assert await top(svc, W49) == [(1, "Learner 1", 3)]
    await consistent(svc, W49)
    await check_all(svc, [W49])


# -- archives: one lock order, one snapshot (found by the model machine) -------------------


async def test_a_correction_and_a_visibility_change_rerank_one_archive_in_turn(
        rt: Runtime) -> None:
    """A void in a finalized season rewrites its learner's standing, then
    re-ranks; a visibility change of another learner re-ranks the same
    archive. The void takes the archive's lock before it writes the
    standing, so the re-rank waits for it instead of holding the lock while
    waiting for the void's row (a deadlock, which PostgreSQL broke by
    failing one of them)."""
    svc = services(rt, LATE_W47)
    await svc.ingestor.record([item("d1", 1, 5, W47), item("d2", 2, 9, W47),
                               item("d3", 1, 7, W47, hour=2)])
    assert await svc.lifecycle.finalize(W47)
    with failpoints.hold("correction_restanded") as held:
        void = asyncio.create_task(svc.corrections.void("d3", "copied"))
        await held.reached()  # learner 1's standing rewritten, archive not re-ranked
        hide = asyncio.create_task(svc.learners.update(2, ProfileIn(visibility="hidden")))
        await blocked_or_done(svc, hide)
    await void
    await hide
    assert await top(svc, W47) == [(1, "Learner 1", 5)]  # from the archive
    await check_all(svc, [W47])


async def test_an_archived_neighbourhood_is_read_in_one_snapshot(rt: Runtime) -> None:
    """A re-rank commits between the read of a learner's archived place and
    the slice around it: the read answers from one snapshot, not from two
    states (the learner's old place in the new slice was out of range)."""
    svc = services(rt, LATE_W47)
    await svc.ingestor.record([item("n1", 1, 9, W47), item("n2", 2, 5, W47),
                               item("n3", 3, 1, W47)])
    assert await svc.lifecycle.finalize(W47)
    await lose_board(svc, W47)  # its keys expired: read from the archive
    with failpoints.hold("archive_around_placed") as held:
        read = asyncio.create_task(svc.reads.around(W47, 3, 1))
        await held.reached()  # learner 3 is third
        await svc.learners.update(1, ProfileIn(visibility="hidden"))  # now second
    me = await read
    assert me["user"]["rank"] == 3
    assert [n["user_id"] for n in me["neighbors"]] == [2, 3]
    me = await svc.reads.around(W47, 3, 1)
    assert me["user"]["rank"] == 2
    assert [n["user_id"] for n in me["neighbors"]] == [2, 3]


# -- a void's fallback tie time read before a later apply (issue 25) ------------------------


def at(cid: str, uid: int, points: int, minutes: int) -> dict[str, Any]:
    """A completion `minutes` into W49."""
    when = W49.starts_at + timedelta(minutes=minutes)
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": when.isoformat()}


# A restore racing the projector's delivery would pass correction_committed,
# which holds the void there: the void's own fast path then goes first.
@pytest.mark.parametrize(("path", "racer"), [("fast_path", "completion"),
                                             ("fast_path", "restore"),
                                             ("projector", "completion")])
async def test_a_void_never_writes_a_stale_tie_time(rt: Runtime, path: str, racer: str) -> None:
    """`first` policy. Learner 1 has 3 points at +1h and 5 at +3h; learner 2
    has 8 at +2h. A void of the +3h completion reads the fallback tie time
    (+1h) from PostgreSQL and is held there; meanwhile learner 1's 5 points
    at +2h30 come to count, applied at once: a new completion, or a restore
    of one voided before. The void's apply must not write +1h over it:
    learner 1's tie time is +2h30, so learner 2 (8 points at +2h) ranks
    first, as a rebuild would rank them. Held in the void's own fast path,
    or in the projector delivering the void while its fast path waits."""
    svc = services(rt, tie_policy="first")
    await svc.ingestor.record([at("t1", 1, 3, 60), at("t2", 1, 5, 180), at("t3", 2, 8, 120)])
    if racer == "restore":
        await svc.ingestor.record([at("t4", 1, 5, 150)])
        await svc.corrections.void("t4", "checked later")
        await svc.projector.drain(min_age_seconds=0)

    async def race() -> None:
        if racer == "restore":
            await svc.corrections.restore("t4", "it was fine")
        else:
            await svc.ingestor.record([at("t4", 1, 5, 150)])

    with failpoints.hold("correction_committed") as committed:
        if path == "projector":
            void = asyncio.create_task(svc.corrections.void("t2", "copied"))
            await committed.reached()
            with failpoints.hold("void_tie_read") as held:
                drain = asyncio.create_task(svc.projector.drain(min_age_seconds=0))
                await held.reached()
                await race()
            await drain
        else:
            committed.release()
            with failpoints.hold("void_tie_read") as held:
                void = asyncio.create_task(svc.corrections.void("t2", "copied"))
                await held.reached()
                await race()
    await void
    await svc.projector.drain(min_age_seconds=0)
    assert await top(svc, W49) == [(2, "Learner 2", 8), (1, "Learner 1", 8)]
    [(uid, score, tie)] = [(s.user_id, s.score, s.last_ts)
                           for s in await svc.board.standings_of(W49, [1])]
    assert (uid, score, tie) == (1, 8, W49.offset_us(
        W49.starts_at + timedelta(minutes=150)))
    await consistent(svc, W49)
    await svc.rebuilder.run(W49)  # a rebuild ranks them the same
    assert await top(svc, W49) == [(2, "Learner 2", 8), (1, "Learner 1", 8)]


async def test_verify_sees_a_stale_tie_time(rt: Runtime) -> None:
    """Under `first`, the tie time orders the board: verify compares it, so
    a tie time that drifted from PostgreSQL's latest counted completion is
    reported (as "tie"), not called consistent."""
    svc = services(rt, tie_policy="first")
    await svc.ingestor.record([at("d1", 1, 3, 60), at("d2", 1, 5, 150), at("d3", 2, 8, 120)])
    sk = svc.board.season_keys(W49)
    vk = sk.version(await svc.redis.get(sk.current))
    uid = pad_uid(1)
    version, vis, ts, name = (await svc.redis.hget(vk.users, uid)).split("\t")
    w49 = W49
    stale = w49.pad_ts(w49.starts_at + timedelta(minutes=60))
    score = await svc.redis.zscore(vk.public, ts + uid)
    await svc.redis.zrem(vk.public, ts + uid)  # the drift a stale void once left
    await svc.redis.zadd(vk.public, {stale + uid: score})
    await svc.redis.hset(vk.users, uid, "\t".join([version, vis, stale, name]))
    result = await svc.verifier.verify(W49)
    assert not result.consistent
    [mismatch] = result.body()["mismatches"]
    assert (mismatch["user_id"], mismatch["field"]) == (1, "tie")
    assert mismatch["redis"] == mismatch["postgres"] == 8
