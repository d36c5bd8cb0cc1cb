"""The read lines in alternating rounds, for a machine whose speed drifts:
each round runs wrk against every endpoint in turn (3 s each by default),
and each ratio is the median over the rounds of adjacent pairs.

    .venv/bin/python bench/alternating.py --laurels http://127.0.0.1:18080 \\
        --bare http://127.0.0.1:18081 --admin-token TOKEN --learners 50000

Needs a running `laurels serve` whose current week has `--learners` ranked
learners (1 to N), and `bench/bare_app.py` on the same uvicorn:

    .venv/bin/uvicorn bench.bare_app:app --http httptools --loop uvloop \\
        --no-proxy-headers --no-access-log --port 18081

Sends traffic to those two addresses only; writes nothing but a Lua script
in a temporary directory.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: bench/ and tests/ from the root
    sys.path.insert(0, str(ROOT))

from bench.support import every_learner_lua  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--laurels", required=True)
    p.add_argument("--bare", required=True)
    p.add_argument("--admin-token", required=True)
    p.add_argument("--learners", type=int, required=True)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--seconds", type=int, default=3)
    args = p.parse_args(argv)
    top = f"{args.laurels}/v1/leaderboards/current?limit=100"
    size = len(httpx.get(top).content)
    auth = f"authorization: Bearer {args.admin_token}"
    script = every_learner_lua(Path(tempfile.mkdtemp(prefix="laurels-alternating-"))
                               / "every.lua", "current", args.learners, args.admin_token)
    endpoints = {
        "bare": (f"{args.bare}/healthz", []),
        "bare_bytes": (f"{args.bare}/bytes/{size}", []),
        "healthz": (f"{args.laurels}/healthz", []),
        "top": (top, []),
        "around": (f"{args.laurels}/v1/leaderboards/current/users/{args.learners // 2}"
                   "?radius=5", ["-H", auth]),
        "around_all": (f"{args.laurels}/v1/leaderboards/current/users/1?radius=5",
                       ["-s", script]),
    }
    rates: dict[str, list[float]] = {name: [] for name in endpoints}
    for _ in range(args.rounds):
        for name, (url, extra) in endpoints.items():
            out = subprocess.run(["wrk", "-t1", "-c32", f"-d{args.seconds}s", *extra, url],
                                 capture_output=True, text=True, timeout=args.seconds + 60,
                                 check=True).stdout
            found = re.search(r"Requests/sec:\s+([0-9.]+)", out)
            if found is None or "Non-2xx" in out:
                print(f"wrk against {url}: {out[-300:]}", file=sys.stderr)
                return 1
            rates[name].append(float(found.group(1)))
    for name, values in rates.items():
        print(f"{name:11} req/s per round: {', '.join(f'{v:,.0f}' for v in values)}")

    def ratio(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(rates[a], rates[b], strict=True))

    print(f"healthz / bare healthz: {ratio('healthz', 'bare'):.2f}")
    print(f"bare, {size:,} bytes / bare healthz: {ratio('bare_bytes', 'bare'):.2f}")
    for name in ("top", "around", "around_all"):
        print(f"{name} / healthz: {ratio(name, 'healthz'):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
