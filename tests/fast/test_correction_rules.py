"""Corrections and erasure on the board in memory, no store: the newest
correction wins and a re-delivered one changes nothing; on a `best` board
a void falls back to the next best (guarded by the learner's mark, as the
projector reads it); an erased learner never shows again, whatever is
applied, projected or built after."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from laurels.board import Delta, Profile
from laurels.board.memory import MemoryBoard
from laurels.core.ranking import TiePolicy
from tests.fast.deltas import START, WEEK, board_of, ev, ranked

pytestmark = pytest.mark.once

BEST = WEEK.on("course:sql", "best")
UNTIL = datetime(2027, 3, 1, tzinfo=UTC)


def void(d: Delta, number: int, reset: Delta | None = None, token: str = "") -> Delta:
    """A void of `d`, falling back to `reset` (the next best, as PostgreSQL has it)."""
    return d._replace(correction=number, counted=False, tie_token=token,
                      reset_at=reset.completed_at if reset else None,
                      reset_score=reset.points if reset else None)


def restore(d: Delta, number: int) -> Delta:
    return d._replace(correction=number, counted=True)


async def marked_void(board: MemoryBoard, d: Delta, number: int, reset: Delta | None
                      ) -> Delta:
    """A void as the projector applies it: under `first` and on `best`, its
    learner marked before the fallback is read."""
    if board.policy == "shared" and d.season.metric != "best":
        return void(d, number, reset)
    (token,) = await board.mark_ties(d.season, [d.user_id])
    return void(d, number, reset, token)


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_a_void_on_best_falls_back_to_the_next_best(policy: TiePolicy) -> None:
    board = board_of(policy, BEST)
    a5, a9, a7 = ev(1, 5, 60, season=BEST), ev(1, 9, 120, season=BEST), ev(1, 7, 180, season=BEST)
    await board.apply([a5, a9, a7, ev(2, 8, 30, season=BEST)])
    assert ranked(await board.top(BEST, 10)) == [(1, 1, 9), (2, 2, 8)]
    assert await board.apply([await marked_void(board, a9, 1, a7)]) == ["applied"]
    assert ranked(await board.top(BEST, 10)) == [(1, 2, 8), (2, 1, 7)]  # not 9 - 9
    assert (await board.scores(BEST, [1]))[1][0] == 7
    assert await board.apply([restore(a9, 2)]) == ["applied"]
    assert ranked(await board.top(BEST, 10)) == [(1, 1, 9), (2, 2, 8)]
    # Nothing left that counts: off the board.
    await board.apply([await marked_void(board, a9, 3, a7)])
    await board.apply([await marked_void(board, a7, 1, a5)])
    await board.apply([await marked_void(board, a5, 1, None)])
    assert ranked(await board.top(BEST, 10)) == [(1, 2, 8)]
    assert await board.around(BEST, 1, 1) is None


async def test_a_void_read_before_an_apply_of_its_learner_is_read_again() -> None:
    """apply.lua, "Ties": an apply between the mark and the void makes the
    void's fallback stale: "retry", nothing changed; marked again, it goes."""
    board = board_of("first", BEST)
    a9, a4 = ev(1, 9, 10, season=BEST), ev(1, 4, 20, season=BEST)
    await board.apply([a9, a4])
    stale = await marked_void(board, a9, 1, a4)
    late = ev(1, 6, 30, season=BEST)
    assert await board.apply([late]) == ["applied"]
    assert await board.apply([stale]) == ["retry"]
    assert ranked(await board.top(BEST, 10)) == [(1, 1, 9)]
    assert await board.apply([await marked_void(board, a9, 1, late)]) == ["applied"]
    assert ranked(await board.top(BEST, 10)) == [(1, 1, 6)]


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_the_newest_correction_wins_and_is_applied_once(policy: TiePolicy) -> None:
    board = board_of(policy)
    kept, corrected = ev(1, 3, 10), ev(1, 5, 20)
    await board.apply([kept, corrected])
    voiding = await marked_void(board, corrected, 1, kept)
    assert await board.apply([voiding]) == ["applied"]
    assert ranked(await board.top(WEEK, 10)) == [(1, 1, 3)]
    # Re-delivered: under `first` its own apply moved the mark on (read again).
    assert await board.apply([voiding]) == ["retry" if policy == "first" else "duplicate"]
    assert await board.apply([await marked_void(board, corrected, 1, kept)]) == ["duplicate"]
    assert await board.apply([restore(corrected, 2)]) == ["applied"]
    late = await marked_void(board, corrected, 1, kept)  # an older state, re-delivered
    assert await board.apply([late, restore(corrected, 2), corrected]) == ["duplicate"] * 3
    assert ranked(await board.top(WEEK, 10)) == [(1, 1, 8)]
    tie = (await board.scores(WEEK, [1]))[1][3]
    assert tie == (WEEK.offset_us(START + timedelta(minutes=20)) if policy == "first"
                   else None)  # (`shared` keeps no tie time for a default profile)


async def test_a_void_reaching_the_board_first_makes_its_completion_a_duplicate() -> None:
    board = board_of("shared")
    early = ev(4, 7)
    assert await board.apply([void(early, 1)]) == ["applied"]
    assert await board.apply([early]) == ["duplicate"]
    assert await board.top(WEEK, 10) == await board_of("shared").top(WEEK, 10)


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_an_erased_learner_never_shows_again(policy: TiePolicy) -> None:
    board = board_of(policy)
    await board.apply([ev(1, 9, profile=Profile(1, "public", "Ada")), ev(2, 4)])
    assert await board.erase(WEEK, 1, UNTIL)
    assert ranked(await board.top(WEEK, 10)) == [(1, 2, 4)]
    late = ev(1, 20)  # in flight when the erasure committed
    assert await board.apply([late]) == ["duplicate"]
    assert await board.set_profile(WEEK, 1, Profile(2, "public", "Ada again"))
    erased, kept = await board.mark_ties(WEEK, [1, 2])
    assert erased == "" and kept != ""  # (no key may name them again)
    assert ranked(await board.top(WEEK, 10)) == [(1, 2, 4)]
    assert await board.around(WEEK, 1, 2) is None
    assert await board.standings_of(WEEK, [1, 2]) == await board.standings_of(WEEK, [2])
    assert (await board.scores(WEEK, [1]))[1] == (None, "public", "", None)
    assert [u for batch in [b async for b in board.scan_scored(WEEK)] for u in batch] == [2]
    # A rebuild (from standings that still name them) keeps them off too.
    board.create(WEEK, [(1, 9, START, 1, "public", "Ada"), (2, 4, START, 0, "public", "")])
    assert ranked(await board.top(WEEK, 10)) == [(1, 2, 4)]
    assert [s.user_id for s in await board.standings_of(WEEK, [1, 2])] == [2]
    assert await board.apply([late._replace(seq=99)]) == ["duplicate"]


async def test_an_erasure_before_the_board_is_made_keeps_them_off_it() -> None:
    board = MemoryBoard("shared")
    assert await board.erase(WEEK, 1, UNTIL) is False  # no board, the tombstone all the same
    board.create(WEEK)
    assert await board.apply([ev(1, 5), ev(2, 1)]) == ["duplicate", "applied"]
    assert ranked(await board.top(WEEK, 10)) == [(1, 2, 1)]
    assert board.erased(WEEK) == {1}
