"""Delta's fast constructors build what its own constructor builds."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, fields
from datetime import UTC, datetime

import pytest

from laurels.board.values import Delta, Profile


def test_recorded_is_the_constructor_s_delta() -> None:
    at = datetime(2026, 12, 2, 10, 30, 15, 250_000, tzinfo=UTC)
    profile = Profile(3, "anonymous", "Zoë")
    fast = Delta.recorded(41, 7, 5, at, "2026-W49", profile, ("course:python-101",))
    slow = Delta(41, 7, 5, at, "2026-W49", profile, tags=("course:python-101",))
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert [getattr(fast, f.name) for f in fields(Delta)] == \
        [getattr(slow, f.name) for f in fields(Delta)]
    assert Delta.recorded(1, 2, 3, at, "2026-W49", profile).tags == ()
    with pytest.raises(FrozenInstanceError):
        fast.points = 6  # type: ignore[misc]
    # on a board of a kind: the copy differs only where it says
    board = fast.on_board("course:python-101/points/UTC/2026-W49", 5, True)
    assert (board.season, board.notify) == ("course:python-101/points/UTC/2026-W49", True)
    assert fast.season == "2026-W49" and not fast.notify
