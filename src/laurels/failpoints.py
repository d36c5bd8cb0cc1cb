"""Named crash points for fault-injection tests.

`LAURELS_FAILPOINTS=ingest_after_commit,rebuild_before_switch` makes the process
kill itself (SIGKILL, as a power cut would) when it reaches one of them. Unset
in production, where `hit` is a set lookup.
"""

from __future__ import annotations

import os
import signal

_ARMED = frozenset(p for p in os.environ.get("LAURELS_FAILPOINTS", "").split(",") if p)


def hit(name: str) -> None:
    if name in _ARMED:
        os.kill(os.getpid(), signal.SIGKILL)
