"""Per-client SSE state stays O(1) whatever the hint rate (pure, no I/O)."""

from __future__ import annotations

import json

import pytest

from laurels.core.seasons import week
from laurels.live.hub import LEARNER_BUFFER, LearnerListener, SeasonListener

pytestmark = pytest.mark.once


def test_board_listener_coalesces_a_storm_into_one_event() -> None:
    listener = SeasonListener(week(2026, 49))
    listener.offer({"season": "2026-W49", "user_id": 1})
    assert listener.wake.is_set()
    for uid in range(10_000):
        listener.offer({"season": "2026-W49", "user_id": uid})
    events = listener.take()
    assert [e["event"] for e in events] == ["changed"]
    assert json.loads(events[0]["data"]) == {"season": "2026-W49"}  # coalesced: no id
    assert listener.take() == [] and not listener.wake.is_set()


def test_single_hint_keeps_its_user_and_drops_anything_else() -> None:
    listener = SeasonListener(week(2026, 49))
    listener.offer({"season": "2026-W49", "user_id": None, "score": 99})
    [event] = listener.take()
    assert json.loads(event["data"]) == {"season": "2026-W49", "user_id": None}


def test_rebuilt_comes_first_and_once() -> None:
    listener = SeasonListener(week(2026, 49))
    listener.offer({"season": "2026-W49", "kind": "rebuilt"})
    listener.offer({"season": "2026-W49", "user_id": 3})
    listener.offer({"season": "2026-W49", "kind": "rebuilt"})
    assert [e["event"] for e in listener.take()] == ["rebuilt", "changed"]


def test_user_listener_buffer_is_bounded() -> None:
    listener = LearnerListener(1)
    for nid in range(LEARNER_BUFFER * 5):
        listener.offer(nid)
    assert len(listener.ids) == LEARNER_BUFFER
    assert list(listener.ids)[-1] == LEARNER_BUFFER * 5 - 1  # the newest are kept
