"""Tie policies and sorted-set member encoding (docs/contract.md, Ranking)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laurels.core.ranking import (
    TS_WIDTH,
    UID_WIDTH,
    USER_ID_MAX,
    Standing,
    assign_ranks,
    member_uid,
    pad_ts,
    pad_uid,
    rank_all,
    sort_key,
)
from tests import deadlines

pytestmark = pytest.mark.once

WEEK_US = 7 * 86400 * 1_000_000

uids = st.integers(min_value=1, max_value=USER_ID_MAX)
offsets = st.integers(min_value=0, max_value=WEEK_US - 1)


# --- assign_ranks ------------------------------------------------------------

def test_shared_ranks_skip_after_a_tie() -> None:
    assert assign_ranks([10, 10, 10, 9], 1, 0, "shared") == [1, 1, 1, 4]


def test_first_ranks_are_unique() -> None:
    assert assign_ranks([10, 10, 10, 9], 1, 0, "first") == [1, 2, 3, 4]


def test_shared_more_patterns() -> None:
    assert assign_ranks([5, 4, 4, 3, 3, 3, 1], 1, 0, "shared") == [1, 2, 2, 4, 4, 4, 7]
    assert assign_ranks([7, 7], 1, 0, "shared") == [1, 1]
    assert assign_ranks([], 1, 0, "shared") == []
    assert assign_ranks([], 1, 0, "first") == []


def test_shared_slice_starting_inside_a_tie() -> None:
    # Full board [10, 10, 10, 9, 9, 8]; slice from index 2 -> [10, 9, 9, 8].
    # Its first entry shares rank 1 (nobody is strictly better).
    assert assign_ranks([10, 9, 9, 8], 1, 2, "shared") == [1, 4, 4, 6]


def test_shared_slice_starting_after_a_tie() -> None:
    # Full board [10, 10, 10, 9, 9, 8]; slice from index 4 -> [9, 8]; 3 are better.
    assert assign_ranks([9, 8], 4, 4, "shared") == [4, 6]


def test_first_slice_mid_board_ignores_first_rank() -> None:
    assert assign_ranks([10, 9, 9, 8], 3, 2, "first") == [3, 4, 5, 6]
    assert assign_ranks([10, 9], 999, 10, "first") == [11, 12]


@pytest.mark.parametrize("policy", ["shared", "first"])
def test_slices_agree_with_the_whole_board(policy: str) -> None:
    board = [50, 50, 40, 40, 40, 30, 20, 20, 10, 10, 10, 10]
    whole = assign_ranks(board, 1, 0, policy)  # type: ignore[arg-type]
    for start in range(len(board)):
        for end in range(start, len(board) + 1):
            first_rank = 1 + sum(1 for s in board if s > board[start]) if policy == "shared" \
                else start + 1
            got = assign_ranks(board[start:end], first_rank, start, policy)  # type: ignore[arg-type]
            assert got == whole[start:end], (start, end)


# --- rank_all ----------------------------------------------------------------

def test_rank_all_shared_orders_ties_by_user_id() -> None:
    board = [Standing(30, 10, 5), Standing(7, 9, 1), Standing(12, 10, 1), Standing(2, 10, 900)]
    ranked = rank_all(board, "shared")
    assert [(r, s.user_id, s.score) for r, s in ranked] == [
        (1, 2, 10), (1, 12, 10), (1, 30, 10), (4, 7, 9)]


def test_rank_all_first_earlier_latest_completion_wins() -> None:
    board = [Standing(1, 10, 500), Standing(2, 10, 100), Standing(3, 10, 100),
             Standing(4, 9, 0), Standing(5, 11, 10**11)]
    ranked = rank_all(board, "first")
    assert [(r, s.user_id) for r, s in ranked] == [(1, 5), (2, 2), (3, 3), (4, 1), (5, 4)]


def test_rank_all_first_ignores_user_id_when_times_differ() -> None:
    board = [Standing(1, 10, 2), Standing(99, 10, 1)]
    assert [s.user_id for _, s in rank_all(board, "first")] == [99, 1]
    # ...while shared ignores the time entirely.
    assert [s.user_id for _, s in rank_all(board, "shared")] == [1, 99]
    assert [r for r, _ in rank_all(board, "shared")] == [1, 1]


def test_rank_all_empty() -> None:
    assert rank_all([], "shared") == []
    assert rank_all([], "first") == []


def test_rank_all_accepts_any_iterable() -> None:
    ranked = rank_all(iter([Standing(1, 3), Standing(2, 4)]), "shared")
    assert [(r, s.user_id) for r, s in ranked] == [(1, 2), (2, 1)]


def test_sort_key() -> None:
    a = Standing(5, 10, 3)
    assert sort_key(a, "first") == (-10, 3, 5)
    assert sort_key(a, "shared") == (-10, 0, 5)


standings = st.lists(
    st.tuples(uids, st.integers(min_value=1, max_value=50), offsets),
    max_size=30, unique_by=lambda t: t[0],
).map(lambda ts: [Standing(u, s, o) for u, s, o in ts])


@settings(max_examples=150, deadline=deadlines.PURE)
@given(board=standings, policy=st.sampled_from(["shared", "first"]), seed=st.integers())
def test_rank_all_does_not_depend_on_input_order(board: list[Standing], policy: str,
                                                 seed: int) -> None:
    shuffled = list(board)
    random.Random(seed).shuffle(shuffled)
    assert rank_all(shuffled, policy) == rank_all(board, policy)  # type: ignore[arg-type]
    assert rank_all(reversed(board), policy) == rank_all(board, policy)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=deadlines.PURE)
@given(board=standings, policy=st.sampled_from(["shared", "first"]))
def test_rank_all_invariants(board: list[Standing], policy: str) -> None:
    ranked = rank_all(board, policy)  # type: ignore[arg-type]
    assert sorted(s.user_id for _, s in ranked) == sorted(s.user_id for s in board)
    for i, (rank, s) in enumerate(ranked):
        better = sum(1 for o in board if o.score > s.score)
        if policy == "shared":
            assert rank == better + 1
        else:
            assert rank == i + 1
    scores = [s.score for _, s in ranked]
    assert scores == sorted(scores, reverse=True)


# --- member encoding ---------------------------------------------------------

@pytest.mark.parametrize("uid", [1, 42, 10**18, USER_ID_MAX])
def test_pad_uid_roundtrip(uid: int) -> None:
    m = pad_uid(uid)
    assert len(m) == UID_WIDTH == 19
    assert m.isdigit()
    assert member_uid(m) == uid


def test_pad_uid_max_is_exactly_19_digits() -> None:
    assert pad_uid(USER_ID_MAX) == "9223372036854775807"
    assert pad_uid(1) == "0000000000000000001"


@pytest.mark.parametrize("ts", [0, 1, WEEK_US - 1])
def test_pad_ts_width(ts: int) -> None:
    assert len(pad_ts(ts)) == TS_WIDTH == 12
    assert int(pad_ts(ts)) == ts


def test_first_policy_member_roundtrip() -> None:
    for ts, uid in [(0, 1), (WEEK_US - 1, USER_ID_MAX), (123456, 42)]:
        m = pad_ts(ts) + pad_uid(uid)
        assert len(m) == TS_WIDTH + UID_WIDTH
        assert member_uid(m) == uid
        assert int(m[:TS_WIDTH]) == ts


@settings(deadline=deadlines.PURE)
@given(uid=uids, ts=offsets)
def test_member_roundtrip_property(uid: int, ts: int) -> None:
    assert member_uid(pad_uid(uid)) == uid
    assert member_uid(pad_ts(ts) + pad_uid(uid)) == uid


def _member(s: Standing, policy: str) -> str:
    return pad_ts(s.last_offset_us) + pad_uid(s.user_id) if policy == "first" \
        else pad_uid(s.user_id)


@settings(max_examples=200, deadline=deadlines.PURE)
@given(
    entries=st.lists(st.tuples(uids, offsets), min_size=1, max_size=25, unique_by=lambda t: t[0]),
    policy=st.sampled_from(["shared", "first"]),
    score=st.integers(min_value=1, max_value=10**9),
)
def test_member_lexicographic_order_matches_tie_order(entries: list[tuple[int, int]],
                                                      policy: str, score: int) -> None:
    board = [Standing(u, score, o) for u, o in entries]
    by_member = sorted(board, key=lambda s: _member(s, policy))
    by_key = sorted(board, key=lambda s: sort_key(s, policy))  # type: ignore[arg-type]
    assert [s.user_id for s in by_member] == [s.user_id for s in by_key]


def test_member_order_examples() -> None:
    # Numeric order 9 < 10 must survive as string order.
    assert pad_uid(9) < pad_uid(10) < pad_uid(USER_ID_MAX)
    assert pad_ts(9) + pad_uid(USER_ID_MAX) < pad_ts(10) + pad_uid(1)
    assert pad_ts(5) + pad_uid(2) < pad_ts(5) + pad_uid(11)
