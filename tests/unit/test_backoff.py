"""laurels.backoff, the one backoff schedule of the client and the webhook
deliveries: each delay lies between half its ceiling and its ceiling, the
ceiling doubles from `base_seconds` until `cap_seconds`, and stays there."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laurels.core import backoff
from laurels.core.backoff import jittered_seconds
from laurels.live import webhooks
from tests import deadlines

pytestmark = pytest.mark.once

attempts = st.integers(min_value=0, max_value=2000)
bases = st.floats(min_value=0.001, max_value=10.0)
caps = st.floats(min_value=0.001, max_value=7200.0)


@contextmanager
def jitter(end: str) -> Iterator[None]:
    """The jitter pinned to its low end (`low`: half the ceiling) or its
    high end (`high`: the whole ceiling)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backoff.random, "uniform", lambda a, b: a if end == "low" else b)
        yield


@settings(deadline=deadlines.PURE)
@given(attempts, bases, caps)
def test_a_delay_lies_between_half_its_ceiling_and_its_ceiling(
        attempt: int, base: float, cap: float) -> None:
    delay = jittered_seconds(attempt, base_seconds=base, cap_seconds=cap)
    ceiling = cap if attempt > 1000 else min(cap, base * 2.0 ** attempt)
    assert ceiling / 2 <= delay <= ceiling <= cap


@settings(deadline=deadlines.PURE)
@given(st.integers(min_value=0, max_value=60), bases, caps)
def test_the_ceiling_doubles_until_the_cap_and_stays_there(
        attempt: int, base: float, cap: float) -> None:
    for end in ("low", "high"):
        with jitter(end):
            now = jittered_seconds(attempt, base_seconds=base, cap_seconds=cap)
            after = jittered_seconds(attempt + 1, base_seconds=base, cap_seconds=cap)
        assert now <= after == min(2 * now, cap / 2 if end == "low" else cap)
    with jitter("high"):
        assert jittered_seconds(0, base_seconds=base, cap_seconds=cap) == min(base, cap)


def test_past_any_float_the_delay_is_capped() -> None:
    for attempt in (1023, 1024, 10**6):  # 2.0 ** 1024 overflows a float
        delay = jittered_seconds(attempt, base_seconds=1.0, cap_seconds=3600.0)
        assert 1800.0 <= delay <= 3600.0


def test_the_jitter_spreads_the_delays() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backoff.random, "uniform", random.Random(1).uniform)
        delays = {jittered_seconds(5, base_seconds=0.2, cap_seconds=10.0) for _ in range(50)}
    assert len(delays) == 50 and 3.2 <= min(delays) < 4.0 < max(delays) <= 6.4


def test_the_schedule_of_webhook_deliveries_is_1_2_4_up_to_an_hour() -> None:
    with jitter("high"):
        assert [webhooks.backoff(n) for n in (1, 2, 3, 4, 12, 13, 100)] == [
            1.0, 2.0, 4.0, 8.0, 2048.0, 3600.0, 3600.0]
    with jitter("low"):
        assert webhooks.backoff(1) == 0.5 and webhooks.backoff(100) == 1800.0
