"""Named points where a test can crash the process or hold it still.

- Crash points: `LAURELS_FAILPOINTS=ingest_after_commit,rebuild_before_switch`
  makes the process kill itself (SIGKILL, as a power cut would) when it
  reaches one of them.
- Switches: `LAURELS_FAILPOINTS=skip:fast_path` turns a step off (the bench
  measures how fast the projector alone applies completions).
- Pause points: an in-process test holds a point (`with hold("x") as h`), the
  code under test stops at `await pause("x")` until the test releases it, and
  the test runs another operation meanwhile. This forces an interleaving
  deterministically, with no sleeps.

Unset in production, where both are one dictionary lookup.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

_ARMED = frozenset(p for p in os.environ.get("LAURELS_FAILPOINTS", "").split(",") if p)
_HELD: dict[str, Hold] = {}


def hit(name: str) -> None:
    if name in _ARMED:
        os.kill(os.getpid(), signal.SIGKILL)


def skipped(step: str) -> bool:
    """True when `skip:<step>` is armed (never in production)."""
    return bool(_ARMED) and f"skip:{step}" in _ARMED


class Hold:
    """A held pause point: callers that reach it wait until it is released."""

    def __init__(self, name: str, times: int | None) -> None:
        self.name = name
        self.times = times  # how many arrivals it stops; None: every one until released
        self.arrivals = 0
        self._arrived = asyncio.Event()
        self._released = asyncio.Event()

    def _stops(self) -> bool:
        return not self._released.is_set() and (self.times is None or self.arrivals < self.times)

    async def reached(self, timeout: float = 10.0) -> None:
        """Wait until a caller stands at the point (fails the test if none comes)."""
        try:
            await asyncio.wait_for(self._arrived.wait(), timeout)
        except TimeoutError:
            raise AssertionError(f"nothing reached pause point {self.name!r}") from None

    @property
    def is_reached(self) -> bool:
        return self._arrived.is_set()

    def release(self) -> None:
        self._released.set()


@contextmanager
def hold(name: str, times: int | None = 1) -> Iterator[Hold]:
    """Hold `name` for the block; it is released on exit whatever happens."""
    if name in _HELD:
        raise RuntimeError(f"pause point {name!r} is already held")
    point = Hold(name, times)
    _HELD[name] = point
    try:
        yield point
    finally:
        point.release()
        _HELD.pop(name, None)


async def pause(name: str) -> None:
    """A crash point and a pause point in one: free unless a test armed it."""
    if _ARMED:
        hit(name)
    point = _HELD.get(name)
    if point is None or not point._stops():
        return
    point.arrivals += 1
    point._arrived.set()
    await point._released.wait()
