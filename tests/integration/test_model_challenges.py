"""Model-based test of challenges (issue 67; CONTRACT.md, "Challenges")
against a pure-Python model, with their writers split at their pause points.

A hypothesis state machine defines challenges (open or joined, capped or
not, on the whole board or a tag, by every metric), changes and deletes
them, joins learners, records completions in and out of their windows,
voids and restores, hides, suspends and erases learners, moves the clock
through the windows, decides them, and loses every Redis key of the
deployment (a Redis back with nothing: a challenge has no projection to
lose). Two moves are split: a join held at `challenge_joining` while the
learner is erased, and a decision held at `challenge_deciding` while an
erasure, a void or a hiding runs (they wait for the challenge's row, or
pass it, as docs/concurrency.md says). After every step every challenge's
board equals the model (live: what counts now; decided: the frozen results
less whom a board may no longer show), a decided one never moves, and the
enumerated invariants hold (tests/invariants.py: no table, key or event
names an erased learner; no public read shows a hidden one).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import rule, run_state_machine_as_test

from laurels.core import failpoints
from laurels.core.errors import DomainError
from laurels.core.seasons import season_of
from laurels.core.validation import ProfileIn
from laurels.process.settings import Settings
from tests import deadlines
from tests.helpers import NO_EXPLAIN, model_examples
from tests.invariants import (
    blocked_or_done,
    check_erased_everywhere,
    check_hidden_nowhere,
)
from tests.store_machine import StoreMachine

pytestmark = pytest.mark.slow

START = datetime(2026, 11, 23, tzinfo=UTC)  # a Monday: every window inside its week
CLOCKS = [START - timedelta(hours=1), START + timedelta(hours=30),
          START + timedelta(hours=60), START + timedelta(hours=80)]
WINDOWS = [(START, START + timedelta(hours=48)),
           (START + timedelta(hours=24), START + timedelta(hours=72))]
MINUTES = [0, 600, 1500, 2000, 2900, 4300]
USERS = range(1, 6)
IDS = ["c1", "c2"]
REWARDS = [{"from": 1, "to": 1, "reward": "gold"}, {"from": 2, "to": 3, "reward": "silver"}]


@dataclass
class Done:
    cid: str
    uid: int
    points: int
    at: datetime
    tags: tuple[str, ...]
    counted: bool = True


@dataclass
class Defined:
    board: str
    metric: str
    starts: datetime
    ends: datetime
    join: str
    max_size: int | None
    notify: bool = False
    joins: dict[int, datetime] = field(default_factory=dict)
    results: list[tuple[int, int, int, str | None]] | None = None  # (uid, rank, score, reward)


@dataclass
class Model:
    challenges: dict[str, Defined] = field(default_factory=dict)
    done: list[Done] = field(default_factory=list)
    hidden: set[int] = field(default_factory=set)  # hidden or suspended
    erased: set[int] = field(default_factory=set)

    def standings(self, c: Defined) -> dict[int, tuple[int, datetime]]:
        counted: dict[int, list[Done]] = {}
        for d in self.done:
            joined = c.joins.get(d.uid)
            if (d.counted and d.uid not in self.erased and c.starts <= d.at < c.ends
                    and (c.board == "global" or c.board in d.tags)
                    and (c.join == "open" or (joined is not None and d.at >= joined))):
                counted.setdefault(d.uid, []).append(d)
        out = {}
        for uid, ds in counted.items():
            if c.metric == "best":
                score = max(d.points for d in ds)
                tie = min(d.at for d in ds if d.points == score)
            else:
                score = len(ds) if c.metric == "completions" else sum(d.points for d in ds)
                tie = max(d.at for d in ds)
            out[uid] = (score, tie)
        return out

    def live(self, c: Defined, policy: str) -> list[tuple[int, int, int]]:
        """The public board now: (user id, rank, score) in order."""
        rows = sorted((-score, tie if policy == "first" else START, uid)
                      for uid, (score, tie) in self.standings(c).items()
                      if uid not in self.hidden)
        out = []
        for i, (neg, _, uid) in enumerate(rows):
            rank = i + 1 if policy == "first" else 1 + sum(1 for r in rows if r[0] < neg)
            out.append((uid, rank, -neg))
        return out


def reward_of(rank: int) -> str | None:
    return next((r["reward"] for r in REWARDS if r["from"] <= rank <= r["to"]), None)


class ChallengesMachine(StoreMachine):
    policy: str

    def __init__(self) -> None:
        super().__init__()
        self.now = CLOCKS[0]
        self.svc = self.rt.derive(clock=lambda: self.now, tie_policy=self.policy)
        self.model = Model()
        self.n = 0



    # -- the challenges' writers ---------------------------------------------------------

    @rule(cid=st.sampled_from(IDS), board=st.sampled_from(["global", "course:a"]),
          metric=st.sampled_from(["points", "completions", "best"]),
          window=st.sampled_from(range(len(WINDOWS))), join=st.sampled_from(["open", "required"]),
          capped=st.booleans(), notify=st.booleans())
    def define(self, cid: str, board: str, metric: str, window: int, join: str,
               capped: bool, notify: bool) -> None:
        starts, ends = WINDOWS[window]
        max_size = 2 if capped and join == "required" else None
        body = {"title": cid, "board": board, "metric": metric, "starts_at": starts.isoformat(),
                "ends_at": ends.isoformat(), "join": join, "max_size": max_size,
                "rewards": REWARDS, "notify": notify}

        async def work() -> None:
            was = self.model.challenges.get(cid)
            refused = self.refusal(was, (board, metric, starts, ends, join, max_size,
                                         notify))
            try:
                await self.svc.challenges.define(cid, body)
            except DomainError as exc:
                assert exc.code == refused, (exc.code, exc.detail, refused)
                return
            assert refused is None, refused
            if was is None:
                self.model.challenges[cid] = Defined(board, metric, starts, ends, join, max_size,
                                                     notify)
            else:
                was.board, was.metric, was.starts, was.ends = board, metric, starts, ends
                was.join, was.max_size, was.notify = join, max_size, notify
        self._do(f"define {cid} {board} {metric} {window} {join} {max_size}", work)

    def refusal(self, was: Defined | None, new: tuple[Any, ...]) -> str | None:
        """What the service must answer a definition: None (done) or a code."""
        board, metric, starts, ends, join, max_size, notify = new
        if was is None:
            return "validation_error" if ends <= self.now else None
        same = (was.board, was.metric, was.starts, was.join, was.max_size, was.notify) == (
            board, metric, starts, join, max_size, notify)
        if was.results is not None:
            return None if same and ends == was.ends else "challenge_conflict"
        if self.now >= was.starts and not (same and (ends == was.ends or (
                ends > was.ends and self.now < was.ends))):
            return "challenge_conflict"
        if max_size is not None and len(was.joins) > max_size:
            return "challenge_conflict"
        return None

    @rule(cid=st.sampled_from(IDS))
    def delete(self, cid: str) -> None:
        async def work() -> None:
            try:
                await self.svc.challenges.delete(cid)
            except DomainError as exc:
                assert exc.code == "not_found" and cid not in self.model.challenges
                return
            del self.model.challenges[cid]
        self._do(f"delete {cid}", work)

    async def _join(self, cid: str, uid: int) -> None:
        c = self.model.challenges.get(cid)
        try:
            got = await self.svc.challenges.join(cid, uid)
        except DomainError as exc:
            assert c is None or uid in self.model.erased or (
                exc.code == "challenge_ended" and self.now >= c.ends) or (
                exc.code == "challenge_full" and len(c.joins) >= (c.max_size or 10**9)), exc
            return
        assert c is not None and uid not in self.model.erased
        if c.join == "required":
            c.joins.setdefault(uid, self.now)
            assert got["joined_at"] is not None
        else:
            assert got["joined_at"] is None

    @rule(cid=st.sampled_from(IDS), uid=st.sampled_from(list(USERS)))
    def join(self, cid: str, uid: int) -> None:
        self._do(f"join {cid} {uid}", lambda: self._join(cid, uid))

    @rule(cid=st.sampled_from(IDS), uid=st.sampled_from(list(USERS)))
    def join_while_erased(self, cid: str, uid: int) -> None:
        """A join held under the challenge's row while the learner is
        erased: the erasure waits for the join, then deletes it."""
        c = self.model.challenges.get(cid)
        if (c is None or c.join != "required" or uid in c.joins or uid in self.model.erased
                or self.now >= c.ends or len(c.joins) >= (c.max_size or 10**9)):
            return

        async def work() -> None:
            with failpoints.hold("challenge_joining") as held:
                joining = asyncio.ensure_future(self.svc.challenges.join(cid, uid))
                await held.reached()
                erasing = asyncio.ensure_future(self.svc.learners.erase(uid))
                await blocked_or_done(self.svc, erasing)
                assert not erasing.done(), "the erasure waits for the join's row"
                held.release()
                await joining
                await erasing
            self.model.erased.add(uid)
        self._do(f"join {cid} {uid} while erased", work)

    @rule(cid=st.sampled_from(IDS), during=st.sampled_from(["erase", "void", "hide"]),
          pick=st.integers(0, 10**6))
    def decide(self, cid: str, during: str, pick: int) -> None:
        """The decision, held after it locked the challenge while another
        writer runs: an erasure waits for it (and then takes the learner
        out of the results); a void or a hiding passes it and changes
        nothing of the decided results."""
        c = self.model.challenges.get(cid)
        if c is None or c.results is not None or self.now < c.ends:
            return
        uid = USERS[pick % len(USERS)]
        alive = [d for d in self.model.done if d.uid not in self.model.erased]

        async def work() -> None:
            with failpoints.hold("challenge_deciding") as held:
                deciding = asyncio.ensure_future(self.svc.decider.decide(cid))
                await held.reached()
                if during == "erase":  # waits for the decision's row
                    other = asyncio.ensure_future(self.svc.learners.erase(uid))
                    await blocked_or_done(self.svc, other)
                    assert not other.done(), "the erasure waits for the decision"
                elif during == "void" and alive:  # passes: the decision reads it
                    await self.svc.corrections.void(alive[pick % len(alive)].cid, "model")
                    alive[pick % len(alive)].counted = False
                elif uid not in self.model.erased:
                    await self.svc.learners.update(uid, ProfileIn(visibility="hidden"))
                    self.model.hidden.add(uid)
                frozen = [(u, r, s, reward_of(r)) for u, r, s in self.model.live(c, self.policy)]
                held.release()
                assert await deciding
                if during == "erase":
                    await other
                    self.model.erased.add(uid)
            c.results = frozen
        self._do(f"decide {cid} during {during} {pick}", work)

    # -- the others' writers, and time ---------------------------------------------------

    @rule(batch=st.lists(st.tuples(st.sampled_from(list(USERS)), st.sampled_from([2, 3, 8]),
                                   st.sampled_from(MINUTES), st.booleans()),
                         min_size=1, max_size=4))
    def record(self, batch: list[tuple[int, int, int, bool]]) -> None:
        items = []
        for uid, points, minute, tagged in batch:
            at = START + timedelta(minutes=minute)
            if at > self.now:
                continue
            self.n += 1
            items.append(Done(f"k{self.n}", uid, points, at, ("course:a",) if tagged else ()))
        if not items:
            return

        async def work() -> None:
            outcomes = await self.svc.ingestor.record([{
                "completion_id": d.cid, "user_id": d.uid, "points": d.points,
                "completed_at": d.at.isoformat(), "tags": list(d.tags)} for d in items])
            for d, outcome in zip(items, outcomes, strict=True):
                if d.uid in self.model.erased:
                    assert outcome.code == "user_erased"
                    continue
                assert outcome.status == "recorded", outcome
                self.model.done.append(d)
        self._do("record " + "; ".join(f"{d.cid} {d.uid} {d.points} {d.at:%d %H:%M} {d.tags}"
                                       for d in items), work)

    @rule(pick=st.integers(0, 10**6), void=st.booleans())
    def correct(self, pick: int, void: bool) -> None:
        alive = [d for d in self.model.done if d.uid not in self.model.erased]
        if not alive:
            return
        d = alive[pick % len(alive)]

        async def work() -> None:
            if void:
                await self.svc.corrections.void(d.cid, "model")
            else:
                await self.svc.corrections.restore(d.cid)
            d.counted = not void
        self._do(f"{'void' if void else 'restore'} {d.cid}", work)

    @rule(uid=st.sampled_from(list(USERS)), hidden=st.booleans(), suspend=st.booleans())
    def visibility(self, uid: int, hidden: bool, suspend: bool) -> None:
        if uid in self.model.erased:
            return

        async def work() -> None:
            if suspend:
                await self.svc.learners.suspend(uid, hidden, "model")
            else:
                await self.svc.learners.update(uid, ProfileIn(
                    visibility="hidden" if hidden else "public"))
            (self.model.hidden.add if hidden else self.model.hidden.discard)(uid)
        self._do(f"{'suspend' if suspend else 'visibility'} {uid} {hidden}", work)

    @rule(uid=st.sampled_from(list(USERS)))
    def erase(self, uid: int) -> None:
        async def work() -> None:
            await self.svc.learners.erase(uid)
            self.model.erased.add(uid)
        self._do(f"erase {uid}", work)

    @rule(step=st.sampled_from(range(1, len(CLOCKS))))
    def tick(self, step: int) -> None:
        """The clock moves on (never back)."""
        later = max(self.now, CLOCKS[step])

        async def work() -> None:
            self.now = later
        self._do(f"clock {later:%d %H:%M}", work)

    @rule()
    def watch(self) -> None:
        """The running challenges that notify looked at: their top10 and
        overtaken notifications (the invariants then hold them: none names
        a hidden or erased learner)."""
        async def work() -> None:
            await self.svc.decider.watch()
            async with self.rt.db.connection() as conn:
                cur = await conn.execute(
                    "SELECT user_id, data FROM notifications WHERE kind = 'top10'"
                    " AND season LIKE 'challenge:%%'")
                for row in await cur.fetchall():
                    c = self.model.challenges.get(row["data"]["challenge_id"])
                    assert c is None or c.notify, row  # only a challenge that notifies
        self._do("watch", work)

    @rule(uid=st.sampled_from(list(USERS)))
    def watch_while_erased(self, uid: int) -> None:
        """A look held after it read the top 100 (holding the challenge's
        row) while a learner in it is erased: the erasure waits, then takes
        out what the look wrote of them (a watch row, a notification)."""
        watched = [cid for cid, c in self.model.challenges.items()
                   if c.notify and c.results is None and c.starts <= self.now < c.ends]
        if not watched or uid in self.model.erased:
            return

        async def work() -> None:
            c = self.model.challenges[watched[0]]
            with failpoints.hold("challenge_looked") as held:
                looking = asyncio.ensure_future(self.svc.decider.look(watched[0], c.board))
                await held.reached()
                erasing = asyncio.ensure_future(self.svc.learners.erase(uid))
                await blocked_or_done(self.svc, erasing)
                assert not erasing.done(), "the erasure waits for the look"
                held.release()
                assert await looking == 1
                await erasing
            self.model.erased.add(uid)
        self._do(f"watch while {uid} is erased", work)

    @rule()
    def rebuild(self) -> None:
        """The week's whole board rebuilt and switched (a challenge's board
        is not in Redis: it moves with nothing of it)."""
        async def work() -> None:
            await self.svc.rebuilder.run(season_of(START, "week", zone="UTC"))
        self._do("rebuild the week", work)

    @rule()
    def lose_redis(self) -> None:
        """Redis comes back with nothing of this deployment (a fault)."""
        async def work() -> None:
            async for key in self.rt.redis.scan_iter(match=f"{self.rt.keys.prefix}:*"):
                await self.rt.redis.unlink(key)
        self._do("lose every key", work)

    # -- what must hold ------------------------------------------------------------------

    async def check(self) -> None:
        await self.svc.projector.drain(min_age_seconds=0)
        for cid, c in sorted(self.model.challenges.items()):
            body, _ = await self.svc.challenge_standings.board(cid, 1000, None)
            got = [(e["user_id"], e["rank"], e["score"], e["reward"]) for e in body["entries"]]
            if c.results is not None:
                want = [r for r in c.results
                        if r[0] not in self.model.hidden and r[0] not in self.model.erased]
                assert body["decided"] and got == want, (cid, got, want)
            elif self.now < c.starts:
                assert got == [] and body["total"] == 0
            else:
                want = [(u, r, s, None) for u, r, s in self.model.live(c, self.policy)]
                assert got == want, (cid, got, want)
            assert body["total"] == len(got)
            checked = await self.svc.challenge_checker.verify(cid)
            assert checked.consistent, checked.mismatches
        await check_erased_everywhere(self.svc, self.model.erased)
        await check_hidden_nowhere(self.svc, self.model.hidden | self.model.erased)



@pytest.mark.parametrize("policy", ["shared", "first"])
def test_challenges_match_the_model(settings: Settings, policy: str) -> None:
    machine = type("ChallengesMachine_", (ChallengesMachine,),
                   {"cfg": settings, "policy": policy})
    run_state_machine_as_test(machine, settings=hsettings(
        max_examples=model_examples(12), stateful_step_count=30,
        deadline=deadlines.MODEL_KINDS, phases=NO_EXPLAIN,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))
