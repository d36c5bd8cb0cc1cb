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


class Simulation:
    """Skewed activity (some learners are much keener) at a steady pace."""

    def __init__(self, rt: Runtime, learners: int, rnd: random.Random) -> None:
        self.rt = rt
        self.learners = learners
        self.rnd = rnd
        self.counter = itertools.count(1)
        self.run = f"{int(time.time())}"
        self.weights = [1 / (1 + (uid % 40)) for uid in range(1, learners + 1)]

    def one(self) -> dict[str, object]:
        uid = self.rnd.choices(range(1, self.learners + 1), self.weights)[0]
        return {"completion_id": f"demo-{self.run}-{next(self.counter)}", "user_id": uid,
                "points": self.rnd.choice([1, 1, 2, 3, 5, 8])}

    async def burst(self, n: int) -> None:
        """So the board has a shape before anyone looks."""
        await self.rt.ingestor.record([self.one() for _ in range(n)])

    async def steady(self, per_second: float) -> None:
        while True:
            await self.rt.ingestor.record([self.one()])
            await asyncio.sleep(self.rnd.expovariate(per_second))
