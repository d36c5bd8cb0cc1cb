"""`laurels demo`: learners with names completing tutorials at a steady pace."""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from collections.abc import Callable

from laurels.runtime import Runtime
from laurels.settings import Secrets, Settings
from laurels.validation import ProfileIn

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
        await rt.learners.update(uid, ProfileIn(display_name=name, visibility=vis))


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


async def run_demo(settings: Settings, secrets: Secrets, database_url: str, redis_url: str,
                   learners: int, rate: float, say: Callable[[str], None]) -> None:
    """Serve the app on uvicorn, seed named learners, then simulate them until
    the server stops (Ctrl-C)."""
    import uvicorn

    from laurels import logs
    from laurels.api import create_app, serving_app
    from laurels.api import server as server_mod
    from laurels.api.auth import mint
    from laurels.db import migrate

    await migrate(database_url)
    rt = Runtime(settings, secrets, database_url, redis_url)
    api = serving_app(create_app(rt, migrate=False))
    server_mod.configure(settings)
    server = uvicorn.Server(uvicorn.Config(api, host=settings.host, port=settings.port,
                                           log_level="warning", **server_mod.options(settings)))
    logs.protect()
    serving = asyncio.create_task(server.serve())
    while not server.started:
        if serving.done():
            return
        await asyncio.sleep(0.05)
    rnd = random.Random()  # noqa: S311 - a simulation, not cryptography
    await seed(rt, learners, rnd)
    simulation = Simulation(rt, learners, rnd)
    await simulation.burst(400)
    sim = asyncio.create_task(simulation.steady(rate))
    url = f"http://{settings.host}:{settings.port}/"
    token = mint(secrets.user_token_secret, 7, 7 * 86400)
    say(f"laurels demo: the live board is at {url}")
    say(f"laurels demo: learner 7 sees their rank at {url}#token={token}")
    say("laurels demo: Ctrl-C stops it")
    await serving
    sim.cancel()
