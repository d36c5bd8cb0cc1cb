"""The tests' one way to wait (tests/polling.py): both twins return the first
truthy value, try once more at the deadline, and name what they waited for."""

from __future__ import annotations

import itertools

import pytest

from tests.polling import eventually, wait_until

pytestmark = pytest.mark.once


def test_wait_until_returns_the_first_truthy_value() -> None:
    values = iter([None, 0, [], "", [1]])
    assert wait_until(lambda: next(values), 5, every=0) == [1]


def test_wait_until_names_what_it_waited_for() -> None:
    calls = itertools.count()
    with pytest.raises(AssertionError, match=r"after 0\.1 s waiting for the moon"):
        wait_until(lambda: next(calls) < 0, 0.1, "the moon")
    assert next(calls) >= 2  # at once, then until the deadline


def test_a_zero_wait_still_looks_once() -> None:
    assert wait_until(lambda: "here", 0) == "here"


async def test_eventually_takes_sync_and_async_checks() -> None:
    values = iter(["", "", "done"])

    async def check() -> str:
        return next(values)

    assert await eventually(check, 5, every=0) == "done"
    assert await eventually(lambda: 42, 5) == 42

    async def never() -> bool:
        return False

    with pytest.raises(AssertionError, match="waiting for nothing"):
        await eventually(never, 0.1, "nothing")


async def test_a_check_that_raises_fails_at_once() -> None:
    def check() -> bool:
        raise AssertionError("never a 500")

    with pytest.raises(AssertionError, match="never a 500"):
        await eventually(check, 5)
