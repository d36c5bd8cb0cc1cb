"""Model-based test of boards of kinds (CONTRACT.md, "Boards of a course, a
track or a skill") against a pure-Python model.

A hypothesis state machine defines kinds (before and after completions, in
two time zones, by every metric), deletes them and defines them again,
records tagged completions, voids and restores them, hides and erases
learners, under either tie policy. After every step every board of every
defined kind (the week of each recorded completion, in the kind's zone)
equals the model, scores and order (under `first`, a sum's tie time is
the latest completion that counts, `best`'s the earliest giving the best),
verify agrees, a deleted kind's boards are gone from Redis, and the
enumerated invariants hold (tests/invariants.py: no table nor key names an
erased learner; no public read shows a hidden or erased one).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import rule, run_state_machine_as_test

from laurels.board import BoardMissing
from laurels.core.errors import DomainError
from laurels.core.seasons import Season, parse_season, season_of
from laurels.core.validation import ProfileIn
from laurels.process.settings import Settings
from tests import deadlines
from tests.helpers import NO_EXPLAIN, model_examples
from tests.invariants import check_erased_everywhere, check_hidden_nowhere
from tests.store_machine import StoreMachine

pytestmark = pytest.mark.slow

START = parse_season("2026-W47", zone="UTC").starts_at
NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)  # W47 still takes late completions (grace)
MINUTES = [0, 30, 720, 10079]  # the last is W48 in Auckland (UTC+13): two local weeks
TAGS = ["course:a", "course:b", "track:x"]
ZONES = ["UTC", "Pacific/Auckland"]
USERS = range(1, 6)


@dataclass
class Done:
    cid: str
    uid: int
    points: int
    at: datetime
    tags: tuple[str, ...]
    counted: bool = True


@dataclass
class Model:
    kinds: dict[str, tuple[str, str]] = field(default_factory=dict)  # kind: (metric, zone)
    done: list[Done] = field(default_factory=list)
    hidden: set[int] = field(default_factory=set)
    erased: set[int] = field(default_factory=set)
    gone: set[str] = field(default_factory=set)  # season names of deleted kinds' boards

    def seasons(self, kind: str) -> list[Season]:
        metric, zone = self.kinds[kind]
        return sorted({season_of(d.at, "week", zone=zone).on(tag, metric)  # type: ignore[arg-type]
                       for d in self.done for tag in d.tags if tag.startswith(kind + ":")},
                      key=lambda s: s.name)

    def standings(self, season: Season) -> dict[int, tuple[int, datetime]]:
        """Every learner on the season's board, hidden ones too: their score
        and their tie time under `first`."""
        counted: dict[int, list[Done]] = {}
        for d in self.done:
            if (d.counted and d.uid not in self.erased and season.board in d.tags
                    and season.contains(d.at)):
                counted.setdefault(d.uid, []).append(d)
        out = {}
        for uid, ds in counted.items():
            if season.metric == "best":
                score = max(d.points for d in ds)
                tie = min(d.at for d in ds if d.points == score)
            else:
                score = len(ds) if season.metric == "completions" else sum(d.points for d in ds)
                tie = max(d.at for d in ds)
            out[uid] = (score, tie)
        return out

    def board(self, season: Season, policy: str) -> list[tuple[int, int]]:
        """The season's public board in order: (user id, score)."""
        rows = [(-score, tie if policy == "first" else START, uid)
                for uid, (score, tie) in self.standings(season).items() if uid not in self.hidden]
        return [(uid, -neg) for neg, _, uid in sorted(rows)]


class KindsMachine(StoreMachine):
    policy: str

    def __init__(self) -> None:
        super().__init__()
        self.svc = self.rt.derive(clock=lambda: NOW, tie_policy=self.policy)
        self.model = Model()
        self.n = 0

    @rule(kind=st.sampled_from(["course", "track"]),
          metric=st.sampled_from(["points", "completions", "best"]),
          zone=st.sampled_from(ZONES))
    def define(self, kind: str, metric: str, zone: str) -> None:
        async def work() -> None:
            was = self.model.kinds.get(kind)
            try:
                await self.svc.board_kinds.define(kind, {"metric": metric, "time_zone": zone})
            except DomainError as exc:
                assert exc.code == "kind_conflict" and was is not None and was != (metric, zone)
                return
            assert was is None or was == (metric, zone)
            self.model.kinds[kind] = (metric, zone)
            self.model.gone -= {s.name for s in self.model.seasons(kind)}
        self._do(f"define {kind} {metric} {zone}", work)

    @rule(kind=st.sampled_from(["course", "track"]))
    def delete(self, kind: str) -> None:
        async def work() -> None:
            deleted = await self.svc.board_kinds.delete(kind)
            assert deleted == (kind in self.model.kinds)
            if deleted:
                self.model.gone |= {s.name for s in self.model.seasons(kind)}
                del self.model.kinds[kind]
        self._do(f"delete {kind}", work)

    @rule(batch=st.lists(st.tuples(st.sampled_from(list(USERS)), st.sampled_from([2, 3, 8]),
                                   st.sampled_from(MINUTES), st.sets(st.sampled_from(TAGS))),
                         min_size=1, max_size=4))
    def record(self, batch: list[tuple[int, int, int, set[str]]]) -> None:
        """A batch of 1 to 4 completions (several of one learner: sums,
        bests and tie times have something to choose from)."""
        items = []
        for uid, points, minute, tags in batch:
            self.n += 1
            items.append(Done(f"k{self.n}", uid, points, START + timedelta(minutes=minute),
                              tuple(sorted(tags))))

        async def work() -> None:
            outcomes = await self.svc.ingestor.record([{
                "completion_id": d.cid, "user_id": d.uid, "points": d.points,
                "completed_at": d.at.isoformat(), "tags": list(d.tags)} for d in items])
            for d, outcome in zip(items, outcomes, strict=True):
                if d.uid in self.model.erased:
                    assert outcome.status == "rejected" and outcome.code == "user_erased"
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

    @rule(uid=st.sampled_from(list(USERS)), hidden=st.booleans())
    def visibility(self, uid: int, hidden: bool) -> None:
        if uid in self.model.erased:
            return

        async def work() -> None:
            await self.svc.learners.update(uid, ProfileIn(
                visibility="hidden" if hidden else "public"))
            (self.model.hidden.add if hidden else self.model.hidden.discard)(uid)
        self._do(f"{'hide' if hidden else 'show'} {uid}", work)

    @rule(uid=st.sampled_from(list(USERS)))
    def erase(self, uid: int) -> None:
        async def work() -> None:
            await self.svc.learners.erase(uid)
            self.model.erased.add(uid)
        self._do(f"erase {uid}", work)

    async def read(self, season: Season) -> list[tuple[int, int]]:
        for _ in range(200):
            try:
                body = await self.svc.reads.top(season, 1000)
                return [(e["user_id"], e["score"]) for e in body["entries"]]
            except DomainError as exc:
                assert exc.code == "rebuilding", exc
                await asyncio.sleep(0.05)
        raise AssertionError(f"{season.name} was never built")

    async def check(self) -> None:
        await self.svc.projector.drain(min_age_seconds=0)
        for kind in sorted(self.model.kinds):
            for season in self.model.seasons(kind):
                assert await self.read(season) == self.model.board(season, self.policy), \
                    season.name
                if self.policy == "first":  # every tie time, hidden learners' too
                    want = {u: season.offset_us(tie)
                            for u, (_, tie) in self.model.standings(season).items()}
                    got = await self.svc.board.standings_of(season, list(want))
                    assert {s.user_id: s.last_ts for s in got} == want, season.name
                assert (await self.svc.verifier.verify(season)).consistent, season.name
        for name in sorted(self.model.gone):
            with pytest.raises(BoardMissing):
                await self.svc.board.top(parse_season(name, zone="UTC"), 1)
        for kind in ("course", "track"):  # a deleted kind leaves no key, tombstones included
            if kind not in self.model.kinds:
                left = [key async for key in self.svc.redis.scan_iter(
                    match=f"{self.svc.keys.prefix}:{{{kind}:*")]
                assert not left, left
        await check_erased_everywhere(self.svc, self.model.erased)
        await check_hidden_nowhere(self.svc, self.model.hidden | self.model.erased)



@pytest.mark.parametrize("policy", ["shared", "first"])
def test_boards_of_kinds_match_the_model(settings: Settings, policy: str) -> None:
    machine = type("KindsMachine_", (KindsMachine,), {"cfg": settings, "policy": policy})
    run_state_machine_as_test(machine, settings=hsettings(
        max_examples=model_examples(15), stateful_step_count=25, deadline=deadlines.MODEL_KINDS,
        phases=NO_EXPLAIN,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))
