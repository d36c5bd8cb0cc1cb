"""What the fast tier's tests make: completions on a week's boards, and a
board in memory (board/memory.py) whose seasons exist."""

from __future__ import annotations

import itertools
from datetime import timedelta

from laurels.board import Delta, Profile, Top
from laurels.board.memory import MemoryBoard
from laurels.core.ranking import TiePolicy
from laurels.core.seasons import Season, week

WEEK = week(2026, 49)
START = WEEK.starts_at
PUBLIC = Profile(0, "public", "")
_seqs = itertools.count(1)


def ev(uid: int, points: int, minutes: int = 0, profile: Profile = PUBLIC,
       season: Season = WEEK, seq: int | None = None) -> Delta:
    """A completion of learner `uid`, `minutes` into the week."""
    return Delta.recorded(seq or next(_seqs), uid, points, START + timedelta(minutes=minutes),
                          season, profile)


def board_of(policy: TiePolicy, *seasons: Season) -> MemoryBoard:
    """A board in memory with these seasons' boards (the week's by default)."""
    board = MemoryBoard(policy)
    for season in seasons or (WEEK,):
        board.create(season)
    return board


def ranked(top: Top) -> list[tuple[int, int, int]]:
    """(rank, user id, score) of a top's entries."""
    return [(e.rank, e.user_id, e.score) for e in top.entries]
