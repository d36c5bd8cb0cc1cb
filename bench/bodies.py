"""What a body drawn from many costs a bare server (issue 42): the bare ASGI
app (bench/bare_app.py) serving one 7-KB body again and again, against the
same app serving one of 10,000 distinct 7-KB bodies drawn at random on each
request (as the top-100 of a board drawn among 10,000, each cached: 70 MB
of bodies, far more than the CPU's caches). Alternating rounds of wrk (one
thread, 32 connections, each request built by the same Lua script), the
server's CPU a request on each side. Nothing of laurels runs: what the
random line loses here, laurels cannot win back.

    .venv/bin/python bench/bodies.py                 # 6 rounds of 5 s each side
    .venv/bin/python bench/bodies.py --bodies 100    # a working set that fits
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.support import log, start_bare, wrk  # noqa: E402


def script(path: Path, n: int) -> str:
    path.write_text(f"local n = {n}\nrequest = function()\n"
                    "  return wrk.format('GET', '/bodies/' .. math.random(0, n - 1))\nend\n")
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bodies", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-bodies-") as folder:
        work = Path(folder)
        proc, url = start_bare(work, bodies=args.bodies)
        try:
            one, many = script(work / "one.lua", 1), script(work / "many.lua", args.bodies)
            wrk(f"{url}/", proc.pid, 2, script=many)  # every body touched once
            ratios, costs = [], []
            for n in range(args.rounds):
                a = wrk(f"{url}/", proc.pid, args.seconds, script=one)
                b = wrk(f"{url}/", proc.pid, args.seconds, script=many)
                us_a, us_b = 1e6 * a.cpu.server / a.rps, 1e6 * b.cpu.server / b.rps
                ratios.append(b.rps / a.rps)
                costs.append((us_a, us_b))
                log(f"round {n + 1}: one body {a.rps:,.0f}/s ({us_a:.1f} us of server CPU a "
                    f"request), one of {args.bodies:,} {b.rps:,.0f}/s ({us_b:.1f} us): "
                    f"{b.rps / a.rps:.2f}")
            log(f"median: {statistics.median(ratios):.2f} of one body's rate; server CPU a "
                f"request {statistics.median(c[0] for c in costs):.1f} us against "
                f"{statistics.median(c[1] for c in costs):.1f} us")
        finally:
            proc.kill()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
