"""Two builds of laurels against each other, in alternating rounds: did a
change make a line faster? Each side is a `laurels serve` from its own
install (another checkout's venv, e.g. a clone at the commit before), on a
database and a key prefix of its own, so neither's background work lands
on the other; the order flips each round.

    git clone -q . /tmp/before && git -C /tmp/before checkout -q HEAD~1
    python3 -m venv /tmp/before/.venv && /tmp/before/.venv/bin/pip install -q -e /tmp/before
    .venv/bin/python bench/versus.py /tmp/before/.venv/bin/laurels            # single posts
    .venv/bin/python bench/versus.py /tmp/before/.venv/bin/laurels --get /healthz
    .venv/bin/python bench/versus.py .venv/bin/laurels                        # A/A: the spread

Printed per round and as medians: requests a second, wrk's p99, and the CPU
a request of the serving process and of PostgreSQL. Run it A/A (the same
build on both sides) first: on a shared 2-core machine the second side ran
about 5% slower in one such run, so a difference below the A/A spread is
not one. --pin puts wrk on CPU 0 and both servers on CPU 1. Uses
$LAURELS_BENCH_DATABASE_URL and $LAURELS_BENCH_REDIS_URL (loopback only);
drops its databases and deletes its keys at the end.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
import psycopg  # noqa: E402
import redis  # noqa: E402
from psycopg import sql  # noqa: E402

import bench.support as support  # noqa: E402
from bench.stack import run_posts  # noqa: E402

Figures = tuple[float, float, float, float]  # rate, p99 ms, laurels us, PostgreSQL us


def one_round(args: argparse.Namespace, svc: support.Service, work: Path, r: int) -> Figures:
    proc = psutil.Process(svc.proc.pid)
    before, served = support.cpu_by_process(), sum(proc.cpu_times()[:2])
    if args.get:
        load = support.wrk(svc.base_url + args.get, svc.proc.pid, args.seconds)
        if load.errors:
            raise support.BenchError(f"{load.errors} non-2xx answers")
        rate, p99 = load.rps, load.p99
    else:
        rate, p99 = run_posts(svc, "", work, args.seconds, r)
    after, served = support.cpu_by_process(), sum(proc.cpu_times()[:2]) - served
    done = rate * args.seconds
    return rate, p99, 1e6 * served / done, 1e6 * (after["postgres"] - before["postgres"]) / done


def pin(services: dict[str, support.Service]) -> None:
    """wrk (this process's children) on CPU 0, the servers on CPU 1."""
    os.sched_setaffinity(0, {0})
    for svc in services.values():
        for thread in psutil.Process(svc.proc.pid).threads():
            os.sched_setaffinity(thread.id, {1})


def report(figures: dict[str, list[Figures]]) -> None:
    medians = {side: [statistics.median(f[i] for f in rows) for i in range(4)]
               for side, rows in figures.items()}
    for side, (rate, p99, ours, pg) in medians.items():
        support.log(f"{side} (medians): {rate:,.0f}/s, p99 {p99:.1f} ms, laurels {ours:.1f} "
                    f"us, PostgreSQL {pg:.1f} us a request")
    support.log(f"after / before: rate {medians['after'][0] / medians['before'][0]:.2f}, "
                f"laurels' CPU {medians['after'][2] / medians['before'][2]:.2f}, "
                f"PostgreSQL's {medians['after'][3] / medians['before'][3]:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", help="the other build's `laurels` executable")
    parser.add_argument("--after", default=str(ROOT / ".venv" / "bin" / "laurels"))
    parser.add_argument("--get", metavar="PATH", help="wrk GETs of PATH instead of posts")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--pin", action="store_true")
    args = parser.parse_args(argv)
    admin = os.environ.get("LAURELS_BENCH_DATABASE_URL", support.DEFAULT_DATABASE_URL)
    redis_url = os.environ.get("LAURELS_BENCH_REDIS_URL", support.DEFAULT_REDIS_URL)
    support.loopback_only(admin, "LAURELS_BENCH_DATABASE_URL")
    support.loopback_only(redis_url, "LAURELS_BENCH_REDIS_URL")
    work = Path(tempfile.mkdtemp(prefix="laurels-versus-"))
    made: list[tuple[str, str]] = []
    services: dict[str, support.Service] = {}
    try:
        for side, binary in (("before", args.before), ("after", args.after)):
            name, prefix = f"laurels_versus_{secrets.token_hex(4)}", f"versus{secrets.token_hex(3)}"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            made.append((name, prefix))
            support.laurels_bin = lambda binary=binary: str(Path(binary).resolve())  # type: ignore[assignment]
            services[side] = support.start_service(admin.rsplit("/", 1)[0] + f"/{name}",
                                                   redis_url, prefix, work, name=side)
        if args.pin:
            pin(services)
        figures: dict[str, list[Figures]] = {s: [] for s in services}
        for r in range(args.rounds):
            for side in list(services)[::1 if r % 2 == 0 else -1]:
                figures[side].append(got := one_round(args, services[side], work, r))
                support.log(f"round {r + 1} {side}: {got[0]:,.0f}/s, p99 {got[1]:.1f} ms, CPU "
                            f"a request: laurels {got[2]:.1f} us, PostgreSQL {got[3]:.1f} us")
        report(figures)
    finally:
        for svc in services.values():
            svc.proc.terminate()
            svc.proc.wait(20)
        keys = redis.Redis.from_url(redis_url)
        for name, prefix in made:
            for key in keys.scan_iter(f"{prefix}*", count=1000):
                keys.delete(key)
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(name)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
