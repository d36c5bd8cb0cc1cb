"""Exponential backoff with jitter, the one schedule of every retry loop
that waits between attempts: the client's (laurels.client: 0.2 s, doubling,
at most 10 s), the webhook deliveries' (live/webhooks.py: 1 s, doubling, at
most an hour) and the background loops' restarts (process/supervisor.py).

"Equal jitter": half of the delay is fixed, so the delays still grow, and
half is random, so clients that failed together do not retry together
(https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/).
"""

from __future__ import annotations

import random


def jittered_seconds(attempt: int, *, base_seconds: float, cap_seconds: float) -> float:
    """Seconds to wait before retry number `attempt` (0: the first):
    `base_seconds`, doubling with each attempt, at most `cap_seconds`; then
    drawn uniformly between half of that and all of it."""
    try:
        ceiling = min(cap_seconds, base_seconds * 2.0 ** attempt)
    except OverflowError:  # 2 ** attempt is beyond a float: far beyond any cap
        ceiling = cap_seconds
    return ceiling / 2 + random.uniform(0, ceiling / 2)  # noqa: S311 (jitter, not secrecy)
