"""Background loops that never die silently.

Every loop of a process (projector, notifier, hints, erasure jobs, season
housekeeping, the Redis epoch watch) runs under `Supervisor.run`: an
exception is logged with its traceback, the loop is marked down (in /metrics
and /readyz, by name) and restarted after an exponential backoff with jitter.
A loop that returns is done (it saw its stop event). Shutdown sets every
loop's, waits a moment, then cancels what is left; nothing is re-raised into
it. `stop_loop` stops one loop the same way: after the pass it is in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from laurels.core.backoff import jittered_seconds
from laurels.core.errors import StoreUnavailable
from laurels.core.metrics import LOOP_RESTARTS, LOOP_UP

log = logging.getLogger("laurels.supervisor")

Loop = Callable[[asyncio.Event], Awaitable[None]]
BACKOFF_FIRST_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 30.0
# A store that cannot be reached is an outage, not a bug: one log line, and
# the loop comes back soon after the store does.
# (A network error of a loop's own, a webhook receiver's, is one too.)
TRANSIENT = (StoreUnavailable, OSError)
TRANSIENT_MAX_SECONDS = 2.0
HEALTHY_AFTER_SECONDS = 60.0  # a loop that ran this long starts its backoff afresh


class Supervisor:
    def __init__(self, backoff_first_seconds: float = BACKOFF_FIRST_SECONDS) -> None:
        self.stop = asyncio.Event()
        self.backoff_first_seconds = backoff_first_seconds
        self.down: dict[str, str] = {}  # loop -> why, while it is down
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.stops: dict[str, asyncio.Event] = {}  # each loop's own, set by shutdown too

    def start(self, name: str, loop: Loop) -> None:
        stop = self.stops[name] = asyncio.Event()
        if self.stop.is_set():
            stop.set()
        self.tasks[name] = asyncio.create_task(self._run(name, loop, stop),
                                               name=f"laurels:{name}")

    async def stop_loop(self, name: str) -> None:
        """Stop one loop as shutdown would, between two of its passes (a pass
        under way ends first), and forget it: it is not a loop down."""
        self.stops.pop(name).set()
        await asyncio.gather(self.tasks.pop(name), return_exceptions=True)

    async def _run(self, name: str, loop: Loop, stop: asyncio.Event) -> None:
        failures = 0
        clock = asyncio.get_running_loop()
        while not stop.is_set():
            started = clock.time()
            LOOP_UP.labels(name).set(1)
            self.down.pop(name, None)
            try:
                await loop(stop)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if clock.time() - started > HEALTHY_AFTER_SECONDS:
                    failures = 0
                failures += 1
                LOOP_UP.labels(name).set(0)
                LOOP_RESTARTS.labels(name).inc()
                self.down[name] = f"{type(exc).__name__}: {exc}"[:200]
                transient = isinstance(exc, TRANSIENT)
                delay = jittered_seconds(
                    failures - 1, base_seconds=self.backoff_first_seconds,
                    cap_seconds=TRANSIENT_MAX_SECONDS if transient else BACKOFF_MAX_SECONDS)
                if transient:
                    log.warning("background loop %r: %s; restarting in %.1f s", name,
                                self.down[name], delay)
                else:
                    log.exception("background loop %r crashed; restarting in %.1f s", name,
                                  delay)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
            finally:
                if stop.is_set():
                    LOOP_UP.labels(name).set(0)

    def problems(self) -> dict[str, str]:
        """The loops that are down now, with the error that took them down."""
        dead = {name: "stopped" for name, task in self.tasks.items()
                if task.done() and not self.stop.is_set()}
        return {**dead, **self.down}

    async def shutdown(self, grace_seconds: float = 5.0) -> None:
        self.stop.set()
        for stop in self.stops.values():
            stop.set()
        tasks = list(self.tasks.values())
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace_seconds)
        for task in pending:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def every(seconds: float, work: Callable[[], Awaitable[object]]) -> Loop:
    """A loop that runs `work` now and then every `seconds`, until stopped."""

    async def loop(stop: asyncio.Event) -> None:
        while not stop.is_set():
            await work()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), seconds)

    return loop
