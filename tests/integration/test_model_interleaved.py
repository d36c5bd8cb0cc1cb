"""Model-based test of interleavings: long operations split at their pause points.

A hypothesis state machine starts operations (ingest with its fast path,
erasure, profile change, finalize, rebuild, void and restore, suspend and
unsuspend, losing Redis, league placement, the zone pass and the decision,
retention, webhook deliveries to a receiver on a loopback port, a rolling
window's midnight, team kinds and their boards filled, groups joining and
leaving them) as tasks. An
operation may be started *held* at one of its named pause points
(laurels.core.failpoints): it stops there, with whatever PostgreSQL locks it holds,
(weekly leagues are on: placements and decisions are operations too; the
all-time board is on too, rebuilt from the archive of a week once it closes),
while later rules start other operations, which run to their own pause point,
block on a lock, or finish. Other rules release a held operation. So the
machine explores interleavings of split operations deterministically, and
hypothesis shrinks a failing one to a short script of starts and releases.

After every step it checks invariant 6 of the design (privacy) and the
stores' bookkeeping (tests/invariants.py); the erasure invariant (no table
of the catalogue, no key under the prefix names a learner whose erasure has
committed, or returned, for Redis); the visibility invariant (no public read
of any board, group, friends board, cohort, notification or pending webhook
shows a hidden, suspended or erased learner); that no hint names one, and
that no webhook the receiver got after an erasure names its learner. When
everything has settled, verify must find every board consistent with
PostgreSQL. Both tie policies.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, event, note
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from laurels.core import failpoints
from laurels.core.errors import DomainError
from laurels.core.seasons import Season, parse_season, season_of
from laurels.core.validation import GroupIn, MembersIn, ProfileIn
from laurels.live.webhooks import store_settings
from laurels.process.settings import Secrets, Settings
from laurels.projection.filling import RebuildFailed
from laurels.projection.rebuild import RebuildRunning
from laurels.runtime import Runtime, Services
from tests import deadlines
from tests.helpers import (
    ADMIN,
    INGEST,
    NO_EXPLAIN,
    USER_SECRET,
    WEBHOOK_SECRET,
    Receiver,
    model_examples,
    receiving,
)
from tests.invariants import (
    HintTap,
    check_all,
    check_erased_everywhere,
    check_hidden_nowhere,
    check_leagues,
    json_ids,
    reset_tables,
)

pytestmark = pytest.mark.slow

SEASONS = ["2026-W47", "2026-W48"]
# All time: built from W47's archive once it is finalized; the last 7 days,
# moved by its own clock (the `window` rule) past the days the weeks hold.
BOARDS = [*SEASONS, "all", "last-7d"]
WINDOW_DAYS_MAX = 10  # how far the window's clock goes: every day of both weeks leaves


def board(name: str) -> Season:  # (the rules draw names: their steps read as names)
    return parse_season(name, zone="UTC")


NOW = datetime(2026, 11, 24, 12, tzinfo=UTC)  # W48; W47 still in its grace
USERS = [1, 2, 3, 4]
GROUPS = ["class", "house"]  # groups, of the `classes` team kind or of none
# Retention as if two months had passed: November (both weeks) is dropped
# once its seasons are finalized and its league weeks decided.
RETIRE_AT = NOW + timedelta(days=60)
LEAGUES: dict[str, Any] = {"league_tiers": ("bronze", "silver"), "league_size": 3,
                           "league_promote": (1,), "league_demote": (1,)}
# Learners 3 and 4 were promoted the week before: silver cohorts, whose last
# is demoted, beside bronze ones; a learner who plays W48 before W47 is
# decided is pending until it is.
SILVER_BEFORE = {3: 1, 4: 1}
POINTS = {  # where each operation can be held (None: run it through)
    "ingest": [None, "ingest_after_commit", "fast_missing"],
    "profile": [None, "profile_committed"],
    "erase": [None, "erase_locked", "erase_deleted", "erase_committed"],
    "finalize": [None, "finalize_before_commit"],
    "rebuild": [None, "rebuild_snapshot_taken", "rebuild_before_switch"],
    "correct": [None, "correction_locked", "correction_committed"],
    "suspend": [None, "profile_committed"],
    "place": [None, "league_placing"],
    "decide": [None, "league_deciding"],
    "zones": [None, "league_zoning"],
    "deliver": [None, "webhook_claimed", "webhook_locked"],
    "window": [None, "window_advanced", "window_batch_left"],
    "team": [None, "team_moving"],
    "team_read": [None, "team_filling"],
}
# What an operation may legitimately answer in some interleaving.
EXPECTED = (DomainError, RebuildRunning, RebuildFailed)
MAX_IN_FLIGHT = 3


def expected(exc: BaseException) -> bool:
    """An answer some interleaving may legitimately give. A rebuild may fail
    when its board is lost or another takes over, never because an erasure
    kept a learner of its snapshot off the new board."""
    if isinstance(exc, RebuildFailed):
        return "missing from the new board" not in str(exc)
    return isinstance(exc, EXPECTED)
START_WAIT_SECONDS = 10.0
_example = itertools.count(1)


@dataclass
class Op:
    name: str
    uid: int | None
    task: asyncio.Task[Any]
    hold: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    point: str | None = None


class InterleavingMachine(RuleBasedStateMachine):
    cfg: Settings
    policy: str

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.rt = Runtime(self.cfg, Secrets(INGEST, ADMIN, USER_SECRET, WEBHOOK_SECRET),
                          self.cfg.database_url or "", self.cfg.redis_url or "")
        self.loop.run_until_complete(self.rt.open(run_migrations=False))
        self.svc: Services | None = None
        self.tap: HintTap | None = None
        self.ops: list[Op] = []
        self.log: list[str] = []
        self.cids = itertools.count(1)
        self.bodies: dict[str, dict[str, Any]] = {}  # what each ingest sent
        self.private: set[int] = set()  # hidden or erased, as of the last check
        self.erased_before: set[int] = set()  # erased and settled, as of the last check
        self.receiver: Receiver | None = None
        self._receiving: Any = None
        self.http: Any = None  # the webhooks' HTTP client
        self.heard = 0  # webhook events checked so far
        self.window_days = 0  # the window's clock: days after NOW

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    @initialize()
    def start(self) -> None:
        async def go() -> None:
            async with self.rt.db.connection() as conn:  # this test's database: empty
                await reset_tables(conn)
                await conn.execute(
                    "INSERT INTO league_tiers (user_id, tier, season)"
                    " SELECT unnest(%s::bigint[]), unnest(%s::smallint[]), '2026-W46'",
                    (list(SILVER_BEFORE), list(SILVER_BEFORE.values())))
            prefix = f"{self.rt.keys.prefix}i{next(_example)}"
            self._receiving = receiving()
            self.receiver = await self._receiving.__aenter__()
            self.http = None
            self.svc = self.rt.derive(clock=lambda: NOW, tie_policy=self.policy,
                                      key_prefix=prefix, periods=("week", "all", "7d"),
                                      webhook_url=self.receiver.url,
                                      retain_completions_days=30, **LEAGUES)
            self.svc.windows.clock = lambda: NOW + timedelta(days=self.window_days)
            await self.svc.leagues.store_settings()
            await self.svc.teams.define("classes", {"aggregate": "sum"})
            await store_settings(self.svc.db, self.svc.settings)
            assert self.svc.webhooks is not None
            self.http = self.svc.webhooks.client()
            self.tap = HintTap(self.svc, [board(s) for s in BOARDS])
            await self.tap.__aenter__()

        self.run(go())

    # -- starting, holding and releasing operations ----------------------------------

    def _held_points(self) -> set[str]:
        return {op.point for op in self.ops if op.point is not None}

    async def _waiting(self) -> int:
        assert self.svc is not None
        async with self.svc.db.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) AS n FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'")
            row = await cur.fetchone()
            return int(row["n"]) if row else 0

    async def _settle(self, op: Op, held: failpoints.Hold | None, waiting_before: int) -> None:
        """Until the operation stands at its held point, waits for a lock
        (one more session waits than before), or is done."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_WAIT_SECONDS
        while not op.task.done() and loop.time() < deadline:
            if held is not None and held.is_reached:
                return
            if await self._waiting() > waiting_before:
                return
            await asyncio.sleep(0.005)

    async def _launch(self, name: str, uid: int | None, point: str | None,
                      work: Any) -> bool:
        """Start `work` (a coroutine), unless MAX_IN_FLIGHT operations are in
        flight: then it is closed unstarted. Which operations are still in
        flight depends on timing, so it is decided here, never in a
        precondition: hypothesis must draw the same data whatever the timing."""
        await self._reap()
        if len(self.ops) >= MAX_IN_FLIGHT:
            work.close()
            self.log.append(f"skip {name} {uid or ''}: {len(self.ops)} in flight")
            return False
        if point in self._held_points():
            point = None  # one holder per point at a time
        self.log.append(f"start {name} {uid or ''} held at {point}")
        racing = {name, *(o.name for o in self.ops)}
        if "decide" in racing and racing & {"void", "restore"}:
            event("a correction racing a league decision")
        waiting = await self._waiting()
        stack = contextlib.ExitStack()
        held = stack.enter_context(failpoints.hold(point)) if point else None
        op = Op(name, uid, asyncio.ensure_future(work), stack, point)
        self.ops.append(op)
        await self._settle(op, held, waiting)
        if held is not None and not held.is_reached:
            stack.close()  # never reached it (blocked, or took another path): no hold
            op.point = None
        await self._reap()
        return True

    async def _reap(self) -> None:
        for op in [o for o in self.ops if o.task.done()]:
            self.ops.remove(op)
            op.hold.close()
            exc = op.task.exception()
            if exc is not None and not expected(exc):
                raise exc
            self.log.append(f"  {op.name} {op.uid or ''} -> "
                            f"{type(exc).__name__ if exc else 'done'}")

    async def _release(self, op: Op) -> None:
        self.log.append(f"release {op.name} {op.uid or ''} at {op.point}")
        waiting = await self._waiting()
        op.hold.close()
        op.point = None
        await self._settle(op, None, waiting)
        await self._reap()

    # -- the operations ------------------------------------------------------------------

    @rule(uid=st.sampled_from(USERS), points=st.integers(1, 9), season=st.sampled_from(SEASONS),
          point=st.sampled_from(POINTS["ingest"]))
    def ingest(self, uid: int, points: int, season: str, point: str | None) -> None:
        assert self.svc is not None
        at = parse_season(season, zone="UTC").starts_at + timedelta(hours=uid)
        body = {"completion_id": f"c{next(self.cids)}", "user_id": uid, "points": points,
                "completed_at": at.isoformat()}
        if self.run(self._launch("ingest", uid, point, self.svc.ingestor.record([body]))):
            self.bodies[body["completion_id"]] = body

    @rule(i=st.integers(0, 63), moved=st.booleans(), point=st.sampled_from(POINTS["ingest"]))
    def replay(self, i: int, moved: bool, point: str | None) -> None:
        """An ingest of a completion_id sent before (the i-th, modulo how
        many were sent): the same payload (a duplicate), or its time moved to
        the other week (a conflict), whether its id is in the open partition
        or sealed (migration 020). Nothing if none was sent yet."""
        assert self.svc is not None
        sent = sorted(self.bodies.values(), key=lambda b: b["completion_id"])
        if not sent:
            self.log.append("replay: nothing sent yet")
            return
        body = dict(sent[i % len(sent)])
        if moved:
            at = datetime.fromisoformat(body["completed_at"])
            mine = season_of(at, "week", zone="UTC")
            other = SEASONS[1] if mine.name == SEASONS[0] else SEASONS[0]
            body["completed_at"] = (parse_season(other, zone="UTC").starts_at
                                    + (at - mine.starts_at)).isoformat()
        self.run(self._launch("replay", body["user_id"], point,
                              self.svc.ingestor.record([body])))

    @rule()
    def seal(self) -> None:
        """One step of moving finalized weeks' ids to the sealed partition:
        a stage, or a move once no transaction from before the stage runs."""
        assert self.svc is not None
        self.run(self._launch("seal", None, None, self.svc.partitions.seal()))

    @rule(uid=st.sampled_from(USERS),
          vis=st.sampled_from(["public", "anonymous", "hidden", None]),
          name=st.sampled_from(["Ada", "Bo", None]), point=st.sampled_from(POINTS["profile"]))
    def profile(self, uid: int, vis: str | None, name: str | None, point: str | None) -> None:
        assert self.svc is not None
        body = ProfileIn(display_name=name, visibility=vis)  # type: ignore[arg-type]
        self.run(self._launch("profile", uid, point, self.svc.learners.update(uid, body)))

    @rule(uid=st.sampled_from(USERS), point=st.sampled_from(POINTS["erase"]))
    def erase(self, uid: int, point: str | None) -> None:
        assert self.svc is not None
        self.run(self._launch("erase", uid, point, self.svc.learners.erase(uid)))

    @rule(n=st.integers(1, 10), voided=st.booleans(), point=st.sampled_from(POINTS["correct"]))
    def correct(self, n: int, voided: bool, point: str | None) -> None:
        """Void or restore completion `c<n>` (404 if there is none, or no more)."""
        assert self.svc is not None
        fix = self.svc.corrections
        work = fix.void(f"c{n}", "model") if voided else fix.restore(f"c{n}")
        self.run(self._launch("void" if voided else "restore", None, point, work))

    @rule(uid=st.sampled_from(USERS), suspended=st.booleans(),
          point=st.sampled_from(POINTS["suspend"]))
    def suspend(self, uid: int, suspended: bool, point: str | None) -> None:
        assert self.svc is not None
        self.run(self._launch("suspend" if suspended else "unsuspend", uid, point,
                              self.svc.learners.suspend(uid, suspended, "model")))

    @rule(season=st.sampled_from(SEASONS), point=st.sampled_from(POINTS["finalize"]))
    def finalize(self, season: str, point: str | None) -> None:
        assert self.svc is not None
        self.run(self._launch("finalize", None, point, self.svc.lifecycle.finalize(board(season))))

    @rule(season=st.sampled_from(BOARDS), point=st.sampled_from(POINTS["rebuild"]))
    def rebuild(self, season: str, point: str | None) -> None:
        assert self.svc is not None
        self.run(self._launch("rebuild", None, point, self.svc.rebuilder.run(board(season))))

    @rule(days=st.integers(0, 2), point=st.sampled_from(POINTS["window"]))
    def window(self, days: int, point: str | None) -> None:
        """The window's clock moves on `days` (up to WINDOW_DAYS_MAX), and its
        loop's tick takes the days leaving it out, racing everything else."""
        assert self.svc is not None
        self.window_days = min(self.window_days + days, WINDOW_DAYS_MAX)
        self.run(self._launch("window", None, point, self.svc.windows.tick()))

    @rule(season=st.sampled_from(SEASONS), point=st.sampled_from(POINTS["place"]))
    def place(self, season: str, point: str | None) -> None:
        assert self.svc is not None
        self.run(self._launch("place", None, point, self.svc.leagues.place(board(season))))

    @rule(season=st.sampled_from(SEASONS), point=st.sampled_from(POINTS["decide"]))
    def decide(self, season: str, point: str | None) -> None:
        assert self.svc is not None
        self.run(self._launch("decide", None, point, self.svc.leagues.decide(board(season))))

    @rule(season=st.sampled_from(SEASONS), point=st.sampled_from(POINTS["zones"]))
    def zones(self, season: str, point: str | None) -> None:
        assert self.svc is not None
        self.run(self._launch("zones", None, point, self.svc.leagues.zones(board(season))))

    @rule()
    def retire(self) -> None:
        """Retention's pass, two months on: November's completions go once
        both weeks are finalized and decided (every board stays as it was)."""
        assert self.svc is not None
        self.run(self._launch("retire", None, None,
                              self.svc.partitions.retire(RETIRE_AT, 30)))

    @rule(point=st.sampled_from(POINTS["deliver"]))
    def deliver(self, point: str | None) -> None:
        """One batch of due webhook deliveries, to the receiver."""
        assert self.svc is not None and self.svc.webhooks is not None and self.http
        self.run(self._launch("deliver", None, point,
                              self.svc.webhooks.deliver_due(self.http)))

    @rule(uid=st.sampled_from(USERS), voided=st.booleans(),
          point=st.sampled_from(POINTS["correct"]))
    def correct_learner(self, uid: int, voided: bool, point: str | None) -> None:
        """Void (or restore) every completion of a learner at once (410 once
        they are erased)."""
        assert self.svc is not None
        self.run(self._launch("bulk void" if voided else "bulk restore", uid, point,
                              self.svc.corrections.correct_learner(uid, voided, "model",
                                                                   None)))

    @rule()
    def notify(self) -> None:
        """The notifier's pass: rank events into notifications (and their
        webhook deliveries)."""
        assert self.svc is not None
        self.run(self._launch("notify", None, None, self.svc.notifier.consume()))

    @rule()
    def project(self) -> None:
        """The projector's pass: outbox rows claimed, applied, deleted."""
        assert self.svc is not None
        self.run(self._launch("project", None, None,
                              self.svc.projector.drain_once(min_age_seconds=0)))

    @rule()
    def resume_erasures(self) -> None:
        """The erasures loop: an erasure whose Redis step did not finish, again."""
        assert self.svc is not None
        self.run(self._launch("resume erasures", None, None,
                              self.svc.erasure.resume_erasures(min_age_seconds=0)))

    @rule()
    def prepare(self) -> None:
        """The seasons loop's step before the week's first completion: its
        board made ready (heal.prepare)."""
        assert self.svc is not None
        self.run(self._launch("prepare", None, None, self.svc.healer.prepare(NOW)))

    @rule(uid=st.sampled_from(USERS), n=st.integers(0, 3))
    def read_notes(self, uid: int, n: int) -> None:
        """A learner marks their newest notifications read (ids of theirs, or
        none)."""
        assert self.svc is not None
        svc = self.svc

        async def work() -> Any:
            newest = (await svc.notifications.newest(uid))["notifications"]
            return await svc.notifications.mark_read(uid, [x["id"] for x in newest[:n]])

        self.run(self._launch("read notes", uid, None, work()))

    @rule(access=st.sampled_from(["members", "public"]), group=st.sampled_from(GROUPS),
          team=st.sampled_from([None, "classes", "keep"]))
    def group_put(self, access: str, group: str, team: str | None) -> None:
        """A group made or changed: its access, and its team kind (none, the
        `classes` kind, or left as it is)."""
        assert self.svc is not None
        fields: dict[str, Any] = {"name": group.title(), "access": access}
        if team != "keep":
            fields["team"] = team
        self.run(self._launch("group put", None, None,
                              self.svc.groups.put(group, GroupIn(**fields))))

    @rule(add=st.sets(st.sampled_from(USERS), max_size=3),
          remove=st.sets(st.sampled_from(USERS), max_size=2), group=st.sampled_from(GROUPS),
          point=st.sampled_from(POINTS["team"]))
    def group_members(self, add: set[int], remove: set[int], group: str,
                      point: str | None) -> None:
        """Members added and removed (404 while the group does not exist);
        its team's boards move before it commits (held there)."""
        assert self.svc is not None
        body = MembersIn(add=sorted(add), remove=sorted(remove - add))
        self.run(self._launch("group members", None, point,
                              self.svc.groups.change_members(group, body)))

    @rule(group=st.sampled_from(GROUPS))
    def group_delete(self, group: str) -> None:
        assert self.svc is not None
        self.run(self._launch("group delete", None, None, self.svc.groups.delete(group)))

    @rule(aggregate=st.sampled_from(["sum", "mean", "top"]))
    def team_define(self, aggregate: str) -> None:
        """The team kind defined (`kind_conflict` when it exists otherwise)."""
        assert self.svc is not None
        body: dict[str, Any] = {"aggregate": aggregate, **({"top": 2} if aggregate == "top"
                                                            else {})}
        self.run(self._launch("team define", None, None, self.svc.teams.define("classes", body)))

    @rule()
    def team_delete(self) -> None:
        assert self.svc is not None
        self.run(self._launch("team delete", None, None, self.svc.teams.delete("classes")))

    @rule(season=st.sampled_from(BOARDS), point=st.sampled_from(POINTS["team_read"]))
    def team_read(self, season: str, point: str | None) -> None:
        """A team board read: filled from PostgreSQL first when Redis has it
        not, or not at PostgreSQL's count of membership changes."""
        assert self.svc is not None
        self.run(self._launch("team read", None, point, self.svc.team_reads.page(
            "classes", board(season), 0, 100, None)))

    @rule(i=st.integers(0, 63))
    def retry_delivery(self, i: int) -> None:
        """An operator sends a webhook delivery again (the i-th known)."""
        assert self.svc is not None
        svc = self.svc

        async def work() -> Any:
            async with svc.db.connection() as conn:
                cur = await conn.execute("SELECT id FROM webhook_deliveries ORDER BY id")
                ids = [str(r["id"]) for r in await cur.fetchall()]
            return await svc.deliveries.retry(ids[i % len(ids)]) if ids else False

        self.run(self._launch("retry delivery", None, None, work()))

    @rule(season=st.sampled_from(BOARDS))
    def lose_board(self, season: str) -> None:
        """Redis forgets a season's board (a flush, a failover)."""
        assert self.svc is not None
        svc = self.svc
        self.log.append(f"lose board {season}")

        async def go() -> None:
            base = svc.board.season_keys(board(season)).base
            keys = [k async for k in svc.redis.scan_iter(match=f"{base}:*", count=1000)]
            if keys:
                await svc.redis.unlink(*keys)

        self.run(go())

    @rule(i=st.integers(0, MAX_IN_FLIGHT - 1))
    def release(self, i: int) -> None:
        """Release the i-th held operation (modulo how many are held); nothing
        if none is. Which ones are held depends on timing, so the draw must
        not (hypothesis replays a prefix of draws and wants the same shape)."""
        held = [op for op in self.ops if op.point]
        if not held:
            self.log.append("release: nothing held")
            return
        self.run(self._release(held[i % len(held)]))

    # -- what must hold after every step -------------------------------------------------

    async def _pg_state(self) -> tuple[set[int], set[int]]:
        assert self.svc is not None
        async with self.svc.db.connection() as conn:
            cur = await conn.execute("SELECT user_id, visibility, erased_at IS NOT NULL AS e"
                                     " FROM users")
            rows = await cur.fetchall()
        return ({r["user_id"] for r in rows if r["visibility"] == "hidden" and not r["e"]},
                {r["user_id"] for r in rows if r["e"]})

    async def _check(self) -> None:
        assert self.svc is not None and self.tap is not None
        svc = self.svc
        busy = {op.uid for op in self.ops if op.uid is not None}
        hidden, erased = await self._pg_state()
        private = (hidden | erased) - busy  # settled: no operation on them in flight
        await check_all(svc, [board(s) for s in BOARDS], in_flight=busy)
        await check_leagues(svc, erased)
        await check_erased_everywhere(svc, erased, in_flight=busy)
        await self._check_ids()
        # A hint of this step may name a learner who was public when it was
        # sent; none may name one who was private before the step and still is.
        for hint in await self.tap.drain():
            uid = hint.get("user_id")
            assert uid not in private or uid not in self.private, f"a hint named {hint}"
        self.private = private
        # No webhook that arrived during this step names a learner whose
        # erasure had returned before it (their own `user.erased` aside).
        assert self.receiver is not None
        for sent in self.receiver.events[self.heard:]:
            if sent["type"] != "user.erased":
                named = json_ids(sent["data"])
                assert not named & self.erased_before, f"a webhook named {sent}"
        self.heard = len(self.receiver.events)
        self.erased_before = erased - busy
        # Every public read, enumerated (boards of every period, neighbours,
        # groups, friends, cohorts, notifications, pending webhooks).
        await check_hidden_nowhere(svc, private)

    async def _check_ids(self) -> None:
        """Each completion recorded once, its id in exactly one partition of
        completion_ids (open or sealed), and no id without its completion."""
        assert self.svc is not None
        async with self.svc.db.connection() as conn:
            cur = await conn.execute(
                "SELECT (SELECT count(*) FROM (SELECT completion_id FROM completions"
                "        GROUP BY 1 HAVING count(*) > 1) d) AS twice,"
                " (SELECT count(*) FROM (SELECT completion_id FROM completion_ids"
                "        GROUP BY 1 HAVING count(*) > 1) d) AS ids_twice,"
                " (SELECT count(*) FROM completions c LEFT JOIN completion_ids k"
                "        ON k.completion_id = c.completion_id AND k.seq = c.seq"
                "        WHERE k.seq IS NULL) AS unindexed,"
                " (SELECT count(*) FROM completion_ids k LEFT JOIN completions c"
                "        ON c.seq = k.seq WHERE c.seq IS NULL) AS orphans")
            row = await cur.fetchone()
        assert row == {"twice": 0, "ids_twice": 0, "unindexed": 0, "orphans": 0}, row

    @invariant()
    def holds(self) -> None:
        if self.svc is None:
            return

        async def go() -> None:
            try:
                await self._check()
            except BaseException:
                note("\n".join(self.log))
                raise

        self.run(go())

    async def _settle_all(self) -> None:
        """Release everything held, wait for every operation, check once more,
        and verify every board against PostgreSQL."""
        assert self.svc is not None
        for op in list(self.ops):
            op.hold.close()
        results = await asyncio.wait_for(
            asyncio.gather(*(op.task for op in self.ops), return_exceptions=True), 60)
        for r in results:
            if isinstance(r, BaseException) and not expected(r):
                raise r
        self.ops.clear()
        await self._check()
        await self.svc.projector.drain(min_age_seconds=0)
        for season in BOARDS:
            result = await self.svc.verifier.verify(board(season))
            assert result.consistent, (season, result.body())
        for team, season in await self.svc.team_checker.every():  # (the team boards kept)
            check = await self.svc.team_checker.verify(team, season)
            assert check.consistent, (team, season, check.mismatches)

    async def _close(self) -> None:
        if self.tap is not None:
            await self.tap.__aexit__()
        if self.http is not None:
            await self.http.close()
        if self._receiving is not None:
            await self._receiving.__aexit__(None, None, None)
        if self.svc is not None:
            await self.svc.rebuilder.cancel_all()
            keys = [k async for k in self.rt.redis.scan_iter(
                match=f"{self.svc.keys.prefix}:*", count=1000)]
            if keys:
                await self.rt.redis.unlink(*keys)
        await self.rt.close()

    def teardown(self) -> None:
        async def finish() -> None:
            try:
                if self.svc is not None:
                    await self._settle_all()
            except BaseException:
                note("\n".join(self.log))
                raise
            finally:
                await self._close()

        try:
            self.run(finish())
        finally:
            self.loop.close()


@pytest.mark.timeout(900)  # a failure found late shrinks for up to 5 minutes
@pytest.mark.parametrize("policy", ["shared", "first"])
def test_interleavings_keep_privacy(settings: Settings, policy: str) -> None:
    machine = type(f"Interleaving_{policy}", (InterleavingMachine,),
                   {"cfg": settings, "policy": policy})
    run_state_machine_as_test(machine, settings=hsettings(
        max_examples=model_examples(20), stateful_step_count=25,
        deadline=deadlines.MODEL_INTERLEAVED,
        phases=NO_EXPLAIN,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))
