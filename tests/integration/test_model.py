"""Model-based (stateful) test of the whole write/read path against a pure-Python model.

A hypothesis RuleBasedStateMachine applies operations: new, replayed and conflicting
completions (alone or in batches), name and visibility changes, erasures,
rebuilds, finalizing the season, losing every Redis key, and the week's
leagues: placing who joined, and deciding them. Each operation is
run against the real domain objects (PostgreSQL + Redis) and against a small
model of the contract's rules (docs/contract.md: Domain, Ranking, Writes, Reads,
notifications). After every step the public board, every learner's
neighbourhood, verify and every learner's notifications are compared with the
model, and the enumerated invariants hold (tests/invariants.py: no table of
the catalogue nor key of the prefix names an erased learner; no public read
shows a hidden, suspended or erased one). Both tie policies are exercised.

The model implements the ranking rules itself (it does not use
laurels.core.ranking); `test_model_ranking_by_hand` checks it on hand-worked cases.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, event, note
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    rule,
    run_state_machine_as_test,
)

from laurels.core.errors import DomainError
from laurels.core.seasons import parse_season
from laurels.core.validation import ProfileIn
from laurels.live.notifier import Notifier
from laurels.process.settings import Secrets, Settings
from laurels.runtime import Runtime
from tests import deadlines
from tests.helpers import ADMIN, INGEST, NO_EXPLAIN, USER_SECRET, model_examples
from tests.invariants import check_erased_everywhere, check_hidden_nowhere, reset_tables

pytestmark = pytest.mark.slow

SEASON = "2026-W47"
WEEK = parse_season(SEASON, zone="UTC")  # (as a Season)
START = WEEK.starts_at
NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)  # W47 still takes late completions (grace)
POOL = [3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610]  # 12: crosses the top 10
NAMES = ["Ada", "Bo", "Émile", "Zoë 🚀", "Learner 3", "N" * 64]
VISIBILITIES = ["public", "anonymous", "hidden"]
MINUTES = [0, 1, 2, 720, 10079]  # few distinct instants: ties on the latest completion
TIERS = ("bronze", "silver", "gold")
LEAGUES: dict[str, Any] = {"league_tiers": TIERS, "league_size": 3, "league_promote": (1,),
                           "league_demote": (1,)}
# Each learner's tier after the week before (decided, so nobody is pending):
# the week's cohorts span every tier, and the decision promotes and demotes.
WEEK_BEFORE = "2026-W46"
TIER_BEFORE = {uid: i % len(TIERS) for i, uid in enumerate(POOL)}
_example = itertools.count(1)


# -- the model ------------------------------------------------------------------


@dataclass
class Comp:
    uid: int
    points: int
    at: datetime
    seq: int
    voided: bool = False


@dataclass
class User:
    name: str | None = None
    vis: str = "public"  # their own choice
    erased: bool = False
    suspended: bool = False  # then hidden, whatever they chose


@dataclass
class Model:
    policy: str
    users: dict[int, User] = field(default_factory=dict)
    comps: dict[str, Comp] = field(default_factory=dict)  # every recorded one, erased too
    season_row: bool = False  # PostgreSQL knows the season (something was recorded)
    finalized: bool = False
    board_live: bool = False  # the season has a board in Redis
    notes: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    # leagues (docs/contract.md, Leagues): who joined, in order; their (tier,
    # slot); each learner's tier (after the week before: TIER_BEFORE)
    joins: list[int] = field(default_factory=list)
    slots: dict[int, tuple[int, int]] = field(default_factory=dict)
    fill: dict[int, int] = field(default_factory=dict)
    tiers: dict[int, int] = field(default_factory=lambda: dict(TIER_BEFORE))
    decided: bool = False
    results: dict[int, tuple[int | None, str, int]] = field(default_factory=dict)
    decided_scores: dict[int, int] = field(default_factory=dict)  # as the decision ranked them

    def user(self, uid: int) -> User:
        return self.users.setdefault(uid, User())

    def name(self, uid: int) -> str:
        return self.user(uid).name or f"Learner {uid}"

    def vis(self, uid: int) -> str:
        u = self.user(uid)
        return "hidden" if u.suspended else u.vis

    # ranking (docs/contract.md, Ranking)
    def standings(self) -> dict[int, tuple[int, datetime]]:
        out: dict[int, tuple[int, datetime]] = {}
        for c in self.comps.values():
            if self.user(c.uid).erased or c.voided:
                continue
            score, last = out.get(c.uid, (0, c.at))
            out[c.uid] = (score + c.points, max(last, c.at))
        return out

    def key(self, st_: dict[int, tuple[int, datetime]], uid: int) -> tuple[int, datetime, int]:
        score, last = st_[uid]
        return (-score, last if self.policy == "first" else START, uid)

    def order(self, st_: dict[int, tuple[int, datetime]]) -> list[int]:
        public = [u for u in st_ if self.vis(u) != "hidden"]
        return sorted(public, key=lambda u: self.key(st_, u))

    def rank(self, st_: dict[int, tuple[int, datetime]], order: list[int], index: int,
             score: int) -> int:
        if self.policy == "first":
            return index + 1
        return 1 + sum(1 for u in order if st_[u][0] > score)

    def public_entry(self, uid: int, rank: int, score: int) -> dict[str, Any]:
        if self.vis(uid) == "anonymous":
            return {"rank": rank, "user_id": None, "display_name": "Anonymous", "score": score}
        return {"rank": rank, "user_id": uid, "display_name": self.name(uid), "score": score}

    def top(self) -> tuple[int, list[dict[str, Any]]]:
        st_ = self.standings()
        order = self.order(st_)
        return len(order), [self.public_entry(u, self.rank(st_, order, i, st_[u][0]), st_[u][0])
                            for i, u in enumerate(order)]

    def around(self, uid: int, radius: int) -> dict[str, Any] | None:
        st_ = self.standings()
        if uid not in st_:
            return None
        order = self.order(st_)
        score = st_[uid][0]
        vis = self.vis(uid)
        if vis != "hidden":
            index = order.index(uid)
            around = order[max(0, index - radius):index + radius + 1]
        else:  # where they would stand; in their own view the others are ranked
            # as if they were on the board (docs/contract.md; issue 26)
            index = sum(1 for u in order if self.key(st_, u) < self.key(st_, uid))
            around = [*order[max(0, index - radius):index], uid, *order[index:index + radius]]
            order = [*order[:index], uid, *order[index:]]
        rank = self.rank(st_, order, index, score)
        neighbors = []
        for u in around:
            if u == uid:
                neighbors.append({"rank": rank, "user_id": uid, "display_name": self.name(uid),
                                  "score": score, "self": True})
            else:
                i = order.index(u)
                neighbors.append({**self.public_entry(u, self.rank(st_, order, i, st_[u][0]),
                                                      st_[u][0]), "self": False})
        return {"season": SEASON, "board": "global", "metric": "points",
                "user": {"rank": rank, "user_id": uid, "display_name": self.name(uid),
                         "score": score, "visibility": vis},
                "neighbors": neighbors}

    # notifications
    # leagues
    def join(self, uids: list[int]) -> None:
        """Learners whose completion now counts: those not hidden (nor
        suspended), not erased, not joined yet, join while the week is not
        decided, in id order within one statement."""
        for uid in sorted(set(uids)):
            if (uid not in self.joins and not self.decided and self.vis(uid) != "hidden"
                    and not self.user(uid).erased):
                self.joins.append(uid)

    def place(self) -> None:
        """In joining order, each in their tier's next slot (the week before
        is decided for everyone: nobody is pending)."""
        for uid in self.joins:
            if uid not in self.slots and not self.decided:
                tier = self.tiers.get(uid, 0)
                self.slots[uid] = (tier, self.fill.get(tier, 0))
                self.fill[tier] = self.fill.get(tier, 0) + 1

    def decide(self, size: int) -> None:
        if self.decided:
            return
        self.place()
        self.decided = True
        st_ = self.standings()
        top = 2
        for tier, cohort in {(t, slot // size) for t, slot in self.slots.values()}:
            members = [u for u, (t, s) in self.slots.items() if t == tier and s // size == cohort]
            eligible = {u: st_[u] for u in members if u in st_ and self.vis(u) != "hidden"}
            order = self.order(eligible)
            # The zones scale with the cohort's board (CONTRACT.md, Leagues):
            # p = ceil(PROMOTE * n / SIZE), d = floor(DEMOTE * n / SIZE).
            n = len(eligible)
            promote = math.ceil(LEAGUES["league_promote"][0] * n / size)
            demote = math.floor(LEAGUES["league_demote"][0] * n / size)
            if 0 < n < size:
                event("a league decision of a cohort smaller than a full one")
            for uid in members:
                rank = (self.rank(eligible, order, order.index(uid), eligible[uid][0])
                        if uid in eligible else None)
                outcome, new = "stayed", tier
                if rank is not None and rank <= promote and tier < top:
                    outcome, new = "promoted", tier + 1
                elif rank is not None and rank > max(promote, n - demote) and tier:
                    outcome, new = "demoted", tier - 1
                self.results[uid] = (rank, outcome, new)
                if rank is not None:
                    self.decided_scores[uid] = eligible[uid][0]
                self.tiers[uid] = new
                self.notify(uid, "league_result", {
                    "tier": TIERS[tier], "cohort_id": f"{SEASON}.{tier}.{cohort}",
                    "rank": rank, "outcome": outcome, "new_tier": TIERS[new]})

    def decided_board(self, tier: int, cohort: int, size: int) -> list[dict[str, Any]]:
        """A decided cohort's board: its members ranked by the decision, as
        decided, shown as they are now (hidden and erased ones left out)."""
        zones = {"promoted": "promotion", "demoted": "demotion", "stayed": None}
        out = []
        for uid, (rank, outcome, _) in sorted(self.results.items(),
                                              key=lambda r: (r[1][0] or 0, r[0])):
            if (rank is None or self.slots[uid][0] != tier
                    or self.slots[uid][1] // size != cohort or self.user(uid).erased
                    or self.vis(uid) == "hidden"):
                continue
            anonymous = self.vis(uid) == "anonymous"
            out.append({"rank": rank, "user_id": None if anonymous else uid,
                        "display_name": "Anonymous" if anonymous else self.name(uid),
                        "score": self.decided_scores[uid], "zone": zones[outcome],
                        "self": False, "outcome": outcome})
        return out

    def notify(self, uid: int, kind: str, data: dict[str, Any]) -> None:
        notes = self.notes.setdefault(uid, [])
        if kind == "overtaken":  # at most one unread per learner and season: refreshed
            notes[:] = [n for n in notes if n["kind"] != "overtaken"]
        notes.append({"kind": kind, "season": SEASON, "data": data})

    def record(self, cid: str, comp: Comp, live: bool) -> None:
        """A new completion; `live`: applied to the current board (rank events)."""
        before_st = self.standings()
        before = self.order(before_st)
        self.comps[cid] = comp
        self.season_row = True
        uid = comp.uid
        if not live or self.vis(uid) == "hidden":
            return
        after_st = self.standings()
        after = self.order(after_st)
        old = before.index(uid) if uid in before else None
        new = after.index(uid)
        score = after_st[uid][0]
        if len(after) > 10:
            event("more than 10 on the public board")
        # Entering the top 10 is by the board's rank (ties share it under `shared`).
        new_rank = self.rank(after_st, after, new, score)
        old_rank = (self.rank(before_st, before, old, before_st[uid][0])
                    if old is not None else None)
        if new_rank <= 10 and old_rank is not None and old_rank > 10:
            event("climbed into the top 10")
        if new_rank <= 10 and (old_rank is None or old_rank > 10):
            if any(n["kind"] == "top10" for n in self.notes.get(uid, [])):
                event("entered the top 10 again: told once a season")
            else:
                self.notify(uid, "top10", {"rank": new_rank, "score": score})
        frm = old if old is not None else 100  # a newcomer comes from below the top 100
        if frm > new:
            last = min(frm, new + 10, 99)
            for passed in after[new + 1:last + 1]:
                if after_st[passed][0] < score:  # a tie passes nobody
                    event("passed someone")
                    self.notify(passed, "overtaken", {"by_user_id": uid, "season": SEASON})

    def erase(self, uid: int) -> None:
        if uid in self.joins:
            self.joins.remove(uid)
        self.slots.pop(uid, None)
        self.results.pop(uid, None)
        self.tiers.pop(uid, None)
        u = self.user(uid)
        u.erased, u.name, u.vis = True, None, "public"
        self.notes.pop(uid, None)
        for notes in self.notes.values():
            for n in notes:
                if n["data"].get("by_user_id") == uid:
                    n["data"] = {k: v for k, v in n["data"].items() if k != "by_user_id"}

    def shown(self, note: dict[str, Any]) -> dict[str, Any]:
        """A notification as the API shows it now: who passed you, named as
        they are now (docs/contract.md, notifications)."""
        if note["kind"] != "overtaken":
            return note
        uid = note["data"].get("by_user_id")
        data = {k: v for k, v in note["data"].items() if k != "by_user_id"}
        if uid is not None and self.vis(uid) == "public" and not self.user(uid).erased:
            data |= {"by_user_id": uid, "by_display_name": self.name(uid)}
        else:
            data |= {"by_user_id": None, "by_display_name": "Anonymous"}
        return {**note, "data": data}

    def finalize(self) -> None:
        # Everyone's final rank, once; a hidden learner (no public rank) gets null.
        self.finalized = True
        st_ = self.standings()
        order = self.order(st_)
        for uid, (score, _) in st_.items():
            rank = (self.rank(st_, order, order.index(uid), score) if uid in order else None)
            self.notify(uid, "season_final", {"rank": rank, "score": score})


def test_model_ranking_by_hand() -> None:
    """The model's ranking, checked against the contract's own examples."""
    at = START + timedelta(hours=1)
    shared = Model("shared")
    for i, (uid, pts) in enumerate([(30, 10), (10, 10), (20, 10), (40, 9), (50, 1)]):
        shared.comps[f"h{i}"] = Comp(uid, pts, at, i)
    total, entries = shared.top()
    assert total == 5
    assert [(e["rank"], e["user_id"]) for e in entries] == [
        (1, 10), (1, 20), (1, 30), (4, 40), (5, 50)]
    shared.user(10).vis = "hidden"  # pushes nobody down, takes no rank
    shared.user(20).vis = "anonymous"
    assert [(e["rank"], e["user_id"], e["display_name"]) for e in shared.top()[1]] == [
        (1, None, "Anonymous"), (1, 30, "Learner 30"), (3, 40, "Learner 40"),
        (4, 50, "Learner 50")]
    me = shared.around(10, 1)
    assert me is not None and me["user"]["rank"] == 1
    assert [(n["user_id"], n["self"]) for n in me["neighbors"]] == [(10, True), (None, False)]

    first = Model("first")
    # Latest completion: 30 at minute 1 (its 6 points at minute 0 come first), 10 and 20
    # at minute 5: 30 first, then 10 before 20 (user id).
    rows = [(30, 4, 1), (30, 6, 0), (10, 10, 5), (20, 10, 5), (40, 9, 0)]
    for i, (uid, pts, minute) in enumerate(rows):
        first.comps[f"f{i}"] = Comp(uid, pts, START + timedelta(minutes=minute), i)
    assert [(e["rank"], e["user_id"]) for e in first.top()[1]] == [
        (1, 30), (2, 10), (3, 20), (4, 40)]
    first.user(10).vis = "hidden"
    me = first.around(10, 1)
    assert me is not None and me["user"]["rank"] == 2
    assert [n["user_id"] for n in me["neighbors"]] == [30, 10, 20]


# -- the system under test ----------------------------------------------------------


class System:
    """The domain services of one example: own key prefix and tie policy."""

    def __init__(self, rt: Runtime, prefix: str, policy: str, keep_seasons: int = 8) -> None:
        self.rt = rt
        self.prefix = prefix
        svc = rt.derive(clock=lambda: NOW, tie_policy=policy, key_prefix=prefix,
                        keep_seasons=keep_seasons, **LEAGUES)
        self.svc = svc
        self.leagues = svc.leagues
        self.settings = svc.settings
        self.board, self.lifecycle, self.rebuilder = svc.board, svc.lifecycle, svc.rebuilder
        self.notifier, self.projector, self.verifier = svc.notifier, svc.projector, svc.verifier
        self.learners, self.reads, self.ingestor = svc.learners, svc.reads, svc.ingestor
        self.corrections, self.partitions = svc.corrections, svc.partitions

    async def keys(self) -> list[str]:
        return [k async for k in self.rt.redis.scan_iter(match=f"{self.prefix}:*", count=1000)]

    async def lose_redis(self) -> None:
        for key in await self.keys():
            await self.rt.redis.unlink(key)

    async def consume(self) -> None:
        # A fresh notifier: no cached list of open seasons, no cached stream groups.
        for _ in range(3):
            if not await Notifier(self.rt.db, self.board).consume():
                return


def stamp(at: datetime, form: str) -> str:
    """The same instant written with another offset."""
    if form == "Z":
        return at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if form == "+02:00":
        return at.astimezone(timezone(timedelta(hours=2))).isoformat()
    return at.isoformat()


# -- operations ---------------------------------------------------------------------

uid_index = st.integers(0, len(POOL) - 1)
new_item = st.tuples(st.just("new"), uid_index, st.integers(1, 20), st.sampled_from(MINUTES))
dup_item = st.tuples(st.just("dup"), st.integers(0, 999), st.sampled_from(["same", "Z", "+02:00"]))
conflict_item = st.tuples(st.just("conflict"), st.integers(0, 999),
                          st.sampled_from(["points", "time", "user"]), st.integers(1, 5))
again_item = st.tuples(st.just("again"), st.integers(0, 2), st.booleans())  # same batch
any_item = st.one_of(new_item, new_item, dup_item, conflict_item, again_item)
OPERATIONS: dict[str, st.SearchStrategy[tuple[Any, ...]]] = {
    "new": new_item.map(lambda t: ("ingest", [t])),
    "batch": st.lists(any_item, min_size=1, max_size=3).map(lambda items: ("ingest", items)),
    "crowd": st.lists(new_item, min_size=6, max_size=12).map(lambda items: ("ingest", items)),
    "profile": st.tuples(st.just("profile"), uid_index, st.none() | st.sampled_from(NAMES),
                         st.none() | st.sampled_from(VISIBILITIES)),
    "erase": st.tuples(st.just("erase"), uid_index),
    # Corrections (issue 15): void or restore a recorded completion (by its
    # place among them), suspend or unsuspend a learner.
    "void": st.tuples(st.just("void"), st.integers(0, 999), st.booleans()),
    "suspend": st.tuples(st.just("suspend"), uid_index, st.booleans()),
    "rebuild": st.just(("rebuild",)),
    "redeliver": st.just(("redeliver",)),
    "finalize": st.just(("finalize",)),
    "lose_redis": st.just(("lose_redis",)),
}
WEIGHTS = {"new": 10, "batch": 4, "crowd": 2, "profile": 4, "erase": 1, "rebuild": 1,
           "redeliver": 1, "finalize": 1, "lose_redis": 1, "void": 3, "suspend": 2}
operation = st.sampled_from([k for k, w in WEIGHTS.items() for _ in range(w)]).flatmap(
    lambda kind: OPERATIONS[kind])


class Run:
    def __init__(self, system: System, model: Model, n: int) -> None:
        self.sys = system
        self.model = model
        self.n = n
        self.next_cid = 0
        self.log: list[str] = []

    def new_cid(self) -> str:
        self.next_cid += 1
        return f"m{self.n}-{self.next_cid:04d}"

    async def ingest(self, items: list[tuple[Any, ...]]) -> None:
        model = self.model
        known = sorted(model.comps)
        raw: list[dict[str, Any]] = []
        expect: list[tuple[str, str | None, Comp | None]] = []  # status/code, cid, new comp
        fresh: list[int] = []  # indices of this batch's new items
        for item in items:
            if item[0] == "again":  # a new item of this same batch, again
                if not fresh:
                    continue
                first = fresh[item[1] % len(fresh)]
                again = dict(raw[first])
                want, cid, _ = expect[first]
                if item[2]:
                    again["points"] += 1
                if want == "recorded":
                    want = "completion_conflict" if item[2] else f"duplicate_of:{first}"
                raw.append(again)
                expect.append((want, cid, None))
                continue
            if item[0] == "new":
                fresh.append(len(raw))
                _, ui, points, minute = item
                uid, at, cid = POOL[ui], START + timedelta(minutes=minute), self.new_cid()
                raw.append({"completion_id": cid, "user_id": uid, "points": points,
                            "completed_at": stamp(at, "same")})
                if model.user(uid).erased:
                    expect.append(("user_erased", cid, None))
                elif model.finalized:
                    expect.append(("season_closed", cid, None))
                else:
                    expect.append(("recorded", cid, Comp(uid, points, at, 0)))
                continue
            if not known:
                continue
            cid = known[item[1] % len(known)]
            c = model.comps[cid]
            if item[0] == "dup":
                raw.append({"completion_id": cid, "user_id": c.uid, "points": c.points,
                            "completed_at": stamp(c.at, item[2])})
                expect.append(("user_erased" if model.user(c.uid).erased else "duplicate",
                               cid, None))
                continue
            _, _, variant, delta = item
            uid, points, at = c.uid, c.points, c.at
            if variant == "points":
                points += delta
            elif variant == "time":  # a few seconds off, still inside the season
                at += timedelta(seconds=-delta if at > START else delta)
            elif not model.user(c.uid).erased:  # another learner's id
                uid = POOL[(POOL.index(c.uid) + delta) % len(POOL)]
            else:  # (their completion is gone: another id would be a new completion)
                points += delta
            raw.append({"completion_id": cid, "user_id": uid, "points": points,
                        "completed_at": stamp(at, "same")})
            expect.append(("user_erased" if model.user(uid).erased else "completion_conflict",
                           cid, None))
        if not raw:
            return
        self.log.append(f"ingest {raw}")
        outcomes = await self.sys.ingestor.record(raw)
        assert len(outcomes) == len(raw)
        live = model.board_live
        model.join([c.uid for w, _, c in expect if w == "recorded" and c is not None])
        for out, (want, cid, comp) in zip(outcomes, expect, strict=True):
            assert out.completion_id == cid
            if want == "recorded":
                assert (out.status, out.season) == ("recorded", SEASON), out
                assert comp is not None and out.seq is not None
                comp.seq = out.seq
                # Applies run in completion_id order (= order of creation here).
                model.record(cid, comp, live)
            elif want == "duplicate" or want.startswith("duplicate_of:"):
                assert (out.status, out.seq, out.season) == (
                    "duplicate", model.comps[cid].seq, SEASON), out
            else:
                assert (out.status, out.code) == ("rejected", want), out
        if any(w == "recorded" for w, _, _ in expect):
            model.board_live = True  # a missing board was rebuilt by the fast path

    async def profile(self, ui: int, name: str | None, vis: str | None) -> None:
        uid = POOL[ui]
        self.log.append(f"profile {uid} {name!r} {vis}")
        u = self.model.user(uid)
        if u.erased:
            with pytest.raises(DomainError) as info:
                await self.sys.learners.update(uid, ProfileIn(display_name=name, visibility=vis))
            assert info.value.code == "user_erased"
            return
        learner = await self.sys.learners.update(uid, ProfileIn(display_name=name, visibility=vis))
        u.name = name if name is not None else u.name
        u.vis = vis if vis is not None else u.vis
        assert learner.body() == {"user_id": uid, "display_name": self.model.name(uid),
                                  "visibility": u.vis}

    async def apply(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        if kind == "ingest":
            await self.ingest(op[1])
        elif kind == "profile":
            await self.profile(*op[1:])
        elif kind == "void":
            await self.correct(op[1], op[2])
        elif kind == "suspend":
            await self.suspend(POOL[op[1]], op[2])
        elif kind == "erase":
            uid = POOL[op[1]]
            self.log.append(f"erase {uid}")
            await self.sys.learners.erase(uid)
            self.model.erase(uid)
        elif kind == "rebuild":
            self.log.append("rebuild")
            result = await self.sys.rebuilder.run(WEEK)
            if self.model.finalized:
                # A closed season is rebuilt from its archive: a row per learner.
                assert result.events == len(self.model.standings())
            else:
                alive = [c for c in self.model.comps.values()
                         if not self.model.user(c.uid).erased]
                assert result.events == len(alive)
            # A finalized season's new board gets its expiry at once.
            self.model.board_live = not self.model.finalized or self.keys_live()
        elif kind == "redeliver":
            # Every completion is handed to the projector again (as after a crash
            # between apply and outbox cleanup): all duplicates, no rank events.
            self.log.append("redeliver")
            alive = [c.seq for c in self.model.comps.values()
                     if not self.model.user(c.uid).erased]
            if alive:
                await self.sys.rt.db.run("insert_outbox", seqs=alive)
            assert await self.sys.projector.drain(min_age_seconds=0) == len(alive)
            if alive and not self.model.finalized:
                self.model.board_live = True  # a lost board was rebuilt to apply them
        elif kind == "seal":
            # The finalized week's ids move to the sealed partition (stage,
            # then move: nothing runs between); later replays and conflicts
            # of them must answer as before (migration 020).
            self.log.append("seal")
            staged, _ = await self.sys.partitions.seal()
            assert await self.sys.partitions.seal() == (0, staged)
        elif kind == "finalize":
            self.log.append("finalize")
            done = await self.sys.lifecycle.finalize(WEEK)
            assert done == (self.model.season_row and not self.model.finalized)
            if done:
                self.model.finalize()
                if self.model.board_live and not self.keys_live():
                    assert await self.sys.keys() == []  # read from the archive from now on
                    self.model.board_live = False
        elif kind == "leagues":
            await self.leagues(op[1])
        elif kind == "lose_redis":
            self.log.append("lose_redis")
            await self.sys.lose_redis()
            self.model.board_live = False
        else:  # pragma: no cover
            raise AssertionError(op)

    async def correct(self, index: int, voided: bool) -> None:
        """Void (or restore) the index-th recorded completion: it counts (or
        not) on the board at once, notifies nobody; an erased learner's is
        gone (404)."""
        if not self.model.comps:
            return
        cid = sorted(self.model.comps)[index % len(self.model.comps)]
        comp = self.model.comps[cid]
        self.log.append(f"{'void' if voided else 'restore'} {cid}")
        corrections = self.sys.corrections
        act = corrections.void(cid, "model") if voided else corrections.restore(cid)
        if self.model.user(comp.uid).erased:
            with pytest.raises(DomainError) as info:
                await act
            assert info.value.code == "not_found"
            return
        body = await act
        assert body == {"completion_id": cid, "seq": comp.seq, "season": SEASON,
                        "status": "voided" if voided else "recorded"}
        if comp.voided and not voided:
            self.model.join([comp.uid])  # it counts again: a first one joins
        if self.model.decided and self.model.results.get(comp.uid, (None,))[0] is not None:
            event("a ranked member's completion corrected after the decision")
        comp.voided = voided

    async def leagues(self, decide: bool) -> None:
        """Place who joined the week's leagues, or decide them (once)."""
        self.log.append("decide leagues" if decide else "place leagues")
        if decide:
            assert await self.sys.leagues.decide(WEEK) == (not self.model.decided)
            self.model.decide(LEAGUES["league_size"])
            for outcome in sorted({o for _, o, _ in self.model.results.values()}):
                event(f"a league decision with a learner {outcome}")
        else:
            await self.sys.leagues.place(WEEK)
            self.model.place()

    async def suspend(self, uid: int, suspended: bool) -> None:
        """Suspend or unsuspend: hidden on every board (their own visibility
        kept for afterwards); an erased learner is refused."""
        self.log.append(f"{'suspend' if suspended else 'unsuspend'} {uid}")
        u = self.model.user(uid)
        if u.erased:
            with pytest.raises(DomainError) as info:
                await self.sys.learners.suspend(uid, suspended, "model")
            assert info.value.code == "user_erased"
            return
        body = await self.sys.learners.suspend(uid, suspended, "model")
        assert body == {"user_id": uid, "suspended": suspended}
        u.suspended = suspended

    def keys_live(self) -> bool:
        """Whether a finalized season's Redis keys outlive now (Redis expires them by
        the real clock: with KEEP_SEASONS=0 already when the test runs)."""
        return datetime.now(UTC) < self.sys.lifecycle.expires_at(WEEK)

    async def check(self, step: int) -> None:
        model, reads = self.model, self.sys.reads
        season = WEEK
        limit = (100, 1, 3)[step % 3]
        body = await reads.top(season, limit)
        total, entries = model.top()
        assert (body["season"], body["tie_policy"]) == (SEASON, model.policy)
        assert (body["starts_at"], body["ends_at"]) == (stamp(season.starts_at, "Z"),
                                                        stamp(season.ends_at, "Z"))
        assert body["status"] in ("open", "closed")  # by the real clock, not NOW
        assert (body["total"], body["entries"]) == (total, entries[:limit]), "public board"
        radius = step % 3
        for uid in POOL:
            want = model.around(uid, radius)
            if want is None:
                with pytest.raises(DomainError) as info:
                    await reads.around(season, uid, radius)
                assert info.value.code == "not_ranked"
            else:
                got = await reads.around(season, uid, radius)
                assert got == want, f"around {uid} radius {radius}"
        alive = any(not model.user(c.uid).erased for c in model.comps.values())
        if alive and model.finalized and not model.board_live:
            event("read a finalized season from the archive")
        if alive and not model.finalized and not model.board_live:
            event("a read healed a lost board")
        if alive and not model.finalized:
            model.board_live = True  # the read healed the lost board
        if model.board_live:
            result = await self.sys.verifier.verify(WEEK)
            assert result.consistent, result.body()
        async with self.sys.rt.db.connection() as conn:
            cur = await conn.execute("SELECT user_id, tier, slot FROM league_members")
            assert {r["user_id"]: (r["tier"], r["slot"])
                    for r in await cur.fetchall()} == model.slots, "placements"
            cur = await conn.execute("SELECT user_id, tier FROM league_tiers WHERE tier > 0")
            assert {r["user_id"]: r["tier"] for r in await cur.fetchall()} == {
                u: t for u, t in model.tiers.items() if t}, "tiers (no row: the lowest)"
            cur = await conn.execute("SELECT user_id FROM league_joins ORDER BY join_seq")
            assert [r["user_id"] for r in await cur.fetchall()] == model.joins, "joins"
            cur = await conn.execute("SELECT user_id, rank, outcome, new_tier FROM league_results")
            got_results = {r["user_id"]: (r["rank"], r["outcome"], r["new_tier"])
                           for r in await cur.fetchall()}
            assert got_results == model.results, "league results"
        if model.decided:  # each cohort's board is the decision's, whatever came since
            for tier, cohort in sorted({(t, slot // LEAGUES["league_size"])
                                        for t, slot in model.slots.values()}):
                got_board, _ = await self.sys.leagues.cohort(
                    season, f"{SEASON}.{tier}.{cohort}")
                assert got_board["decided"] and got_board["entries"] == model.decided_board(
                    tier, cohort, LEAGUES["league_size"]), "a decided cohort's board"
        # Nothing left behind for the projector: the fast path applied everything.
        assert await self.sys.projector.drain(min_age_seconds=0) == 0
        await self.sys.consume()
        for uid in POOL:
            rows = await self.sys.rt.db.fetch("list_notifications", user_id=uid, limit=1000)
            assert len({r["id"] for r in rows}) == len(rows)
            assert not any(r["read"] for r in rows)
            got = sorted(json.dumps({"kind": r["kind"], "season": r["season"],
                                     "data": r["data"]}, sort_keys=True)
                         for r in await self.sys.rt.notifications.bodies(rows))
            want_notes = sorted(json.dumps(model.shown(n), sort_keys=True)
                                for n in model.notes.get(uid, []))
            assert got == want_notes, f"notifications of {uid}"
        await check_erased_everywhere(self.sys.svc)
        await check_hidden_nowhere(self.sys.svc, {
            uid for uid in POOL if model.user(uid).erased or model.vis(uid) == "hidden"})


class ModelMachine(RuleBasedStateMachine):
    """The same operations as rules of a hypothesis state machine. Rules are
    synchronous, so each machine runs the system on an event loop of its own
    (a fresh Runtime on this test's database and key prefix)."""

    cfg: Settings
    policy: str

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.rt = Runtime(self.cfg, Secrets(INGEST, ADMIN, USER_SECRET),
                          self.cfg.database_url or "", self.cfg.redis_url or "")
        self.loop.run_until_complete(self.rt.open(run_migrations=False))
        self.run: Run | None = None
        self.step = 0

    @initialize(keep_seasons=st.sampled_from([8, 0]))
    def start(self, keep_seasons: int) -> None:
        async def go() -> Run:
            async with self.rt.db.connection() as conn:  # this test's database: empty
                await reset_tables(conn)
                await conn.execute(
                    "INSERT INTO league_tiers (user_id, tier, season)"
                    " SELECT unnest(%s::bigint[]), unnest(%s::smallint[]), %s",
                    (list(TIER_BEFORE), list(TIER_BEFORE.values()), WEEK_BEFORE))
            n = next(_example)
            system = System(self.rt, f"{self.rt.keys.prefix}m{n}", self.policy, keep_seasons)
            await system.leagues.store_settings()
            return Run(system, Model(self.policy), n)

        self.run = self.loop.run_until_complete(go())

    def _do(self, op: tuple[Any, ...]) -> None:
        assert self.run is not None
        run = self.run

        async def go() -> None:
            try:
                await run.apply(op)
                await run.check(self.step)
            except BaseException:
                note("\n".join(run.log))
                raise

        self.loop.run_until_complete(go())
        self.step += 1

    @rule(op=OPERATIONS["new"])
    def new(self, op: tuple[Any, ...]) -> None:
        self._do(op)

    @rule(op=OPERATIONS["new"])
    def another_new(self, op: tuple[Any, ...]) -> None:  # new completions twice as often
        self._do(op)

    @rule(op=OPERATIONS["batch"])
    def batch(self, op: tuple[Any, ...]) -> None:
        self._do(op)

    @rule(op=OPERATIONS["crowd"])
    def crowd(self, op: tuple[Any, ...]) -> None:
        self._do(op)

    @rule(op=OPERATIONS["profile"])
    def profile(self, op: tuple[Any, ...]) -> None:
        self._do(op)

    @rule(op=OPERATIONS["erase"])
    def erase(self, op: tuple[Any, ...]) -> None:
        self._do(op)

    @rule(op=OPERATIONS["void"])
    def void(self, op: tuple[Any, ...]) -> None:
        self._do(op)

    @rule(op=OPERATIONS["suspend"])
    def suspend(self, op: tuple[Any, ...]) -> None:
        self._do(op)

    @rule(decide=st.booleans())
    def leagues(self, decide: bool) -> None:
        self._do(("leagues", decide))

    @rule()
    def rebuild(self) -> None:
        self._do(("rebuild",))

    @rule()
    def redeliver(self) -> None:
        self._do(("redeliver",))

    @rule()
    def finalize(self) -> None:
        self._do(("finalize",))

    @rule()
    def lose_redis(self) -> None:
        self._do(("lose_redis",))

    @rule()
    def seal(self) -> None:
        self._do(("seal",))

    def teardown(self) -> None:
        async def close() -> None:
            if self.run is not None:
                await self.run.sys.rebuilder.cancel_all()
                await self.run.sys.lose_redis()
            await self.rt.close()

        self.loop.run_until_complete(close())
        self.loop.close()


@pytest.mark.parametrize("policy", ["shared", "first"])
def test_operations_match_the_model(settings: Settings, policy: str) -> None:
    machine = type(f"ModelMachine_{policy}", (ModelMachine,), {"cfg": settings,
                                                               "policy": policy})
    run_state_machine_as_test(machine, settings=hsettings(
        max_examples=model_examples(20), stateful_step_count=30, deadline=deadlines.MODEL,
        phases=NO_EXPLAIN,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))


# -- hand-written cases found while building the model ---------------------------


def item(cid: str, uid: int, points: int, minute: int = 0) -> dict[str, Any]:
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": stamp(START + timedelta(minutes=minute), "Z")}


async def notes_of(rt: Runtime, uid: int) -> list[dict[str, Any]]:
    rows = await rt.db.fetch("list_notifications", user_id=uid, limit=100)
    return [{"kind": r["kind"], "data": r["data"]} for r in rows]


async def test_erasure_before_the_notifier_runs_leaves_no_trace(rt: Runtime) -> None:
    """Rank events still in the stream when a learner is erased must not bring
    back a notification for them, nor one naming them (docs/contract.md: erasure
    deletes the learner's name and notifications). Found by the model test."""
    system = System(rt, rt.keys.prefix, "shared")
    await system.rebuilder.run(WEEK)  # the board exists: applies are live
    await system.ingestor.record([item("e1", 3, 5), item("e2", 5, 1), item("e3", 8, 2)])
    await system.learners.update(5, ProfileIn(display_name="Bea"))
    await system.consume()
    # 5 passes 3 and 8 (an overtaken for each, naming "Bea"); 8 then passes 3.
    await system.ingestor.record([item("e4", 5, 10), item("e5", 8, 20)])
    await system.learners.erase(5)  # mover of the first event
    await system.learners.erase(3)  # a learner it passed
    await system.consume()
    assert await notes_of(rt, 3) == []
    assert await notes_of(rt, 5) == []
    for n in await notes_of(rt, 8):
        assert "Bea" not in json.dumps(n) and n["data"].get("by_user_id") != 5, n


async def test_top10_rank_is_the_board_rank(rt: Runtime) -> None:
    """Under `shared`, a learner who ties for rank 1 is told the board's rank (1),
    not their position among the tied (2). Found by the model test."""
    system = System(rt, rt.keys.prefix, "shared")
    await system.rebuilder.run(WEEK)  # the board exists: applies are live
    await system.ingestor.record([item("t1", 3, 5)])
    await system.ingestor.record([item("t2", 5, 5)])
    await system.consume()
    board = await system.reads.top(WEEK, 10)
    assert [(e["rank"], e["user_id"]) for e in board["entries"]] == [(1, 3), (1, 5)]
    assert await notes_of(rt, 5) == [{"kind": "top10", "data": {"rank": 1, "score": 5}}]


async def test_batch_repeating_a_new_completion_of_a_finalized_season(rt: Runtime) -> None:
    """Items are independent: the same new completion twice in one batch, for a
    season finalized before its grace ran out, is refused twice (season_closed).
    Found by the model test (it used to raise KeyError)."""
    system = System(rt, rt.keys.prefix, "shared")
    [first] = await system.ingestor.record([item("b1", 3, 1)])
    assert first.status == "recorded"
    assert await system.lifecycle.finalize(WEEK)
    outcomes = await system.ingestor.record([item("b2", 3, 1), item("b2", 3, 1)])
    assert [(o.status, o.code) for o in outcomes] == [("rejected", "season_closed")] * 2
