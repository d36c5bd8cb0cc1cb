"""A Redis connection is untrusted until proven (issue 63; docs/concurrency.md,
"A Redis back from the past").

A Redis restarted from an older snapshot, or a replica promoted behind its
primary, answers at once with boards from the past: an erasure, a hide or
a void it had applied may be gone. The epoch watch (projection/epoch.py) notices the
new run id within a second and repairs every board, but until it has, a
read would serve what the past held.

Every restart or failover closes the connections of every process, so each
process sees the new server first on a *new connection*. Each connection
asks the server its run id as it connects (`INFO server`, before any
command of the caller is sent on it) and reports it here. A run id the
boards were not proven for (the fingerprint PostgreSQL records once the
repair is done) is doubted: board reads answer `503` with `Retry-After`
until it is proven, or until it is no longer one of the servers (a second
restart meanwhile). A process that does not run the epoch watch (an API
process beside a projector) learns of the proof from PostgreSQL, asked at
most every SETTLE_SECONDS while it doubts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from laurels.core.errors import StoreUnavailable

log = logging.getLogger("laurels.trust")
SETTLE_SECONDS = 0.25  # how often a doubting process asks whether the doubt is settled

Source = Callable[[], Awaitable[str]]  # a fingerprint: run ids joined by ","


class Unproven(StoreUnavailable):
    """A board read while the Redis that holds it is not yet proven to hold
    what PostgreSQL says (a restart or a failover being repaired)."""

    def __init__(self, run_ids: set[str]) -> None:
        super().__init__("redis", RuntimeError(
            f"Redis run {', '.join(sorted(run_ids))} is being checked against PostgreSQL"))


def run_ids(fingerprint: str) -> set[str]:
    return {r for r in fingerprint.split(",") if r}


class Trust:
    """What one process knows of the Redis servers its boards live on."""

    def __init__(self) -> None:
        # The run ids the boards were last proven for; None: none known (a
        # first start, or not read yet), and then nothing is doubted.
        self.proven: set[str] | None = None
        self.doubted: set[str] = set()
        # Set by wire(): the servers' fingerprint now, and PostgreSQL's record.
        self.current: Source | None = None
        self.recorded: Source | None = None
        self._asked_at = float("-inf")
        self._lock = asyncio.Lock()

    @property
    def trusted(self) -> bool:
        return not self.doubted

    def saw(self, run_id: str) -> None:
        """A connection was made to the server of this run."""
        if self.proven is not None and run_id not in self.proven and run_id not in self.doubted:
            log.warning("Redis run %s not yet proven: board reads wait for the repair",
                        run_id)
            self.doubted.add(run_id)

    def prove(self, fingerprint: str) -> None:
        """The boards are proven for these servers (the epoch watch repaired
        them, or found nothing to repair)."""
        ids = run_ids(fingerprint)
        if not ids:
            return
        self.proven = ids
        self.doubted -= ids

    def load(self, recorded: str, current: str) -> None:
        """At start: PostgreSQL's record, and the servers as they are."""
        self.prove(recorded)
        for run_id in run_ids(current):
            self.saw(run_id)

    async def check(self) -> None:
        """Raise Unproven while a server is doubted; settle the doubt first
        (at most every SETTLE_SECONDS) from the servers and PostgreSQL."""
        if not self.doubted:
            return
        if (self.current is not None and self.recorded is not None
                and time.monotonic() - self._asked_at >= SETTLE_SECONDS):
            async with self._lock:
                if self.doubted and time.monotonic() - self._asked_at >= SETTLE_SECONDS:
                    self._asked_at = time.monotonic()
                    await self.settle(await self.current(), await self.recorded())
        if self.doubted:
            raise Unproven(self.doubted)

    async def settle(self, current: str, recorded: str) -> None:
        """Forget doubts of servers no longer there; prove what PostgreSQL
        records as repaired."""
        self.doubted &= run_ids(current)
        self.prove(recorded)


class Trusting:
    """Mixed into a connection class: asks the server its run id as it
    connects, and tells `trust` (a class attribute: connect() makes a
    subclass per client)."""

    trust: Trust | None = None

    async def on_connect_check_health(self, check_health: bool = True) -> None:
        await super().on_connect_check_health(check_health)  # type: ignore[misc]
        if self.trust is None:
            return
        await self.send_command("INFO", "server", check_health=False)  # type: ignore[attr-defined]
        info = await self.read_response()  # type: ignore[attr-defined]
        text = info.decode() if isinstance(info, bytes) else str(info)
        for line in text.splitlines():
            if line.startswith("run_id:"):
                self.trust.saw(line.partition(":")[2].strip())
                return
