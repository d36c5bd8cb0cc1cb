"""A per-token rate limit on writes: a token bucket per token, in each process."""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass

from laurels.errors import Problem

MAX_TOKENS_TRACKED = 10_000


@dataclass
class _Bucket:
    tokens: float
    at: float


class RateLimiter:
    def __init__(self, per_second: float, burst: float | None = None) -> None:
        self.per_second = per_second
        self.burst = burst if burst is not None else max(1.0, 2 * per_second)
        self._buckets: dict[str, _Bucket] = {}

    def check(self, token: str) -> None:
        """Take one request from the token's bucket, or raise 429 rate_limited."""
        if self.per_second <= 0:
            return
        # Keyed by a digest: the limiter never holds a token itself.
        key = hashlib.sha256(token.encode()).hexdigest()[:32]
        now = time.monotonic()
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= MAX_TOKENS_TRACKED:
                self._buckets.clear()  # bounded memory; forgetting only forgives
            bucket = self._buckets[key] = _Bucket(self.burst, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.per_second)
        bucket.at = now
        if bucket.tokens < 1:
            wait = math.ceil((1 - bucket.tokens) / self.per_second)
            raise Problem("rate_limited", "too many writes with this token; slow down",
                          retry_after=max(1, wait))
        bucket.tokens -= 1
