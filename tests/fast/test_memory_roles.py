"""The board in memory plays the roles services take (board/roles.py) with
the Board's own signatures, and is a board only once made: an apply to a
season without one answers "missing", a read raises BoardMissing."""

from __future__ import annotations

import asyncio
import inspect
from datetime import UTC, datetime

import pytest

from laurels.board import Board, BoardMissing
from laurels.board import roles as roles_module
from laurels.board.memory import MemoryBoard
from laurels.core.seasons import Season
from laurels.projection.heal import Healer
from tests.fast.deltas import WEEK, board_of, ev, ranked

pytestmark = pytest.mark.once

PLAYED = ["Hinting", "GroupHinting", "Applier", "Reader", "MemberReader", "Profiles",
          "Keeper", "Presence", "Scanner"]


def test_it_plays_its_roles_with_the_boards_signatures() -> None:
    for name in PLAYED:
        role = getattr(roles_module, name)
        members = [m for m, v in vars(role).items() if not m.startswith("_") and callable(v)]
        assert members, name
        for member in members:
            ours = inspect.signature(getattr(MemoryBoard, member))
            theirs = inspect.signature(inspect.unwrap(getattr(Board, member)))
            assert list(ours.parameters) == list(theirs.parameters), f"{name}.{member}"
            assert inspect.iscoroutinefunction(getattr(MemoryBoard, member)) == \
                inspect.iscoroutinefunction(inspect.unwrap(getattr(Board, member))), member


async def test_a_season_without_a_board_is_missing_until_made() -> None:
    board = MemoryBoard("shared")
    late = ev(1, 5)
    assert await board.apply([late]) == ["missing"]
    assert not await board.present(WEEK)
    with pytest.raises(BoardMissing):
        await board.top(WEEK, 10)
    with pytest.raises(BoardMissing):
        await board.scores(WEEK, [1])
    assert await board.set_profile(WEEK, 1, late.profile) is False
    assert board.hints == []
    waiting = asyncio.create_task(board.wait_present(WEEK, 5))
    await asyncio.sleep(0)
    board.create(WEEK)
    assert await waiting
    assert await board.apply([late]) == ["applied"]  # nothing was written before
    assert ranked(await board.top(WEEK, 10)) == [(1, 1, 5)]
    assert await board.wait_present(WEEK.next(), 0) is False
    board.drop(WEEK)  # lost: missing again, until built again
    assert await board.apply([ev(2, 1)]) == ["missing"]
    assert not await board.present(WEEK)


async def test_a_build_counts_its_learners_and_their_completions_once() -> None:
    """`create` as a rebuild leaves a board: the standings of its snapshot,
    and the completions they hold marked applied."""
    board = MemoryBoard("first")
    counted, later = ev(1, 4, 10), ev(1, 2, 30)
    tie = WEEK.offset_us(counted.completed_at)
    assert board.create(WEEK, [(1, 4, tie, 0, "public", ""), (2, 6, counted.completed_at, 1,
                                                              "anonymous", "Bo")],
                        applied=[counted.seq]) == 2
    assert await board.apply([counted, later]) == ["duplicate", "applied"]
    top = await board.top(WEEK, 10)
    assert [(e.rank, e.user_id, e.score, e.visibility) for e in top.entries] == [
        (1, 2, 6, "anonymous"), (2, 1, 6, "public")]  # a tie: 2's latest, minute 10, first
    assert (await board.scores(WEEK, [1]))[1][3] == WEEK.offset_us(later.completed_at)


class Builds:
    """A rebuilder that makes the board in memory (what a build leaves)."""

    def __init__(self, board: MemoryBoard) -> None:
        self.board = board
        self.built: list[str] = []

    async def run(self, season: Season) -> None:
        self.built.append(season.name)
        self.board.create(season)


async def test_the_healer_rebuilds_a_missing_board_once() -> None:
    """A service on the role it takes (heal.Healer on Presence): a missing
    board is rebuilt, a present one is not, and an apply then counts."""
    board = MemoryBoard("first")
    builds = Builds(board)
    healer = Healer(board, builds, zone="UTC")  # type: ignore[arg-type]  # run() alone
    assert await board.apply([ev(1, 3)]) == ["missing"]
    assert await healer.heal({WEEK}, 1)
    assert await healer.heal({WEEK}, 1)
    assert builds.built == [WEEK.name]
    assert await board.apply([ev(1, 3)]) == ["applied"]


async def test_expiry_and_rewrites_are_recorded_never_run() -> None:
    board = board_of("shared")
    at = datetime(2027, 1, 1, tzinfo=UTC)
    assert await board.apply([ev(1, 2)]) == ["applied"]
    assert await board.expire_many({WEEK: at, WEEK.next(): at}) == 1  # one holds a board
    assert board.expiries == {WEEK.name: at, WEEK.next().name: at}
    assert await board.rewrite_files() and board.rewrites == 1
    assert ranked(await board.top(WEEK, 10)) == [(1, 1, 2)]  # still there: never expired
