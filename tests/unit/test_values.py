"""Delta's fast constructors and copies build what its own constructor and
`_replace` build."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laurels.board.lua_args import json_list
from laurels.board.values import Delta, Profile
from laurels.core.seasons import PERIODS, WINDOW_DAYS, Period, parse_season, season_of, week
from laurels.core.spans import part_period
from laurels.projection.projector import boards_of
from tests import deadlines

W49 = week(2026, 49)


def test_recorded_is_the_constructor_s_delta() -> None:
    at = datetime(2026, 12, 2, 10, 30, 15, 250_000, tzinfo=UTC)
    profile = Profile(3, "anonymous", "Zoë")
    fast = Delta.recorded(41, 7, 5, at, W49, profile, ("course:python-101",))
    slow = Delta(41, 7, 5, at, W49, profile, tags=("course:python-101",))
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert [getattr(fast, name) for name in Delta._fields] == \
        [getattr(slow, name) for name in Delta._fields]
    assert type(fast) is Delta and Delta.recorded(1, 2, 3, at, W49, profile).tags == ()
    with pytest.raises(AttributeError):
        fast.points = 6  # type: ignore[misc]
    # on a board of a kind: the copy differs only where it says
    on_course = parse_season("course:python-101/points/UTC/2026-W49", zone="UTC")
    board = fast.on_board(on_course, 5, True)
    assert (board.season, board.notify) == (on_course, True)
    assert board.season.name == "course:python-101/points/UTC/2026-W49"
    assert fast.season == W49 and fast.season.name == "2026-W49" and not fast.notify


def test_on_board_is_replace_for_every_field() -> None:
    """A copy on another board keeps every field of a correction (its
    number, whether it counts, its fallbacks, its token, its tags) and
    changes the four it is given: field by field, as `_replace` does."""
    at = datetime(2026, 12, 2, 10, 30, tzinfo=UTC)
    void = Delta(9, 4, 7, at, W49, Profile(2, "hidden", "Ana"), correction=3,
                 counted=False, reset_at=at - timedelta(hours=1), reset_score=4,
                 tie_token="t-1", part="2026-W48", tags=("track:data", "skill:sql"),
                 notify=True)
    track_all = parse_season("track:data/points/UTC/all", zone="UTC")
    copy = void.on_board(track_all, 2, False, "track:data/points/UTC/2026-W49")
    assert type(copy) is Delta
    assert copy == void._replace(season=track_all, points=2, notify=False,
                                 part="track:data/points/UTC/2026-W49")
    assert void.on_board(W49, 7, True, "2026-W48") == void


@settings(max_examples=200, deadline=deadlines.PURE)
@given(offsets=st.lists(st.integers(0, 3 * 366 * 86_400), min_size=1, max_size=30),
       zone=st.sampled_from(["UTC", "Europe/Paris", "America/New_York", "Asia/Kathmandu"]),
       periods=st.sampled_from([("week", "day"), ("week", "month"), ("week", "all"), ("week", "7d"),
                                PERIODS]))
def test_boards_of_is_each_period_s_season_and_part(offsets: list[int], zone: str,
                                                    periods: tuple[Period, ...]) -> None:
    """boards_of keeps the last season of each period for the batch: each
    completion still gets the season (and the part) that holds it, as
    season_of finds them one by one, across daylight saving's days."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    profile = Profile(0, "public", "")
    deltas = []
    for k, off in enumerate(sorted(offsets) if len(offsets) % 2 else offsets):
        at = start + timedelta(seconds=off, microseconds=k)
        deltas.append(Delta.recorded(k + 1, k + 1, 3, at,
                                     season_of(at, "week", zone=zone), profile))
    expected = []
    for d in deltas:
        expected.append(d)
        for p in periods[1:]:
            part = "day" if p in WINDOW_DAYS else part_period(p, periods)
            expected.append(d._replace(season=season_of(d.completed_at, p, zone=zone),
                                       part=season_of(d.completed_at, part, zone=zone).name
                                       if part else ""))
    assert boards_of(deltas, periods, zone) == expected


def test_a_script_s_json_list_refuses_none_and_keeps_null_in_names() -> None:
    """apply.lua's items and entries cross as JSON: None is refused before
    the call (as redis-py refuses it as an argument), a name that reads
    `null` is a name."""
    assert orjson.loads(json_list([1, "null", ",null,", "a null b"])) == \
        [1, "null", ",null,", "a null b"]
    for values in ([1, None, "x"], [None], ["null", None]):
        with pytest.raises(ValueError, match="None"):
            json_list(values)
