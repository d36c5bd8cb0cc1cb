"""A rate limit on writes: a token bucket per writer (the ingest token, the
admin token), in each process; and a bound on the costly reads one client
may have in flight at once."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

from laurels.api.problems import Problem


@dataclass
class _Bucket:
    tokens: float
    at: float


class RateLimiter:
    def __init__(self, per_second: float, burst: float | None = None) -> None:
        self.per_second = per_second
        self.burst = burst if burst is not None else max(1.0, 2 * per_second)
        self._buckets: dict[str, _Bucket] = {}

    def check(self, writer: str) -> None:
        """Take one request from the writer's bucket, or raise 429 rate_limited.
        Only two writers exist (the ingest and the admin token), so this holds
        at most two buckets."""
        if self.per_second <= 0:
            return
        now = time.monotonic()
        bucket = self._buckets.get(writer)
        if bucket is None:
            bucket = self._buckets[writer] = _Bucket(self.burst, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.per_second)
        bucket.at = now
        if bucket.tokens < 1:
            wait = math.ceil((1 - bucket.tokens) / self.per_second)
            raise Problem("rate_limited", "too many writes with this token; slow down",
                          retry_after=max(1, wait))
        bucket.tokens -= 1


class InFlight:
    """At most `most` reads of one kind in flight per client (a group page
    the cache does not hold is computed from every member's standing: 338
    ms of CPU on a 100,000-member group, issue 64); the next is `429` with
    `Retry-After`, so one client cannot take a process's CPU from others."""

    def __init__(self, most: int, what: str) -> None:
        self.most = most
        self.what = what
        self._held: dict[str, int] = {}

    @contextlib.contextmanager
    def turn(self, client: str) -> Iterator[None]:
        held = self._held.get(client, 0)
        if held >= self.most:
            raise Problem("rate_limited", f"at most {self.most} {self.what} at once from one "
                          "client; retry shortly", retry_after=1)
        self._held[client] = held + 1
        try:
            yield
        finally:
            left = self._held[client] - 1
            if left:
                self._held[client] = left
            else:
                del self._held[client]
