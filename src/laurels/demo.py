"""`laurels demo`: learners with names completing tutorials at a steady pace."""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time

from laurels.runtime import Runtime
from laurels.validation import UserIn

log = logging.getLogger("laurels.demo")

FIRST = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia",
         "Linus", "Margaret", "Dennis", "Katherine", "John", "Hedy", "Tim", "Sophie", "Guido",
         "Anita", "Niklaus", "Shafi", "Leslie", "Karen", "Bjarne", "Yukihiro", "Annie"]
LAST = "ABCDEFGHIJKLMNOPRSTVWZ"


async def seed(rt: Runtime, learners: int, rnd: random.Random) -> None:
    """Names and visibility for the demo learners (a few anonymous or hidden)."""
    for uid in range(1, learners + 1):
        vis = "anonymous" if uid % 23 == 0 else "hidden" if uid % 31 == 0 else "public"
        name = f"{rnd.choice(FIRST)} {rnd.choice(LAST)}."
        await rt.learners.update(uid, UserIn(display_name=name, visibility=vis))


async def simulate(rt: Runtime, learners: int, per_second: float, rnd: random.Random,
                   warm_up: int = 400) -> None:
    """A burst so the board has a shape, then completions at a steady pace, forever."""
    counter = itertools.count(1)
    run = f"{int(time.time())}"
    # Skewed activity: some learners are much keener than others.
    weights = [1 / (1 + (uid % 40)) for uid in range(1, learners + 1)]

    def one() -> dict[str, object]:
        uid = rnd.choices(range(1, learners + 1), weights)[0]
        return {"completion_id": f"demo-{run}-{next(counter)}", "user_id": uid,
                "points": rnd.choice([1, 1, 2, 3, 5, 8])}

    await rt.ingestor.record([one() for _ in range(warm_up)])
    while True:
        await rt.ingestor.record([one()])
        await asyncio.sleep(rnd.expovariate(per_second))
