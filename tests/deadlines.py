"""Hypothesis deadlines, each from the slowest example measured of its test.

What hypothesis holds to the deadline (hypothesis 6.170, core.py): one
example's call of the test, less the time spent drawing data and in garbage
collection. For a state machine (`run_state_machine_as_test`) it is one step
sequence, less its rules' and invariants' own time too: what the deadline
bounds there is the machine's construction and teardown (stores opened,
closed, settled and checked), once per sequence.

Measured on 2026-12-07 at f124f91, on this project's machine kind (2
cores, shared with other test runs: load average 2 to 4 throughout), as
hypothesis times it (its observability's `timing["execute:test"]`; to measure
again: HYPOTHESIS_EXPERIMENTAL_OBSERVABILITY=1
HYPOTHESIS_EXPERIMENTAL_OBSERVABILITY_NOCOVER=1, then read
.hypothesis/observed/*_testcases.jsonl), on .ci/run's three store setups:
the embedded default, the machine's PostgreSQL and Redis, and the machine's
Redis as a 3-node cluster (tests/cluster.py); the model machines with 8 or
20 examples each (LAURELS_MODEL_EXAMPLES). Each constant below names the
slowest example per setup, in ms (None: .ci/run does not run it there).

A deadline is HEADROOM times the slowest of them, rounded up to 500 ms, and
never under FLOOR_MS: the measurements already carry a loaded machine, and a
run slower than any measured (a busier CI) must still never meet it: a
flaky deadline is worse than none.
"""

from __future__ import annotations

import math
from datetime import timedelta

HEADROOM = 10
FLOOR_MS = 1000  # under a second, a deadline times the scheduler, not the test


def deadline_ms(embedded: float, machine: float, cluster: float | None) -> timedelta:
    """The deadline of a test whose slowest example took these ms on the
    embedded default, the machine's stores and the cluster."""
    slowest = max(t for t in (embedded, machine, cluster) if t is not None)
    return timedelta(milliseconds=max(FLOOR_MS, math.ceil(slowest * HEADROOM / 500) * 500))


# Pure functions, no store (tests/unit): the slowest of any, test_keys'
# chunk bits of 300 seqs; the rest under 16 ms.
PURE = deadline_ms(embedded=35.5, machine=31.1, cluster=None)
# tests/api/test_hostile.py: the examples only draw the requests (sent after).
HOSTILE = deadline_ms(embedded=9.9, machine=25.9, cluster=None)
# tests/integration
ARRAY_LITERALS = deadline_ms(embedded=1.5, machine=13.3, cluster=18.7)
PIPELINE = deadline_ms(embedded=68.3, machine=128.5, cluster=93.2)
BOARD_ORDER = deadline_ms(embedded=72.7, machine=60.3, cluster=74.8)
BOARD_PERIODS = deadline_ms(embedded=736.8, machine=659.4, cluster=247.6)
RANK_BAR = deadline_ms(embedded=318.0, machine=189.0, cluster=149.1)  # its 12 cases' slowest
# The model machines (per step sequence: construction and teardown).
MODEL = deadline_ms(embedded=70.6, machine=213.9, cluster=122.8)
MODEL_KINDS = deadline_ms(embedded=52.0, machine=96.6, cluster=105.5)
# The interleavings: teardown releases every held operation and waits for
# them (at most 60 s, then it fails). One sequence of 121 measured waited
# 19.6 s there, after two `prepare` steps of 10 s each (START_WAIT_SECONDS:
# neither at a held point nor waiting on a lock): a heal waiting out its
# heal.BACKGROUND_HEAL_WAIT_SECONDS (30 s) for a board a held operation
# keeps from being built. The other 120 stayed under 460 ms. The deadline
# stays above the 60 s bound.
MODEL_INTERLEAVED = deadline_ms(embedded=427.2, machine=19642.9, cluster=321.7)
MODEL_FAULTS = deadline_ms(embedded=372.2, machine=891.5, cluster=None)  # its own Redis
