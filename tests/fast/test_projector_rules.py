"""The projector's rules on the board in memory, no store: each completion
on every board it counts on (`boards_of`: the periods', its tags' by their
kinds' metrics), applied exactly once whatever is delivered again."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from laurels.board import Delta
from laurels.core.seasons import parse_season
from laurels.lifecycle.kind_rules import BoardKind, tagged_boards
from laurels.projection.projector import Projector, boards_of
from tests.fast.deltas import PUBLIC, START, WEEK, board_of, ev, ranked

pytestmark = pytest.mark.once

CREATED = datetime(2026, 1, 1, tzinfo=UTC)
KINDS = {"course": BoardKind("course", "Course", "best", ("week",), "UTC", False, CREATED),
         "track": BoardKind("track", "Track", "completions", ("week",), "UTC", False, CREATED)}
ALL = parse_season("all", zone="UTC")
SQL = WEEK.on("course:sql", "best")
DATA = WEEK.on("track:data", "completions")


def completions() -> list[Delta]:
    return [Delta.recorded(1, 7, 5, START, WEEK, PUBLIC, tags=("course:sql",)),
            Delta.recorded(2, 7, 3, START, WEEK, PUBLIC, tags=("course:sql", "track:data")),
            Delta.recorded(3, 8, 4, START, WEEK, PUBLIC)]


def projector(board: object) -> Projector:
    # (applying recorded completions needs neither PostgreSQL nor a heal)
    return Projector(None, board, None, None, ("week", "all"))  # type: ignore[arg-type]


def every_board(deltas: list[Delta]) -> list[Delta]:
    return boards_of(deltas, ("week", "all"), "UTC", tagged_boards(deltas, KINDS))


async def test_a_batch_applied_twice_counts_once_on_each_of_its_boards() -> None:
    boards = every_board(completions())
    assert [(d.seq, d.season.name, d.points) for d in boards] == [
        (1, "2026-W49", 5), (1, "all", 5), (1, SQL.name, 5),
        (2, "2026-W49", 3), (2, "all", 3), (2, SQL.name, 3), (2, DATA.name, 1),
        (3, "2026-W49", 4), (3, "all", 4)]
    board = board_of("shared", WEEK, ALL, SQL, DATA)
    projector_ = projector(board)
    assert await projector_.apply(boards) == ["applied"] * 9
    assert await projector_.apply(boards) == ["duplicate"] * 9
    # re-delivered within one batch too: the first copy counts, the second not
    assert await projector_.apply([*every_board([ev(9, 2, seq=50)])] * 2) == [
        "applied", "applied", "duplicate", "duplicate"]
    assert ranked(await board.top(WEEK, 10)) == [(1, 7, 8), (2, 8, 4), (3, 9, 2)]
    assert ranked(await board.top(ALL, 10)) == [(1, 7, 8), (2, 8, 4), (3, 9, 2)]
    assert ranked(await board.top(SQL, 10)) == [(1, 7, 5)]  # best: the higher, once
    assert ranked(await board.top(DATA, 10)) == [(1, 7, 1)]  # completions: one
    # the first apply's hints, a season each, naming the learners who changed
    assert board.hints[:4] == [{"season": "2026-W49", "routes": [7, 8]},
                               {"season": "all", "routes": [7, 8]},
                               {"season": SQL.name, "user_id": 7, "routes": [7]},
                               {"season": DATA.name, "user_id": 7, "routes": [7]}]
    assert len(board.hints) == 6  # a duplicate changes nothing: no hint


async def test_a_board_not_built_answers_missing_and_keeps_nothing() -> None:
    """The all-time board is not there: its deltas answer "missing" (the
    projector then heals it), the others count."""
    board = board_of("first", WEEK, SQL, DATA)
    results = await projector(board).apply(every_board(completions()))
    assert results == ["applied", "missing", "applied"] * 2 + ["applied", "applied", "missing"]
    assert not await board.present(ALL)
    board.create(ALL)
    assert ranked(await board.top(ALL, 10)) == []  # nothing was written before it was made
