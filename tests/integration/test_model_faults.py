"""Model-based test of faults as moves (issue 63): a hypothesis state machine
interleaves the writers that touch boards of kinds and privacy (tagged
ingest, a hide, a void or restore, an erasure, a kind defined and deleted,
a closed week finalized) with the faults a deployment meets, each a move:

- Redis restarted from a snapshot taken at a random earlier step (the
  machine saves one after every step; the server is this test's own
  redis-server, killed and started again on that dump);
- a failover to a replica one step behind (the same, from the snapshot of
  the step before the last: a new run id, the last step lost);
- one key lost (a season's marker: a board that must heal, never be served
  half; or a rolling window's marker: a board rebuilt);
- a rolling window's midnight (its clock moved on, the days leaving it out);
- learners joining and leaving a team, and its board read (filled when
  Redis has it not, or holds another count of membership changes);
- a process silent past the heartbeat (forgotten; another records other
  settings; it must not rejoin beside them);
- the epoch watch's tick (the repair that proves a restarted Redis).

After every step: a board read either refuses (Redis not yet proven:
`Unproven`) or shows no hidden, suspended or erased learner; once proven,
the enumerated erasure and visibility invariants (tests/invariants.py) hold
and every season of every board verifies, archives included.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, note
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from laurels.board.trust import Unproven
from laurels.core.errors import DomainError, StoreUnavailable
from laurels.core.seasons import Season, parse_season
from laurels.core.validation import GroupIn, MembersIn, ProfileIn
from laurels.process.deployment import Membership
from laurels.process.settings import Secrets, Settings
from laurels.projection.filling import RebuildFailed
from laurels.projection.rebuild import RebuildRunning
from laurels.runtime import Runtime, Services
from tests import deadlines
from tests.helpers import ADMIN, INGEST, NO_EXPLAIN, USER_SECRET, model_examples
from tests.integration.test_catchup import Server
from tests.invariants import check_erased_everywhere, check_hidden_nowhere, reset_tables

pytestmark = [pytest.mark.skipif(shutil.which("redis-server") is None,
                                reason="needs the machine's redis-server to restart one"),
              # its own Redis always, whatever the setup: .ci/run runs it on the
              # first setup only (the others would repeat it, minutes each)
              pytest.mark.slow, pytest.mark.once]

W47, W48 = "2026-W47", "2026-W48"
NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)  # W48; W47 in its grace until finalized
USERS = [1, 2, 3, 4]
TAGS = ["course:a", "course:b"]
SETTLE_TRIES = 200
# What an operation may answer in some interleaving: a refusal of the
# contract, Redis restarting under it, a rebuild overtaken.
EXPECTED = (DomainError, StoreUnavailable, RebuildRunning, RebuildFailed)
_example = itertools.count(1)


class FaultMachine(RuleBasedStateMachine):
    cfg: Settings
    folder: Path

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.dir = self.folder / f"redis{next(_example)}"
        self.dir.mkdir()
        self.server = Server(self.dir)
        self.server.start()
        self.rt = Runtime(self.cfg.model_copy(update={"redis_url": self.server.url,
                                                      "redis_cluster": False}),
                          Secrets(INGEST, ADMIN, USER_SECRET), self.cfg.database_url or "",
                          self.server.url)
        self.loop.run_until_complete(self.rt.open(run_migrations=False))
        self.svc: Services = self.rt.derive(clock=lambda: NOW, periods=("week", "all", "7d"))
        self.window_days = 0  # the windows' clock: days after NOW (the `window` rule)
        self.svc.windows.clock = lambda: NOW + timedelta(days=self.window_days)
        self.dumps: list[Path] = []
        self.cids = itertools.count(1)
        self.log: list[str] = []
        self.member: Membership | None = None
        self.refused: list[str] = []

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    async def _do(self, name: str, work: Any) -> Any:
        """A writer's call: a refusal some interleaving may give is noted."""
        try:
            result = await work
        except EXPECTED as exc:
            self.log.append(f"{name} -> {type(exc).__name__}")
            return None
        self.log.append(f"{name} -> done")
        return result

    @initialize()
    def start(self) -> None:
        async def go() -> None:
            async with self.svc.db.connection() as conn:  # this test's database: empty
                await reset_tables(conn)
            await self.svc.board_kinds.define("course", {"periods": ["week", "all", "7d"]})
            await self.svc.teams.define("classes", {"aggregate": "top", "top": 2})
            for gid in ("7a", "7b"):
                await self.svc.groups.put(gid, GroupIn(access="public", team="classes"))
            await self.svc.epoch.check()  # the run id proven
            self.member = Membership(self.svc.db, "serve", refused=self.refused.append)
            await self.member.join(self.svc.settings, self.rt.secrets)

        self.run(go())

    # -- the writers ---------------------------------------------------------------

    @rule(items=st.lists(st.tuples(st.sampled_from(USERS), st.integers(1, 9),
                                   st.sampled_from([W47, W48]),
                                   st.sampled_from([None, *TAGS])), min_size=1, max_size=3))
    def ingest(self, items: list[tuple[int, int, str, str | None]]) -> None:
        """A batch of completions, some tagged (their boards of kinds)."""
        bodies = [{"completion_id": f"c{next(self.cids)}", "user_id": uid, "points": points,
                   "completed_at": (parse_season(week, zone="UTC").starts_at
                                    + timedelta(hours=uid)).isoformat(),
                   "tags": [tag] if tag else []} for uid, points, week, tag in items]
        self.run(self._do(f"ingest {[b['completion_id'] for b in bodies]}",
                          self.svc.ingestor.record(bodies)))

    @rule(uid=st.sampled_from(USERS), vis=st.sampled_from(["public", "hidden", "anonymous"]))
    def profile(self, uid: int, vis: str) -> None:
        body = ProfileIn(visibility=vis, display_name=f"L{uid}")  # type: ignore[arg-type]
        self.run(self._do(f"profile {uid} {vis}", self.svc.learners.update(uid, body)))

    @rule(uid=st.sampled_from(USERS), suspended=st.booleans())
    def suspend(self, uid: int, suspended: bool) -> None:
        self.run(self._do(f"suspend {uid} {suspended}",
                          self.svc.learners.suspend(uid, suspended, "model")))

    @rule(uid=st.sampled_from(USERS))
    def erase(self, uid: int) -> None:
        self.run(self._do(f"erase {uid}", self.svc.learners.erase(uid)))

    @rule(n=st.integers(1, 12), voided=st.booleans())
    def correct(self, n: int, voided: bool) -> None:
        fix = self.svc.corrections
        self.run(self._do(f"{'void' if voided else 'restore'} c{n}",
                          fix.void(f"c{n}", "model") if voided else fix.restore(f"c{n}")))

    @rule(zone=st.sampled_from(["UTC", "Asia/Tokyo"]))
    def define_kind(self, zone: str) -> None:
        self.run(self._do(f"define course {zone}", self.svc.board_kinds.define(
            "course", {"periods": ["week", "all", "7d"], "time_zone": zone})))

    @rule()
    def delete_kind(self) -> None:
        self.run(self._do("delete course", self.svc.board_kinds.delete("course")))

    @rule()
    def finalize(self) -> None:
        """W47 closes: the whole board's week, then its boards of kinds."""
        async def work() -> Any:
            await self.svc.lifecycle.finalize(parse_season(W47, zone="UTC"))
            return await self.svc.lifecycle.finalize_due(NOW + timedelta(days=14))

        self.run(self._do("finalize W47", work()))

    @rule(group=st.sampled_from(["7a", "7b"]), add=st.sets(st.sampled_from(USERS), max_size=2),
          remove=st.sets(st.sampled_from(USERS), max_size=2))
    def team_members(self, group: str, add: set[int], remove: set[int]) -> None:
        """Learners join and leave a team (its boards move before it commits)."""
        body = MembersIn(add=sorted(add), remove=sorted(remove - add))
        self.run(self._do(f"members of {group}: +{sorted(add)} -{sorted(remove - add)}",
                          self.svc.groups.change_members(group, body)))

    @rule(season=st.sampled_from([W47, W48, "all", "last-7d"]))
    def team_read(self, season: str) -> None:
        """A team board read: filled from PostgreSQL when Redis has it not,
        or not at PostgreSQL's count of membership changes (a restart from
        an older snapshot)."""
        self.run(self._do(f"teams of {season}", self.svc.team_reads.page(
            "classes", parse_season(season, zone="UTC"), 0, 100, None)))

    @rule(days=st.integers(1, 3))
    def window(self, days: int) -> None:
        """The windows' clock moves on: their loop's tick takes the days
        leaving them out (a snapshot may later bring a window back to before)."""
        self.window_days = min(self.window_days + days, 10)
        self.run(self._do(f"windows +{self.window_days}d", self.svc.windows.tick()))

    # -- the faults ----------------------------------------------------------------

    def _restart_from(self, dump: Path, what: str) -> None:
        self.log.append(what)
        self.server.stop()
        shutil.copyfile(dump, self.dir / "dump.rdb")
        self.server.start()

    @rule(i=st.integers(0, 1000))
    def restart_from_snapshot(self, i: int) -> None:
        """Redis comes back from the snapshot of a random earlier step."""
        k = i % len(self.dumps)
        self._restart_from(self.dumps[k], f"restart from the snapshot of step {k}")

    @rule()
    def failover(self) -> None:
        """A replica one step behind is promoted: the last step is lost."""
        k = max(0, len(self.dumps) - 2)
        self._restart_from(self.dumps[k], f"failover to a replica at step {k}")

    @rule(i=st.integers(0, 1000))
    def lose_key(self, i: int) -> None:
        """One key lost: a season's marker (its board must heal, never be
        served half), or a rolling window's (its days unknown: rebuilt)."""
        async def go() -> None:
            keys = sorted([str(k) for pattern in (":current", ":window")
                           for k in [k async for k in self.svc.redis.scan_iter(
                               match=f"{self.svc.keys.prefix}:*{pattern}", count=1000)]])
            if keys:
                self.log.append(f"lose {keys[i % len(keys)]}")
                await self.svc.redis.delete(keys[i % len(keys)])

        self.run(self._do("lose a key", go()))

    @rule()
    def repair(self) -> None:
        """The epoch watch's tick: a restarted Redis is caught up and proven."""
        self.run(self._do("epoch check", self.svc.epoch.check()))

    @rule(other=st.booleans())
    def silent(self, other: bool) -> None:
        """This process is silent past the heartbeat; another process joins
        (with other settings, or the same); this one beats again while the
        other runs: refused with other settings, back with the same."""
        assert self.member is not None

        async def go() -> None:
            async with self.svc.db.connection() as conn:
                await conn.execute("UPDATE deployment_processes"
                                   " SET heard_at = now() - interval '11 s'")
            grace = self.svc.settings.late_grace_seconds + (1 if other else 0)
            second = Membership(self.svc.db, "projector", refused=self.refused.append)
            await second.join(self.svc.settings.model_copy(
                update={"late_grace_seconds": grace}), self.rt.secrets)
            before = len(self.refused)
            assert self.member is not None
            await self.member.beat()  # while the other runs
            running = {str(r["id"]) for r in await self.svc.db.fetch("running_processes")}
            await second.leave()
            if other:
                assert len(self.refused) == before + 1 and self.member.id not in running
                # Stopped; started again with the deployment's settings back.
                self.member = Membership(self.svc.db, "serve", refused=self.refused.append)
                await self.member.join(self.svc.settings, self.rt.secrets)
            else:
                assert len(self.refused) == before and self.member.id in running

        self.log.append(f"silent, another with {'other' if other else 'the same'} settings")
        self.run(go())

    # -- what must hold after every step ---------------------------------------------

    async def _private(self) -> tuple[set[int], set[int]]:
        async with self.svc.db.connection() as conn:
            cur = await conn.execute(
                "SELECT user_id, (visibility = 'hidden' OR suspended_at IS NOT NULL) AS hidden,"
                " erased_at IS NOT NULL AS erased FROM users")
            rows = await cur.fetchall()
        return ({r["user_id"] for r in rows if r["hidden"] or r["erased"]},
                {r["user_id"] for r in rows if r["erased"]})

    async def _shown(self, season: Season) -> set[int] | None:
        """Who a public read of the season's board shows; None while Redis
        is not proven (the read refused). A board being healed is waited for."""
        for _ in range(SETTLE_TRIES):
            try:
                body = await self.svc.reads.top(season, 100)
                return {e["user_id"] for e in body["entries"] if e["user_id"] is not None}
            except Unproven:
                return None
            except StoreUnavailable:  # a connection the restart closed, once each
                continue
            except DomainError as exc:
                assert exc.code == "rebuilding", exc
                await asyncio.sleep(0.02)
        raise AssertionError(f"{season} never answered")

    async def _check(self) -> None:
        private, erased = await self._private()
        seasons = [season for season, _ in await self.svc.verifier.every_season()]
        proven = True
        for season in seasons:
            shown = await self._shown(season)
            if shown is None:
                proven = False
                continue
            assert not shown & private, (season, shown & private)
        if not proven or not self.svc.board.trust.trusted:
            return
        await check_erased_everywhere(self.svc, erased)
        await check_hidden_nowhere(self.svc, private)
        for season in seasons:
            result = await self.svc.verifier.verify(season)
            assert result.consistent, (season, result.body())
        for team, season in await self.svc.team_checker.every():
            check = await self.svc.team_checker.verify(team, season)
            assert check.consistent, (team, season, check.mismatches)

    @invariant()
    def holds(self) -> None:
        async def go() -> None:
            await self._check()
            # The snapshot of this step, for a later restart or failover.
            for _ in range(SETTLE_TRIES):
                try:
                    await self.svc.redis.save()
                    break
                except Exception:  # a server restarting under the client
                    await asyncio.sleep(0.01)
            dump = self.dir / f"step{len(self.dumps)}.rdb"
            shutil.copyfile(self.dir / "dump.rdb", dump)
            self.dumps.append(dump)

        try:
            self.run(go())
        finally:
            note("\n".join(self.log[-40:]))

    def teardown(self) -> None:
        async def finish() -> None:
            try:
                for _ in range(SETTLE_TRIES):  # the epoch watch's ticks until proven
                    try:
                        await self.svc.epoch.check()
                        await self.svc.board.trust.check()
                        break
                    except StoreUnavailable:
                        await asyncio.sleep(0.01)
                await self.svc.projector.drain(min_age_seconds=0)
                await self._check()
                assert self.svc.board.trust.trusted
            finally:
                await self.rt.close()

        try:
            self.run(finish())
        finally:
            self.server.stop()
            self.loop.close()


def test_faults_are_moves(settings: Settings, tmp_path: Path) -> None:
    FaultMachine.cfg = settings
    FaultMachine.folder = tmp_path
    run_state_machine_as_test(FaultMachine, settings=hsettings(
        max_examples=model_examples(10), stateful_step_count=20, deadline=deadlines.MODEL_FAULTS,
        phases=NO_EXPLAIN, suppress_health_check=list(HealthCheck)))
