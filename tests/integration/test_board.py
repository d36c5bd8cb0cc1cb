"""The Redis projection: tie policies, privacy, idempotent apply, order independence."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.exceptions import ConnectionError as RedisConnectionError

from laurels.board import Board, Delta, Profile
from laurels.board.keys import Keys, chunk_of
from laurels.core.errors import StoreUnavailable
from laurels.core.ranking import Standing, rank_all
from laurels.core.seasons import parse_season, season_of, week
from laurels.projection.projector import boards_of
from laurels.projection.rebuild import Rebuilder
from laurels.runtime import Runtime, redis_client
from tests import deadlines

SEASON = week(2026, 49)
START = SEASON.starts_at
PUBLIC = Profile(0, "public", "")
_seq = itertools.count(1)

# The calendar periods (a window holds a completion only while its day is
# in it: tests/integration/test_windows.py).
CALENDAR = ("week", "day", "month", "all")


def ev(uid: int, points: int, minutes: int = 0, profile: Profile = PUBLIC,
       seq: int | None = None) -> Delta:
    return Delta(seq or next(_seq), uid, points, START + timedelta(minutes=minutes), SEASON,
                 profile)


async def fresh_board(rt: Runtime, policy: str) -> Board:
    """A board of the given policy whose season exists (empty) in Redis."""
    board = Board(rt.redis, Keys(rt.keys.prefix, policy), policy,  # type: ignore[arg-type]
                  zone="UTC")
    await Rebuilder(rt.db, board).run(SEASON)
    return board


async def test_top_three_ties_shared(rt: Runtime) -> None:
    board = await fresh_board(rt, "shared")
    await board.apply([ev(30, 10), ev(10, 10), ev(20, 10), ev(40, 9), ev(50, 1)])
    top = await board.top(SEASON, 100)
    assert [(e.rank, e.user_id, e.score) for e in top.entries] == [
        (1, 10, 10), (1, 20, 10), (1, 30, 10), (4, 40, 9), (5, 50, 1)]
    assert top.total == 5


async def test_top_three_ties_first(rt: Runtime) -> None:
    board = await fresh_board(rt, "first")
    # Latest completion: user 30 at minute 1, user 10 at minute 5, user 20 at minute 5.
    await board.apply([ev(30, 4, 1), ev(30, 6, 0), ev(10, 10, 5), ev(20, 10, 5), ev(40, 9)])
    top = await board.top(SEASON, 100)
    assert [(e.rank, e.user_id) for e in top.entries] == [(1, 30), (2, 10), (3, 20), (4, 40)]


async def test_apply_is_idempotent_and_atomic(rt: Runtime) -> None:
    board = await fresh_board(rt, "shared")
    e = ev(7, 5)
    results = await asyncio.gather(*(board.apply([e]) for _ in range(20)))
    assert sorted(r[0] for r in results) == ["applied"] + ["duplicate"] * 19
    assert (await board.top(SEASON, 10)).entries[0].score == 5
    # The idempotency bit is set exactly where keys.chunk_of says.
    chunk, offset = chunk_of(e.seq)
    vk = board.season_keys(SEASON).version(await rt.redis.get(board.season_keys(SEASON).current))
    assert await rt.redis.getbit(vk.applied(chunk), offset) == 1


async def test_stale_versions_write_nothing(rt: Runtime) -> None:
    """The script refuses before its first write when the caller's view is stale."""
    board = await fresh_board(rt, "shared")
    current = await rt.redis.get(board.season_keys(SEASON).current)
    e = ev(8, 3)
    _, keys, args = board._apply_call([e], [0], believed={SEASON.name: ("999", "")})
    reply = await board.scripts["apply"](keys=keys, args=args)
    assert reply[1] == "STALE" and reply[2] == current
    vk = board.season_keys(SEASON).version("999")
    assert await rt.redis.exists(vk.public, vk.users, vk.applied(chunk_of(e.seq)[0])) == 0


async def test_missing_board_is_never_written(rt: Runtime) -> None:
    board = Board(rt.redis, rt.keys, "shared", zone="UTC")
    assert await board.apply([ev(1, 1)]) == ["missing"]
    assert await rt.redis.keys(f"{rt.keys.prefix}:*") == []


async def test_privacy_hidden_and_anonymous(rt: Runtime) -> None:
    board = await fresh_board(rt, "shared")
    await board.apply([ev(1, 50, profile=Profile(1, "hidden", "Hid")),
                       ev(2, 40, profile=Profile(1, "anonymous", "Anon")),
                       ev(3, 30, profile=Profile(1, "public", "Pub")),
                       ev(4, 30)])
    top = await board.top(SEASON, 100)
    assert [(e.rank, e.user_id, e.visibility, e.display_name) for e in top.entries] == [
        (1, 2, "anonymous", "Anon"), (2, 3, "public", "Pub"), (2, 4, "public", "Learner 4")]
    assert top.total == 3
    hidden = await board.around(SEASON, 1, 1)
    assert hidden is not None
    assert (hidden.me.rank, hidden.me.score, hidden.index) == (1, 50, 0)
    assert [e.user_id for e in hidden.neighbors] == [1, 2]
    mid = await board.around(SEASON, 3, 1)
    assert mid is not None and [e.user_id for e in mid.neighbors] == [2, 3, 4]
    assert mid.index == 1 and mid.me.rank == 2
    assert await board.around(SEASON, 5, 1) is None


async def test_hidden_would_be_rank_among_ties(rt: Runtime) -> None:
    for policy in ("shared", "first"):
        board = await fresh_board(rt, policy)
        await board.apply([ev(10, 5, 1), ev(30, 5, 3), ev(20, 5, 2,
                                                           profile=Profile(1, "hidden", ""))])
        around = await board.around(SEASON, 20, 5)
        assert around is not None
        assert [e.user_id for e in around.neighbors] == [10, 20, 30]
        assert around.me.rank == (1 if policy == "shared" else 2)


async def test_visibility_change_moves_learner(rt: Runtime) -> None:
    board = await fresh_board(rt, "first")
    await board.apply([ev(1, 5, 2), ev(2, 3, 1)])
    assert await board.set_profile(SEASON, 1, Profile(2, "hidden", "X"))
    assert [e.user_id for e in (await board.top(SEASON, 10)).entries] == [2]
    # An older profile version changes nothing.
    assert await board.set_profile(SEASON, 1, Profile(1, "public", "old"))
    assert [e.user_id for e in (await board.top(SEASON, 10)).entries] == [2]
    assert await board.set_profile(SEASON, 1, Profile(3, "public", "Back"))
    top = await board.top(SEASON, 10)
    assert [(e.user_id, e.display_name, e.score) for e in top.entries] == [(1, "Back", 5),
                                                                           (2, "Learner 2", 3)]


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_rebuild_equals_incremental(rt: Runtime, policy: str) -> None:
    svc = rt.derive(clock=lambda: datetime(2026, 12, 1, tzinfo=UTC), tie_policy=policy)
    board, rebuilder, ing = svc.board, svc.rebuilder, svc.ingestor
    items = [{"completion_id": f"x{i}", "user_id": 1 + i % 7, "points": 1 + i % 3,
              "completed_at": (START + timedelta(minutes=i)).isoformat()} for i in range(60)]
    assert all(o.status == "recorded" for o in await ing.record(items))
    before = await board.top(SEASON, 100)
    result = await rebuilder.run(SEASON)
    assert result.events == 60
    after = await board.top(SEASON, 100)
    assert after == before


@settings(max_examples=25, deadline=deadlines.BOARD_ORDER,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_board_independent_of_arrival_order(rt: Runtime, data: st.DataObject) -> None:
    policy = data.draw(st.sampled_from(["shared", "first"]))
    events = data.draw(st.lists(
        st.tuples(st.integers(1, 6), st.integers(1, 4), st.integers(0, 5)),
        min_size=1, max_size=25))
    evs = [ev(uid, pts, minute) for uid, pts, minute in events]
    order = data.draw(st.permutations(range(len(evs))))
    dup = data.draw(st.lists(st.sampled_from(range(len(evs))), max_size=5))
    board = await fresh_board(rt, policy)
    await board.apply([evs[i] for i in order] + [evs[i] for i in dup])
    got = [(e.rank, e.user_id, e.score) for e in (await board.top(SEASON, 100)).entries]
    standings: dict[int, Standing] = {}
    for e in evs:
        old = standings.get(e.user_id, Standing(e.user_id, 0, 0))
        standings[e.user_id] = Standing(e.user_id, old.score + e.points,
                                        max(old.last_offset_us,
                                            int((e.completed_at - START).total_seconds() * 1e6)))
    want = [(r, s.user_id, s.score) for r, s in rank_all(standings.values(), policy)]  # type: ignore[arg-type]
    assert got == want
    sk = board.season_keys(SEASON)
    await rt.redis.delete(sk.current, sk.building)


async def test_redis_connection_error_surfaces(rt: Runtime) -> None:
    dead = redis_client("redis://127.0.0.1:1/0", False)
    board = Board(dead, rt.keys, "shared", zone="UTC")
    with pytest.raises(StoreUnavailable) as raised:
        await board.top(SEASON, 10)
    assert raised.value.store == "redis"
    assert isinstance(raised.value.__cause__, RedisConnectionError)
    await dead.aclose()


# Instants around a month's, a year's (in week 53) and a leap day's ends.
INSTANTS = [datetime(2025, 11, 30, 23, 59, 59, 999999, tzinfo=UTC),
            datetime(2025, 12, 1, tzinfo=UTC), datetime(2025, 12, 1, 0, 0, 1, tzinfo=UTC),
            datetime(2020, 12, 31, 23, 59, tzinfo=UTC), datetime(2021, 1, 1, tzinfo=UTC),
            datetime(2024, 2, 29, 12, tzinfo=UTC)]


@settings(max_examples=15, deadline=deadlines.BOARD_PERIODS,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_every_period_s_board_is_independent_of_arrival_order(
        rt: Runtime, data: st.DataObject) -> None:
    """Issue 14: each completion applied to the season of every period (as the
    projector does), in any order, with re-deliveries: every board equals
    the reference ranking of its own completions."""
    policy = data.draw(st.sampled_from(["shared", "first"]))
    raw = data.draw(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 4),
                                       st.integers(0, len(INSTANTS) - 1)),
                             min_size=1, max_size=15))
    evs = [Delta(next(_seq), uid, pts, INSTANTS[k],
                 season_of(INSTANTS[k], "week", zone="UTC"), PUBLIC)
           for uid, pts, k in raw]
    boards = boards_of(evs, CALENDAR, "UTC")
    order = data.draw(st.permutations(range(len(boards))))
    dup = data.draw(st.lists(st.sampled_from(range(len(boards))), max_size=5))
    board = Board(rt.redis, Keys(rt.keys.prefix, policy), policy,  # type: ignore[arg-type]
                  zone="UTC")
    seasons = sorted({b.season for b in boards})
    for name in seasons:
        await Rebuilder(rt.db, board).run(name)  # empty: nothing in PostgreSQL
    assert set(await board.apply([boards[i] for i in order] + [boards[i] for i in dup])) <= {
        "applied", "duplicate"}
    for name in seasons:
        season = parse_season(name.name, zone="UTC")
        standings: dict[int, Standing] = {}
        for e in evs:
            if season.contains(e.completed_at):
                old = standings.get(e.user_id, Standing(e.user_id, 0, 0))
                standings[e.user_id] = Standing(
                    e.user_id, old.score + e.points,
                    max(old.last_offset_us, season.offset_us(e.completed_at)))
        want = [(r, s.user_id, s.score) for r, s in rank_all(standings.values(), policy)]  # type: ignore[arg-type]
        got = [(e.rank, e.user_id, e.score) for e in (await board.top(name, 100)).entries]
        assert got == want, name
    for name in seasons:
        sk = board.season_keys(name)
        await rt.redis.delete(sk.current, sk.building)


async def test_a_default_profile_is_stored_for_nobody_under_shared(rt: Runtime) -> None:
    """Under `shared` a learner whose profile was never set has no entry in
    the users hash (issue 30's memory: the entry cost as much as the sorted
    set's): reads, profile changes, erasure and a later profile carried by a
    completion behave as if it were there. Under `first` the entry holds the
    tie time, so it stays."""
    board = await fresh_board(rt, "shared")
    await board.apply([ev(1, 5), ev(2, 7), ev(3, 7), ev(1, 4)])
    sk = board.season_keys(SEASON)
    vk = sk.version(await rt.redis.get(sk.current))
    assert await rt.redis.hlen(vk.users) == 0
    assert [(e.rank, e.user_id, e.display_name, e.score)
            for e in (await board.top(SEASON, 10)).entries] == [
        (1, 1, "Learner 1", 9), (2, 2, "Learner 2", 7), (2, 3, "Learner 3", 7)]
    around = await board.around(SEASON, 2, 1)
    assert around is not None and (around.me.rank, around.me.visibility) == (2, "public")
    assert await board.scores(SEASON, [1, 4]) == {1: (9, "public", "", None),
                                                  4: (None, "public", "", None)}
    # A profile set later is stored, and moves the learner (hidden: off the top).
    await board.set_profile(SEASON, 2, Profile(1, "hidden", "Bea"))
    assert (await rt.redis.hget(vk.users, "2".zfill(19))).startswith("1\thidden\t")
    assert [e.user_id for e in (await board.top(SEASON, 10)).entries] == [1, 3]
    # A late completion carrying the older, default profile changes nothing of it.
    await board.apply([ev(2, 1)])
    assert [e.user_id for e in (await board.top(SEASON, 10)).entries] == [1, 3]
    around = await board.around(SEASON, 2, 0)
    assert around is not None and (around.me.display_name, around.me.score) == ("Bea", 8)
    # Erasure takes a learner without an entry off the board.
    await board.erase(SEASON, 3, START + timedelta(days=30))
    assert [e.user_id for e in (await board.top(SEASON, 10)).entries] == [1]
    assert await board.around(SEASON, 3, 0) is None
    assert sorted([uid async for batch in board.scan_scored(SEASON) for uid in batch]) == [1, 2]
    assert await rt.redis.hkeys(vk.users) == ["2".zfill(19)]
    # Under `first` every learner has an entry: the tie time is part of the member.
    first = await fresh_board(rt, "first")
    await first.apply([ev(5, 1, 3)])
    fk = first.season_keys(SEASON)
    assert await rt.redis.hlen(fk.version(await rt.redis.get(fk.current)).users) == 1
