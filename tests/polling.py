"""The one way the tests wait for a condition: poll it until it holds.

    value = wait_until(check, seconds=10, what="the board to match")
    value = await eventually(check, seconds=10, what="the board to match")

Both call `check()` at once, then every `every` seconds, and return its first
truthy value; `check` is tried one last time at the deadline, and if it still
is not truthy they raise AssertionError naming `what`. `eventually` is the
twin for coroutines: its `check` may be sync or async (it then sleeps with
asyncio, so the event loop goes on meanwhile). A check may raise to fail at
once (an answer that must never come while waiting).

Standard library only: tests/cluster.py, run as a script before any store is
up, imports it too (tests/helpers.py re-exports it for everything else).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")


def _timed_out(seconds: float, what: str) -> AssertionError:
    return AssertionError(f"timed out after {seconds:g} s waiting for {what}")


def wait_until(check: Callable[[], T], seconds: float = 10, what: str = "the condition",
               *, every: float = 0.05) -> T:
    """The first truthy value of `check()`, polled for up to `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            raise _timed_out(seconds, what)
        time.sleep(min(every, left))


@overload
async def eventually(check: Callable[[], Awaitable[T]], seconds: float = 10,
                     what: str = "the condition", *, every: float = 0.05) -> T: ...
@overload
async def eventually(check: Callable[[], T], seconds: float = 10,
                     what: str = "the condition", *, every: float = 0.05) -> T: ...
async def eventually(check: Callable[[], Any], seconds: float = 10,
                     what: str = "the condition", *, every: float = 0.05) -> Any:
    """`wait_until` for coroutines: `check` may be sync or async."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            raise _timed_out(seconds, what)
        await asyncio.sleep(min(every, left))
