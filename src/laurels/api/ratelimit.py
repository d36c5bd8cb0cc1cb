"""A rate limit on writes: a token bucket per writer (the ingest token, the
admin token), in each process."""

from __future__ import annotations

import math
import time
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
