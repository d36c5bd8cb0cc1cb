"""Imported by every Python process the test suite starts while the suite's
clock is set ahead (LAURELS_TEST_CLOCK_AHEAD_DAYS, tests/conftest.py puts
this folder on PYTHONPATH): the same offset, so a `laurels serve` or a CLI
command the suite starts agrees with the suite about what day it is. The
servers' clocks (PostgreSQL's, Redis's) stay the machine's."""

import os

if os.environ.get("TESTS_CLOCK_AHEAD_DAYS"):
    import time
    from datetime import UTC, datetime, timedelta

    import time_machine

    time_machine.travel(datetime.now(UTC)
                        + timedelta(days=int(os.environ["TESTS_CLOCK_AHEAD_DAYS"])),
                        tick=True).start()
    time.time()  # a travel's clock ticks from its first reading, not from its start
