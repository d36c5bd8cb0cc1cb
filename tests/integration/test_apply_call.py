"""apply.lua takes a batch of several seasons' boards in one call (issue 42:
a completion with three tags is five board entries, sent once as an item):
each season is checked on its own before the first write, and each entry's
tie time is computed in the script from its season's start exactly as
Season.pad_ts computes it."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from redis.client import NEVER_DECODE

from laurels.board import Board, Delta, Profile
from laurels.board.keys import Keys
from laurels.core.ranking import pad_uid
from laurels.core.seasons import Season, parse_season, season_of
from laurels.projection.projector import boards_of
from laurels.projection.rebuild import Rebuilder
from laurels.runtime import Runtime

PUBLIC = Profile(0, "public", "")
_seq = itertools.count(1)

# The calendar periods (a window holds a completion only while its day is
# in it: tests/integration/test_windows.py).
CALENDAR = ("week", "day", "month", "all")


async def built(rt: Runtime, board: Board, seasons: list[Season]) -> None:
    for season in seasons:
        await Rebuilder(rt.db, board).run(season)  # empty: nothing in PostgreSQL


async def current_of(rt: Runtime, board: Board, season: Season) -> str:
    return str(await rt.redis.get(board.season_keys(season).current))


async def test_a_completion_s_boards_go_in_one_call_as_one_item(rt: Runtime) -> None:
    board = Board(rt.redis, Keys(rt.keys.prefix, "first"), "first", zone="UTC")
    at = datetime(2026, 12, 2, 10, 30, 15, 250_000, tzinfo=UTC)
    evs = [Delta(next(_seq), uid, 3, at + timedelta(minutes=uid),
                 season_of(at, "week", zone="UTC"), PUBLIC) for uid in (1, 2, 3)]
    boards = boards_of(evs, CALENDAR, "UTC")
    seasons = sorted({b.season for b in boards})
    assert len(seasons) == 4 and len(boards) == 12
    await built(rt, board, seasons)
    pending = list(range(len(boards)))
    batches = board._batches(boards, pending)
    assert len(batches) == (4 if board.cluster else 1)  # a cluster: one season a call
    call, _, _ = board._apply_call(boards, batches[0][1])
    assert len(call.items) == len(batches[0][1]) // (1 if board.cluster else 4)
    assert await board.apply(boards) == ["applied"] * 12
    assert await board.apply(boards) == ["duplicate"] * 12
    for name in seasons:
        top = await board.top(name, 10)
        # `first`: who reached the score first ranks first
        assert [(e.user_id, e.score) for e in top.entries] == [(1, 3), (2, 3), (3, 3)], name


async def test_a_completion_s_boards_in_several_calls_share_its_item(
        rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """A completion's boards in several calls (more entries than a call
    takes, or a cluster's one season a call) carry its item as one encoding
    made once an apply: each call's items are each completion's own, and
    every board gets each learner's points and tie time."""
    monkeypatch.setattr("laurels.board.apply.APPLY_BATCH", 5)
    board = Board(rt.redis, Keys(rt.keys.prefix, "first"), "first", zone="UTC")
    at = datetime(2026, 12, 2, 10, 30, tzinfo=UTC)
    evs = [Delta(next(_seq), uid, uid, at + timedelta(minutes=10 - uid),
                 season_of(at, "week", zone="UTC"), PUBLIC) for uid in range(1, 7)]
    boards = boards_of(evs, CALENDAR, "UTC")
    seasons = sorted({b.season for b in boards})
    await built(rt, board, seasons)
    batches = board._batches(boards, list(range(len(boards))))
    assert len(batches) > 4
    encoded: dict[tuple[object, ...], tuple[object, ...]] = {}
    for _, batch in batches:
        call, _, args = board._apply_call(boards, batch, encoded=encoded)
        _, _, fresh_args = board._apply_call(boards, batch)
        assert args == fresh_args
        assert sorted(call.items.values()) == list(range(len({boards[i].seq for i in batch})))
    assert len(encoded) == len(evs)
    assert await board.apply(boards) == ["applied"] * len(boards)
    for name in seasons:
        top = await board.top(name, 10)
        assert [(e.user_id, e.score) for e in top.entries] == [(u, u) for u in range(6, 0, -1)]


async def test_a_stale_season_is_refused_alone(rt: Runtime) -> None:
    """One call, three seasons, the process's belief about the middle one
    wrong: that season answers STALE with its versions and is not written;
    the other two are applied. apply() then sends the refused entries
    again, and only those."""
    board = Board(rt.redis, Keys(rt.keys.prefix, "shared"), "shared", zone="UTC")
    if board.cluster:  # (three seasons' keys are three slots: CROSSSLOT)
        pytest.skip("a cluster sends one season a call (the test above checks it)")
    at = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
    evs = [Delta(next(_seq), uid, uid, at, season_of(at, "week", zone="UTC"), PUBLIC)
           for uid in (1, 2)]
    boards = boards_of(evs, ("week", "day", "all"), "UTC")
    week, day, every = (season_of(at, p, zone="UTC") for p in ("week", "day", "all"))
    await built(rt, board, [week, day, every])
    believed = {s.name: (await current_of(rt, board, s), "") for s in (week, every)}
    believed[day.name] = ("999", "")
    [(_, batch)] = board._batches(boards, list(range(len(boards))))
    assert [boards[i].season for i in batch] == [week, week, day, day, every, every]
    _, keys, args = board._apply_call(boards, batch, believed=believed)
    reply = await board.scripts["apply"](keys=keys, args=args)
    statuses = [reply[1 + 4 * s] for s in range(3)]
    assert statuses == ["OK", "STALE", "OK"]
    assert reply[6] == await current_of(rt, board, day)
    entries = reply[13:]  # (each season's entries in turn)
    assert [int(e) for e in entries] == [1, 1, 0, 0, 1, 1]
    assert (await board.top(day, 10)).entries == []
    for name in (week, every):
        assert [(e.user_id, e.score) for e in (await board.top(name, 10)).entries] == [
            (2, 2), (1, 1)]
    # apply() sends again what a STALE season refused: the day's, once.
    board._versions.update(believed)
    assert await board.apply(boards) == ["duplicate", "applied", "duplicate"] * 2
    assert [(e.user_id, e.score) for e in (await board.top(day, 10)).entries] == [
        (2, 2), (1, 1)]


async def test_a_call_takes_a_season_s_deltas_together(rt: Runtime) -> None:
    """apply.lua reads a call's entries a season at a time: a batch whose
    seasons are interleaved is refused before anything is sent, and
    `_batches` puts each season's deltas together, in their order."""
    board = Board(rt.redis, Keys(rt.keys.prefix, "shared"), "shared", zone="UTC")
    at = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
    evs = [Delta(next(_seq), uid, uid, at, season_of(at, "week", zone="UTC"), PUBLIC)
           for uid in (1, 2, 3)]
    boards = boards_of(evs, ("week", "day"), "UTC")
    with pytest.raises(ValueError, match="a season at a time"):
        board._apply_call(boards, list(range(len(boards))))
    order = [i for _, batch in board._batches(boards, list(range(len(boards))))
             for i in batch]
    assert order == [0, 2, 4, 1, 3, 5]


async def test_a_missing_season_is_missing_alone(rt: Runtime) -> None:
    board = Board(rt.redis, Keys(rt.keys.prefix, "shared"), "shared", zone="UTC")
    at = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
    evs = [Delta(next(_seq), 5, 4, at, season_of(at, "week", zone="UTC"), PUBLIC)]
    boards = boards_of(evs, ("week", "day"), "UTC")
    await built(rt, board, [boards[0].season])  # the day has no board
    assert await board.apply(boards) == ["applied", "missing"]
    assert await rt.redis.exists(board.season_keys(boards[1].season).current) == 0


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/New_York"])
async def test_tie_times_are_the_season_s_own(rt: Runtime, zone: str) -> None:
    """The script computes each entry's tie time from the item's instant and
    its season's start: the same digits as Season.pad_ts, on a week, a day,
    a month and all time (counted from year 1), on a 25-hour day."""
    board = Board(rt.redis, Keys(rt.keys.prefix, "first"), "first", zone=zone)
    # 2026-10-25: Europe's clocks go back (a 25-hour day); late in it, and
    # on the 1st of a month.
    instants = [datetime(2026, 10, 25, 22, 59, 59, 999_999, tzinfo=ZoneInfo(zone)),
                datetime(2026, 11, 1, 0, 0, 0, 1, tzinfo=ZoneInfo(zone)),
                datetime(2026, 12, 2, 9, 8, 7, 654_321, tzinfo=UTC)]
    evs = [Delta(next(_seq), 10 + k, 1, at, season_of(at, "week", zone=zone), PUBLIC)
           for k, at in enumerate(instants)]
    boards = boards_of(evs, CALENDAR, zone)
    seasons = sorted({b.season for b in boards})
    await built(rt, board, seasons)
    assert set(await board.apply(boards)) == {"applied"}
    checked = 0
    for b in boards:
        season = parse_season(b.season.name, zone=zone)
        users = board.season_keys(b.season).version(await current_of(rt, board, b.season)).users
        stored = await rt.redis.hget(users, pad_uid(b.user_id))
        assert stored is not None
        assert stored.split("\t")[2] == season.pad_ts(b.completed_at), b.season
        checked += 1
    assert checked == 12


@pytest.mark.parametrize("policy", ["first", "shared"])
async def test_items_and_entries_cross_as_json_exactly(rt: Runtime, policy: str) -> None:
    """apply.lua takes a call's items and entries as JSON arrays (cjson):
    names with quotes, backslashes, tabs' neighbours in Unicode, astral
    characters and what looks like JSON; the largest ids and seqs a Lua
    number holds exactly; profile versions and points as stored."""
    board = Board(rt.redis, Keys(rt.keys.prefix, policy), policy, zone="UTC")  # type: ignore[arg-type]
    at = datetime(2026, 12, 2, 10, 30, 15, 999_999, tzinfo=UTC)
    season = season_of(at, "week", zone="UTC")
    names = ['say "hi" \\o/', "Zoë Ångström", "🏆 top", '{"a": [1, 2]}', "",
             "\u200b".join("ab"), "ünï\u00a0cödé"]
    big = 2**53 - 1  # the largest integer a Lua number (a double) holds exactly
    uids = [1, 2, 3, 4, 5, 9_007_199_254_740_000, big]
    await built(rt, board, [season])
    deltas = [Delta(big - 1 if k == len(names) - 1 else next(_seq), uid, 7 + k,
                    at - timedelta(hours=k), season,
                    Profile(10**15 + k, "public", name))
              for k, (uid, name) in enumerate(zip(uids, names, strict=True))]
    assert await board.apply(deltas) == ["applied"] * len(deltas)
    assert await board.apply(deltas) == ["duplicate"] * len(deltas)
    top = await board.top(season, 10)
    got = {e.user_id: (e.display_name, e.score) for e in top.entries}
    for k, (uid, name) in enumerate(zip(uids, names, strict=True)):
        assert got[uid] == (name or f"Learner {uid}", 7 + k), (uid, name)
    stored = await rt.redis.hget(board.season_keys(season).version(
        await current_of(rt, board, season)).users, pad_uid(big))
    version, _, _, name = stored.split("\t", 3)
    assert (version, name) == (str(10**15 + len(names) - 1), names[-1])


async def test_a_board_of_a_kind_s_bits_are_setbit_s_bitmaps(rt: Runtime) -> None:
    """A board of a kind keeps its idempotency bits in one hash, a field
    per chunk of 256 seqs that apply.lua holds as bytes while a call sets
    bits: out of order, past the field's end, across calls, each field is
    the bitmap SETBIT would make, and a seq applied in an earlier call is a
    duplicate in a later one."""
    board = Board(rt.redis, Keys(rt.keys.prefix, "shared"), "shared", zone="UTC")
    at = datetime(2026, 12, 2, 10, 30, tzinfo=UTC)
    name = season_of(at, "week", zone="UTC").on("course:python-101", "points")
    await built(rt, board, [name])

    def deltas(seqs: list[int]) -> list[Delta]:
        return [Delta(s, 1 + s % 7, 2, at, name, PUBLIC) for s in seqs]

    first, second = [1024 + 200, 1024 + 3, 255, 17, 1024 + 255], [1024 + 3, 100, 17, 0, 2048]
    assert await board.apply(deltas(first)) == ["applied"] * 5
    assert await board.apply(deltas(second)) == [
        "duplicate", "applied", "duplicate", "applied", "applied"]
    expected: dict[int, bytearray] = {}
    for seq in {*first, *second}:
        chunk, offset = seq >> 8, seq & 255
        bitmap = expected.setdefault(chunk, bytearray())
        if len(bitmap) <= offset // 8:
            bitmap.extend(bytes(offset // 8 + 1 - len(bitmap)))
        bitmap[offset // 8] |= 0x80 >> (offset % 8)
    bits_key = board.season_keys(name).version(await current_of(rt, board, name)).bits
    raw = await rt.redis.execute_command(  # type: ignore[no-untyped-call]
        "HGETALL", bits_key, **{NEVER_DECODE: []})
    got = dict(zip(raw[::2], raw[1::2], strict=True)) if isinstance(raw, list) else raw
    assert {int(k): v for k, v in got.items()} == {c: bytes(b) for c, b in expected.items()}
    # and the applied seqs are the ones the board says it holds (inspection)
    current = await current_of(rt, board, name)
    everything = sorted({*first, *second, 1, 2, 99, 1500, 2047})
    assert await board.missing(name, current, everything) == [1, 2, 99, 1500, 2047]
