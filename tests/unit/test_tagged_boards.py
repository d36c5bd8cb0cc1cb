"""tagged_boards keeps each tag's boards for the seasons last found; whatever
the order of a batch's instants (across days, weeks and months, across
daylight saving in several zones), it puts each completion on exactly the
boards a season_of of each of its tags' periods names, as it did when it
looked every one up; board_seasons names the same seasons."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from laurels.board import Delta, Profile
from laurels.core.seasons import season_of, week
from laurels.lifecycle.kind_rules import BoardKind, board_seasons, score_of, tagged_boards
from tests import deadlines

CREATED = datetime(2026, 1, 1, tzinfo=UTC)
KINDS = {
    "course": BoardKind("course", "Course", "points", ("week", "all"), "UTC", False, CREATED),
    "track": BoardKind("track", "Track", "completions", ("week", "day"), "Europe/Paris", True,
                       CREATED),
    "skill": BoardKind("skill", "Skill", "best", ("week", "month", "all"), "America/New_York",
                       False, CREATED),
}
TAGS = ["course:a", "course:b", "track:t", "skill:s", "topic:undefined"]
# Instants near the edges that matter: a month's and a week's end, a day's
# within a week (Paris, Wednesday to Thursday) and a month's within a week
# (New York, September to October), and the nights the clocks change in
# Paris (2026-03-29, 2026-10-25) and New York (2026-03-08, 2026-11-01).
EDGES = [datetime(2026, 3, 8, 7, tzinfo=UTC), datetime(2026, 3, 29, 1, tzinfo=UTC),
         datetime(2026, 5, 31, 22, tzinfo=UTC), datetime(2026, 10, 1, 4, tzinfo=UTC),
         datetime(2026, 10, 25, 1, tzinfo=UTC), datetime(2026, 11, 1, 6, tzinfo=UTC),
         datetime(2026, 11, 25, 23, tzinfo=UTC), datetime(2026, 11, 29, 23, tzinfo=UTC)]


def looked_up(d: Delta) -> list[tuple[str, int, bool, str]]:
    """Each board of `d`, every season found afresh (the reference)."""
    out = []
    for tag in d.tags:
        kind = KINDS.get(tag.partition(":")[0])
        if kind is None:
            continue
        week = ""
        for period in kind.periods:
            name = season_of(d.completed_at, period, zone=kind.time_zone).on(
                tag, kind.metric).name
            out.append((name, score_of(kind.metric, d.points), kind.notify and period == "week",
                        week if period == "all" else ""))
            if period == "week":
                week = name
    return out


@settings(max_examples=200, deadline=deadlines.PURE)
@given(st.lists(st.tuples(st.sampled_from(EDGES), st.integers(-7_200, 7_200),
                          st.lists(st.sampled_from(TAGS), unique=True, max_size=4),
                          st.integers(1, 9)), min_size=1, max_size=30))
def test_each_completion_is_on_the_boards_its_tags_name(
        batch: list[tuple[datetime, int, list[str], int]]) -> None:
    deltas = [Delta.recorded(seq, 7, points, edge + timedelta(seconds=shift), week(2026, 1),
                             Profile(0, "public", ""), tuple(sorted(tags)))
              for seq, (edge, shift, tags, points) in enumerate(batch, 1)]
    got = tagged_boards(deltas, KINDS)
    assert [[(b.season.name, b.points, b.notify, b.part) for b in on] for on in got] == [
        looked_up(d) for d in deltas]
    assert all(b.seq == d.seq for d, on in zip(deltas, got, strict=True) for b in on)
    assert [[s.name for s in board_seasons(d.completed_at, d.tags, KINDS)] for d in deltas] == [
        [name for name, _, _, _ in looked_up(d)] for d in deltas]
