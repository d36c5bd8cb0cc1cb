"""Ranking on the board in memory, no store: the tie policies, the same
board whatever the arrival order, and privacy in the top and a
neighbourhood (the board's, and the public boundary's: reads.Reads)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laurels.board import Profile
from laurels.core.ranking import Standing, TiePolicy, rank_all
from laurels.process.settings import Settings
from laurels.reads.boards import Reads
from laurels.reads.privacy import Privacy
from tests.fast.deltas import START, WEEK, board_of, ev, ranked

pytestmark = pytest.mark.once


async def test_shared_ties_share_a_rank_by_ascending_id() -> None:
    board = board_of("shared")
    await board.apply([ev(30, 10), ev(10, 10), ev(20, 10), ev(40, 9), ev(50, 1)])
    top = await board.top(WEEK, 100)
    assert ranked(top) == [(1, 10, 10), (1, 20, 10), (1, 30, 10), (4, 40, 9), (5, 50, 1)]
    assert top.total == 5


async def test_first_orders_ties_by_the_latest_counting_completion() -> None:
    """Learner 30's latest completion is at minute 1 (its earlier-applied
    one is the later in time), 10's and 20's at minute 5: 30 first, then
    by id."""
    board = board_of("first")
    await board.apply([ev(30, 4, 1), ev(30, 6, 0), ev(10, 10, 5), ev(20, 10, 5), ev(40, 9)])
    assert ranked(await board.top(WEEK, 100)) == [(1, 30, 10), (2, 10, 10), (3, 20, 10),
                                                  (4, 40, 9)]
    scores = await board.scores(WEEK, [30, 10])
    assert scores[30][3] == WEEK.offset_us(START + timedelta(minutes=1))


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_pages_follow_the_board_order_through_their_cursor(policy: TiePolicy) -> None:
    board = board_of(policy)
    await board.apply([ev(u, 5 if u % 2 else 3, u) for u in range(1, 8)])
    whole = (await board.top(WEEK, 100)).entries
    page = await board.top(WEEK, 3)
    seen = list(page.entries)
    while page.next is not None:
        page = await board.top(WEEK, 3, page.next)
        seen += page.entries
    assert seen == whole and len(whole) == 7


@settings(max_examples=50, deadline=timedelta(seconds=1))
@given(policy=st.sampled_from(["shared", "first"]),
       events=st.lists(st.tuples(st.integers(1, 6), st.integers(1, 4), st.integers(0, 5)),
                       min_size=1, max_size=25),
       data=st.data())
async def test_the_board_is_the_reference_ranking_in_any_order(
        policy: TiePolicy, events: list[tuple[int, int, int]], data: st.DataObject) -> None:
    evs = [ev(uid, points, minute) for uid, points, minute in events]
    order = data.draw(st.permutations(range(len(evs))))
    again = data.draw(st.lists(st.sampled_from(range(len(evs))), max_size=5))
    board = board_of(policy)
    await board.apply([evs[i] for i in order] + [evs[i] for i in again])
    standings: dict[int, Standing] = {}
    for e in evs:
        old = standings.get(e.user_id, Standing(e.user_id, 0, 0))
        standings[e.user_id] = Standing(e.user_id, old.score + e.points,
                                        max(old.last_offset_us, WEEK.offset_us(e.completed_at)))
    assert ranked(await board.top(WEEK, 100)) == [
        (r, s.user_id, s.score) for r, s in rank_all(standings.values(), policy)]


async def test_hidden_are_ranked_never_listed_anonymous_listed_as_stored() -> None:
    board = board_of("shared")
    await board.apply([ev(1, 50, profile=Profile(1, "hidden", "Hid")),
                       ev(2, 40, profile=Profile(1, "anonymous", "Anon")),
                       ev(3, 30, profile=Profile(1, "public", "Pub")), ev(4, 30)])
    top = await board.top(WEEK, 100)
    assert [(e.rank, e.user_id, e.visibility, e.display_name) for e in top.entries] == [
        (1, 2, "anonymous", "Anon"), (2, 3, "public", "Pub"), (2, 4, "public", "Learner 4")]
    assert top.total == 3
    hidden = await board.around(WEEK, 1, 1)
    assert hidden is not None
    assert (hidden.me.rank, hidden.me.score, hidden.index) == (1, 50, 0)
    assert [(e.user_id, e.rank) for e in hidden.neighbors] == [(1, 1), (2, 2)]  # as if shown
    mid = await board.around(WEEK, 3, 1)
    assert mid is not None and [e.user_id for e in mid.neighbors] == [2, 3, 4]
    assert (mid.index, mid.me.rank) == (1, 2)
    assert await board.around(WEEK, 5, 1) is None
    # Turning public: listed again, the others ranked after.
    assert await board.set_profile(WEEK, 1, Profile(2, "public", "Shown"))
    assert ranked(await board.top(WEEK, 2)) == [(1, 1, 50), (2, 2, 40)]


async def test_the_public_boundary_shows_an_anonymous_learner_unnamed(tmp_path: Path) -> None:
    """reads.Reads on the board in memory (its Reader): what a page and a
    neighbourhood show the public; no store (the board is there and shows
    someone, so no archive or heal is asked)."""
    board = board_of("first")
    await board.apply([ev(1, 50, profile=Profile(1, "hidden", "Hid")),
                       ev(2, 40, profile=Profile(1, "anonymous", "Anon")),
                       ev(3, 30, profile=Profile(1, "public", "Pub"))])
    settings_ = Settings(data_dir=tmp_path, database_url="postgresql://x@127.0.0.1/x",
                         redis_url="redis://127.0.0.1:1/0", tie_policy="first")
    reads = Reads(settings_, None, board, None, None, Privacy(None))  # type: ignore[arg-type]
    page = await reads.top(WEEK, 10)
    assert [(e["rank"], e["user_id"], e["display_name"]) for e in page["entries"]] == [
        (1, None, "Anonymous"), (2, 3, "Pub")]
    mine = await reads.around(WEEK, 1, 1)  # the hidden learner's own view
    assert mine["user"] == {"rank": 1, "user_id": 1, "display_name": "Hid", "score": 50,
                            "visibility": "hidden"}
    assert [(n["user_id"], n["display_name"], n["self"]) for n in mine["neighbors"]] == [
        (1, "Hid", True), (None, "Anonymous", False)]
