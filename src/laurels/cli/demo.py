"""`laurels demo`: learners with names completing tutorials at a steady pace,
with every feature on from the first minute: the day, month and all-time
boards, classes (groups), and weekly leagues whose last week is already
decided, so the learner the demo links to has a class, a cohort, and a
result from last week."""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from laurels.core.errors import DomainError
from laurels.core.seasons import Season, season_of
from laurels.core.shapes import League
from laurels.core.validation import ProfileIn
from laurels.process.settings import Secrets, Settings
from laurels.runtime import Runtime

log = logging.getLogger("laurels.demo")

FIRST = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia",
         "Linus", "Margaret", "Dennis", "Katherine", "John", "Hedy", "Tim", "Sophie", "Guido",
         "Anita", "Niklaus", "Shafi", "Leslie", "Karen", "Bjarne", "Yukihiro", "Annie"]
LAST = "ABCDEFGHIJKLMNOPRSTVWZ"
# The learner whose link the demo prints: public (demo.seed), keen, in a class.
FEATURED = 7
CLASSES = (("class-7a", "Class 7A"), ("class-7b", "Class 7B"), ("class-8c", "Class 8C"))
# Leagues small enough that a cohort fits on a screen and shows both zones.
DEMO_LEAGUES = {"league_tiers": "bronze,silver,gold", "league_size": 12,
                "league_promote": "3", "league_demote": "3", "league_grace_seconds": 0}


def demo_settings(settings: Settings, weeks: int | None = None) -> Settings:
    """The settings with every feature on: all periods, leagues (unless
    LAURELS_LEAGUE_TIERS chose others); without `weeks`, a late grace that
    still accepts last week's completions (even those of its first day, on
    a Sunday), which it plays; with `weeks`, the configured late grace (the
    past weeks are recorded through `backfill_grace`)."""
    update: dict[str, object] = {"periods": "week,day,month,all"}
    if weeks is None:
        update["late_grace_seconds"] = max(settings.late_grace_seconds, 15 * 86400)
    return _with_leagues(settings, update)


def backfill_grace(weeks: int) -> int:
    """A late grace that accepts `weeks` past weeks' completions, the first
    one's first day included."""
    return (7 * weeks + 8) * 86400


def _with_leagues(settings: Settings, update: dict[str, object]) -> Settings:
    if not settings.leagues:
        update.update(DEMO_LEAGUES)
    return Settings.model_validate({**settings.model_dump(), **update})


def local_url(host: str, port: int) -> str:
    """Where this process reaches the server it serves."""
    if host in ("", "0.0.0.0"):  # noqa: S104 - a listen address, read here
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def featured(learners: int) -> int:
    return min(FEATURED, learners)


async def seed(rt: Runtime, learners: int, rnd: random.Random) -> None:
    """Names and visibility for the demo learners (a few anonymous or hidden)."""
    for uid in range(1, learners + 1):
        vis = ("public" if uid == featured(learners) else "anonymous" if uid % 23 == 0
               else "hidden" if uid % 31 == 0 else "public")
        name = f"{rnd.choice(FIRST)} {rnd.choice(LAST)}."
        await rt.learners.update(uid, ProfileIn(display_name=name, visibility=vis))


# Courses and the track each belongs to: every demo completion is of one
# (docs/boards.md); the kinds are defined by `kinds` below.
TRACKS = {"python-101": "programming", "sql-basics": "data", "statistics": "data",
          "web-design": "programming"}
COURSES = sorted(TRACKS)


async def kinds(rt: Runtime) -> None:
    """The demo's board kinds: courses ranked by points, tracks by how many
    tutorials were finished."""
    await rt.board_kinds.define("course", {"title": "Courses", "periods": ["week", "all"]})
    await rt.board_kinds.define("track", {"title": "Tracks", "metric": "completions"})


async def classes(base_url: str, ingest_token: str, learners: int) -> None:
    """A few classes, through the ingest API as a platform makes them; the
    featured learner is in Class 7B."""
    from laurels.client import AsyncClient

    async with AsyncClient(base_url, ingest_token) as api:
        for n, (group_id, name) in enumerate(CLASSES):
            await api.put_group(group_id, name=name, access="members")
            members = [uid for uid in range(1, learners + 1) if uid % len(CLASSES) == n]
            if n == 1 and featured(learners) not in members:
                members.append(featured(learners))
            await api.change_members(group_id, add=members)


class Simulation:
    """Skewed activity (some learners are much keener) at a steady pace."""

    def __init__(self, rt: Runtime, learners: int, rnd: random.Random) -> None:
        self.rt = rt
        self.learners = learners
        self.rnd = rnd
        self.counter = itertools.count(1)
        self.run = f"{int(time.time())}"
        self.weights = [1 / (1 + (uid % 40)) for uid in range(1, learners + 1)]
        self.weights[featured(learners) - 1] = 1 / 3  # their page moves too
        self.decided: Season | None = None  # last week, once its leagues are decided

    def one(self, uid: int | None = None, at: datetime | None = None) -> dict[str, Any]:
        if uid is None:
            uid = self.rnd.choices(range(1, self.learners + 1), self.weights)[0]
        course = COURSES[uid % len(COURSES)] if uid % 5 else self.rnd.choice(COURSES)
        item: dict[str, Any] = {"completion_id": f"demo-{self.run}-{next(self.counter)}",
                                "user_id": uid, "points": self.rnd.choice([1, 1, 2, 3, 5, 8]),
                                "tags": [f"course:{course}", f"track:{TRACKS[course]}"]}
        if at is not None:
            item["completed_at"] = at.isoformat()
        return item

    async def burst(self, n: int) -> None:
        """So the board has a shape before anyone looks. The featured learner
        joins this week's league first (their cohort is the first of their
        tier's), then, at once, learners of their tier (by last week's
        results) fill the rest of that cohort, so it never shows them alone
        whoever the random burst happens to pick; the printed link waits
        until their cohort's board shows them."""
        who = featured(self.learners)
        week = season_of(datetime.now(UTC), "week", zone=self.rt.settings.time_zone)
        await self.rt.ingestor.record([self.one(who)])
        company = await self.same_tier(who)
        if company:  # joins in the featured learner's cohort, after them
            await self.rt.ingestor.record([self.one(uid) for uid in company])
        await self.rt.ingestor.record([self.one() for _ in range(n)])
        if company:
            await self.readable(week, _with_company, "the featured learner's cohort")

    async def same_tier(self, who: int) -> list[int]:
        """Learners who play this week in the tier `who` plays in (the one
        last week's decision gave them), as many as share a cohort with them."""
        if self.decided is None:
            return []
        tiers: dict[int, str] = {}
        for uid in range(1, self.learners + 1):
            results = (await self.rt.leagues.history(uid, 1, None))[0]["results"]
            if results and results[0]["season"] == self.decided.name:
                tiers[uid] = results[0]["new_tier"]
        if who not in tiers:
            return []
        same = [uid for uid, tier in tiers.items() if tier == tiers[who] and uid != who]
        return same[:self.rt.settings.league_size - 1]

    async def past_weeks(self, weeks: int, n: int, close: bool) -> None:
        """The `weeks` weeks before this one, oldest first, each recorded in
        one batch (so its league has everyone) and then decided: a backfill
        holds each week's decision until that week is recorded, so no week
        is decided while its completions still arrive, and each week's
        cohorts are placed by the tiers the week before gave. The featured
        learner is the best of each week: a tier up every week. With
        `close` (`laurels demo --weeks N`), the weeks are recorded through a
        backfill that accepts them all (`backfill_grace`), and then each
        season whose grace is over by the served settings is closed, as the
        service would close it: history, tiers and results show, and every
        closed week says `closed`."""
        now = datetime.now(UTC)
        record = (self.rt.derive(late_grace_seconds=backfill_grace(weeks)).ingestor if close
                  else self.rt.ingestor)
        for back in range(weeks, 0, -1):
            week = season_of(now - timedelta(days=7 * back), "week",
                             zone=self.rt.settings.time_zone)
            await record.record(self.play(week, n))
            await self.rt.leagues.decide_due()  # this week's, the ones before it done
            self.decided = week
        if close:  # once all are in: a month spans weeks, and a closed one takes no more
            await self.rt.lifecycle.finalize_due()  # (by the served late grace)
        if self.decided is not None:
            await self.readable(self.decided)

    def play(self, week: Season, n: int) -> list[dict[str, Any]]:
        """`n` completions at random instants of a past week, and the
        featured learner's, 10 points above everyone's best."""
        span_seconds = (week.ends_at - week.starts_at).total_seconds() - 1

        def when() -> datetime:
            return week.starts_at + timedelta(seconds=self.rnd.uniform(0, span_seconds))

        items = [self.one(at=when()) for _ in range(n)]
        scores: Counter[int] = Counter()
        for i in items:
            scores[i["user_id"]] += i["points"]
        top = self.one(featured(self.learners), when())
        top["points"] = max(scores.values(), default=0) + 10
        return [top, *items]

    async def readable(self, week: Season,
                       ready: Callable[[League], bool] = lambda _: True,
                       what: str = "the boards") -> None:
        """A week's first completions may build its boards from PostgreSQL
        (projection/heal.py), in the background, and leave the rest to the projector:
        wait (at most 30 s) until the featured learner's league of it answers
        and is `ready`, so the printed link opens without a `503 rebuilding`
        (the page would retry, but say so) and shows what the demo recorded."""
        for _ in range(300):
            try:
                if ready(await self.rt.leagues.learner(featured(self.learners), week)):
                    return
            except DomainError as exc:
                if exc.code != "rebuilding":
                    raise
            await asyncio.sleep(0.1)
        log.warning("%s of %s: not ready after 30 s", what, week.name)

    async def steady(self, per_second: float) -> None:
        while True:
            await self.rt.ingestor.record([self.one()])
            await asyncio.sleep(self.rnd.expovariate(per_second))


def _with_company(league: League) -> bool:
    """A league placed in a cohort whose board shows others too."""
    return league["status"] == "placed" and len(league["entries"]) > 1


@dataclass(frozen=True)
class Plan:
    """What the demo plays: how many learners, completions a second, and
    past weeks (None: last week, decided, not closed)."""

    learners: int
    rate: float
    weeks: int | None = None


async def run_demo(settings: Settings, secrets: Secrets, database_url: str, redis_url: str,
                   plan: Plan, say: Callable[[str], None]) -> None:
    """Serve the app on uvicorn, seed named learners, play past weeks (last
    week, decided; with `weeks`, that many, each closed too), then simulate
    them until the server stops (Ctrl-C)."""
    learners, rate, weeks = plan.learners, plan.rate, plan.weeks
    import uvicorn

    from laurels.api import create_app, serving_app
    from laurels.api import server as server_mod
    from laurels.api.auth import mint
    from laurels.core import logs
    from laurels.db import migrate

    settings = demo_settings(settings, weeks)
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
    await kinds(rt)
    await classes(local_url(settings.host, settings.port), secrets.ingest_token, learners)
    simulation = Simulation(rt, learners, rnd)
    if weeks:
        say(f"laurels demo: playing the {weeks} past week{'s' if weeks > 1 else ''}, "
            "oldest first (each closed, its leagues decided)")
    await simulation.past_weeks(weeks or 1, 400, close=weeks is not None)
    await simulation.burst(400)
    sim = asyncio.create_task(simulation.steady(rate))
    url = f"http://{settings.host}:{settings.port}/"
    who = featured(learners)
    token = mint(secrets.user_token_secret, who, 7 * 86400)
    say(f"laurels demo: the live board is at {url}")
    say(f"laurels demo: learner {who} sees their rank, class, courses and league at "
        f"{url}#token={token}")
    say(f"laurels demo: the operator console is at {url}admin; the demo's tokens (ingest, "
        f"admin) are in {settings.data_dir / 'secrets.json'}, made afresh at each start")
    say("laurels demo: Ctrl-C stops it")
    await serving
    sim.cancel()
