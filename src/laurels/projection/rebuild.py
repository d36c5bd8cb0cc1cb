"""Rebuild a season's board from PostgreSQL while traffic goes on, then switch.

Order matters (docs/design.md, Rebuild): mark the new version as *building* first,
so every apply from then on also reaches it; only then take the PostgreSQL
snapshot. An event committed before the snapshot is in the stream; one
committed after it is applied live to the building version; one in both is
deduplicated by the version's own idempotency bitmap. The season's tombstones
are put back from the snapshot first (a board lost from Redis took them
along; docs/concurrency.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from laurels.board import BuildGone
from laurels.board.roles import Builder
from laurels.core import failpoints, shapes
from laurels.core.errors import DomainError
from laurels.core.seasons import GLOBAL, Period, Season, season_named, whole_week
from laurels.core.states import RebuildStatus
from laurels.db import Database, Jsonb, Tx
from laurels.lifecycle.board_kinds import BoardKinds
from laurels.lifecycle.history import history_of
from laurels.lifecycle.windows import build_starts
from laurels.projection.filling import Building, Filler, Progress, RebuildFailed, Source, group_of

if TYPE_CHECKING:
    from laurels.lifecycle.closing import Lifecycle

log = logging.getLogger("laurels.rebuild")


class RebuildRunning(Exception):
    """Another rebuild of the same season holds the lock."""


class NotDefined(RebuildFailed, LookupError):
    """A board of a kind that is not defined (any more): nothing to build."""


@dataclass
class RebuildResult:
    rebuild_id: str
    season: Season
    events: int
    version: str


def retrieved(task: asyncio.Future[Any]) -> None:
    """A background build nobody may await: take its exception, so asyncio
    never reports it as "never retrieved" (the build logged and recorded it)."""
    if not task.cancelled():
        task.exception()


def lock_key(prefix: str, policy: str, season: Season) -> int:
    digest = hashlib.blake2b(f"{prefix}:{policy}:{season}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class Rebuilder:
    def __init__(self, db: Database, board: Builder, lifecycle: Lifecycle | None = None,
                 periods: tuple[Period, ...] = ("week",), kinds: BoardKinds | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.db, self.board, self.lifecycle = db, board, lifecycle
        self.clock = clock  # a rolling window's first build starts from its day
        self.kinds = kinds  # a board of a kind is built only while its kind is defined
        self.periods = periods  # which boards are long (lifecycle/history.py)
        self.filler = Filler(db, board, lifecycle)
        self._running: dict[str, asyncio.Task[Any]] = {}  # by rebuild id

    def _lock(self, season: Season) -> int:
        return lock_key(self.board.keys.prefix, self.board.policy, season)

    async def start_record(self, season: Season, audited: bool = False) -> str:
        """The rebuild's row (and, for one an operator asked for, its audit
        entry, in the same transaction)."""
        rebuild_id = str(uuid.uuid4())
        async with self.db.transaction() as tx:
            # A board of another period built for the first time (switched on
            # later, for a past season) gets its season row: the lifecycle
            # finalizes, archives and expires it like any other. (A week's
            # row comes with its first completion, as before periods.)
            if not whole_week(season.name):
                await self.db.run("ensure_seasons", tx, seasons=[season])
            await self.db.run("insert_rebuild", tx, rebuild_id=rebuild_id, season=season,
                              tie_policy=self.board.policy)
            if audited:
                named = season
                target = named.label if named.board == GLOBAL else f"{named.label} of {named.board}"
                await self.db.run("insert_audit", tx, action="rebuild", target=target,
                                  reason=None, details=Jsonb({"rebuild_id": rebuild_id,
                                                              "board": named.board}))
        return rebuild_id

    async def start(self, season: Season, progress: Progress | None = None,
                    audited: bool = False) -> tuple[str, asyncio.Task[RebuildResult]]:
        """Take the season's rebuild lock, then build in the background.

        Raises RebuildRunning at once when another builder (in any process)
        holds the lock, so two builders never race. The lock is a session
        lock on a connection of its own: if anything fails before the build
        owns it, that connection is closed, never handed back to the pool
        still holding the lock.
        """
        if self.kinds is not None and not await self.kinds.defined(season):
            raise NotDefined(f"{season} is not a board of a kind defined now")
        tx = await self.db.hold()
        locked = False
        try:
            locked = await self.db.try_session_lock(tx, self._lock(season))
            if not locked:
                raise RebuildRunning(season)
            await failpoints.pause("rebuild_locked")
            rebuild_id = await self.start_record(season, audited)
        except BaseException:
            await self._release(tx, season, locked=locked, discard=locked)
            raise
        task = asyncio.create_task(self._locked_build(tx, season, rebuild_id, progress))
        task.add_done_callback(retrieved)  # its failure is recorded and logged already
        self._running[rebuild_id] = task
        task.add_done_callback(lambda _t: self._running.pop(rebuild_id, None))
        return rebuild_id, task

    async def run(self, season: Season, progress: Progress | None = None,
                  audited: bool = False) -> RebuildResult:
        """Build, verify and switch in the foreground."""
        _, task = await self.start(season, progress, audited)
        return await task

    async def run_many(self, seasons: Sequence[Season]
                       ) -> dict[Season, RebuildResult | BaseException]:
        """Build, verify and switch many boards of kinds of one `group_of`
        (a heal of a kind defined late, of a Redis that lost them) as `run`
        builds each, from one snapshot and one scan of their completions
        rather than one each; each board's outcome, a result or what `run`
        would raise. A long board (lifecycle/history.py) is built alone meanwhile."""
        groups = {group_of(s) for s in seasons}
        if len(groups) != 1 or None in groups:
            raise ValueError("run_many builds boards of kinds of one metric")
        outcome: dict[Season, RebuildResult | BaseException] = {}
        todo = []
        for season in dict.fromkeys(seasons):
            if self.kinds is not None and not await self.kinds.defined(season):
                outcome[season] = NotDefined(f"{season} is not a board of a kind defined now")
            else:
                todo.append(season)
        if not todo:
            return outcome
        tx, records = await self._start_many(todo, outcome)
        task = asyncio.create_task(self._locked_build_many(tx, records))

        def forget(_task: asyncio.Task[Any]) -> None:
            for rebuild_id in records.values():
                self._running.pop(rebuild_id, None)
        for rebuild_id in records.values():
            self._running[rebuild_id] = task
        task.add_done_callback(forget)
        outcome.update(await task)
        return outcome

    async def _start_many(self, seasons: list[Season],
                          outcome: dict[Season, RebuildResult | BaseException]
                          ) -> tuple[Tx, dict[Season, str]]:
        """`start`'s locks and records for many seasons, on one held
        connection: a season another builder holds is `RebuildRunning` in
        `outcome`. Returns the connection and each locked season's rebuild id."""
        tx = await self.db.hold()
        locked: list[Season] = []
        try:
            for season in seasons:
                if await self.db.try_session_lock(tx, self._lock(season)):
                    locked.append(season)
                else:
                    outcome[season] = RebuildRunning(season)
            await failpoints.pause("rebuild_locked")
            return tx, {season: await self.start_record(season) for season in locked}
        except BaseException:
            await self._release_many(tx, locked, discard=True)
            raise

    async def _locked_build_many(self, tx: Tx, records: dict[Season, str]
                                 ) -> dict[Season, RebuildResult | BaseException]:
        try:
            return await self._build_many(tx, records)
        finally:
            await self._release_many(tx, list(records))

    async def _release_many(self, tx: Tx, seasons: list[Season], discard: bool = False) -> None:
        """`_release` of many seasons' locks held on one connection."""
        try:
            if not discard and not tx.closed:
                for season in seasons:
                    await self.db.session_unlock(tx, self._lock(season))
        except BaseException:
            discard = True
            log.warning("could not release the rebuild locks of %d boards cleanly; closing "
                        "their connection", len(seasons))
        finally:
            await self.db.release(tx, discard)

    async def _build_many(self, tx: Tx, records: dict[Season, str]
                          ) -> dict[Season, RebuildResult | BaseException]:
        builds: list[Building] = []
        outcome: dict[Season, RebuildResult | BaseException] = {}
        try:
            for season, rebuild_id in records.items():
                builds.append(await self._begin(season, rebuild_id))
            shared = [b for b in builds if not b.source.alone]
            if shared:
                outcome.update(await self._fill_and_switch(tx, shared, many=True))
            for b in builds:  # long boards (lifecycle/history.py), alone
                if b.season not in outcome:
                    outcome.update(await self._fill_and_switch(tx, [b], many=False))
        except BaseException as exc:  # interrupted: every board not done yet fails
            done = {b.season: b for b in builds}
            for season, rebuild_id in records.items():
                if season not in outcome:
                    await self._failed(done.get(season), rebuild_id, season, exc)
            raise
        return outcome

    async def _fill_and_switch(self, tx: Tx, batch: list[Building], many: bool,
                               progress: Progress | None = None
                               ) -> dict[Season, RebuildResult | BaseException]:
        """Fill the batch's new versions (together, or one alone), then
        switch each: each board's result, or why it failed (recorded). An
        interruption is the caller's to record."""
        try:
            if many:
                await self.filler.fill_many(tx, batch)
            else:
                await self.filler.fill_one(tx, batch[0], progress)
            await failpoints.pause("rebuild_before_switch")
        except Exception as exc:
            for b in batch:
                await self._failed(b, b.rebuild_id, b.season, exc)
            failed = RebuildFailed(str(exc)) if isinstance(exc, BuildGone) else exc
            return {b.season: failed for b in batch}
        outcome: dict[Season, RebuildResult | BaseException] = {}
        for b in batch:
            try:
                previous = await self.board.switch(b.season, b.version)
                b.switched = True
                await failpoints.pause("rebuild_after_switch")
                outcome[b.season] = await self._switched(b, previous)
            except Exception as exc:
                if not b.switched:
                    await self._failed(b, b.rebuild_id, b.season, exc)
                outcome[b.season] = RebuildFailed(str(exc)) if isinstance(
                    exc, BuildGone) else exc
        return outcome

    async def _locked_build(self, tx: Tx, season: Season, rebuild_id: str,
                            progress: Progress | None) -> RebuildResult:
        try:
            return await self._build(tx, season, rebuild_id, progress)
        finally:
            await self._release(tx, season, locked=True)

    async def _release(self, tx: Tx, season: Season, locked: bool,
                       discard: bool = False) -> None:
        """Unlock and give the connection back; if unlocking is not certain
        (an error, a cancellation), close it: a closed session holds no lock."""
        try:
            if locked and not discard and not tx.closed:
                await self.db.session_unlock(tx, self._lock(season))
        except BaseException:
            discard = True
            log.warning("could not release the rebuild lock of %s cleanly; closing its "
                        "connection", season)
        finally:
            await self.db.release(tx, discard)

    async def start_or_join(self, season: Season, attempts: int = 20) -> str | None:
        """Start a rebuild in the background (an operator's: audited), or name
        the one already running (in any process). None only if neither could
        be seen for a while."""
        for _ in range(attempts):
            try:
                rebuild_id, _task = await self.start(season, audited=True)
                return rebuild_id
            except NotDefined:
                raise DomainError("not_found", "that board's kind is not defined") from None
            except RebuildRunning:
                running = await self.running(season)
                if running is not None:
                    return running
            # The other one is just starting or just finished: look again.
            await asyncio.sleep(0.05)
        return None

    async def running(self, season: Season) -> str | None:
        """The id of the rebuild of `season` that is running now, if any."""
        row = await self.db.fetch_one("running_rebuild", season=season,
                                      tie_policy=self.board.policy)
        return str(row["rebuild_id"]) if row else None

    async def status(self, rebuild_id: str) -> shapes.RebuildStatus | None:
        row = await self.db.fetch_one("get_rebuild", rebuild_id=rebuild_id)
        if row is None:
            return None
        named = season_named(row["season"], self.db.zone)
        if row["status"] == "running" and rebuild_id not in self._running \
                and await self.db.lock_is_free(self._lock(named)):
            # Its builder died (kill -9, crash): nobody holds the lock any more.
            await self._finish(rebuild_id, "failed", row["events"], "interrupted")
            row = await self.db.fetch_one("get_rebuild", rebuild_id=rebuild_id)
            if row is None:  # erased meanwhile? report it as unknown
                return None
        return {"rebuild_id": str(row["rebuild_id"]), "season": named.label, "board": named.board,
                "status": row["status"], "events": row["events"], "error": row["error"]}

    async def cancel_all(self) -> None:
        """On shutdown: stop running builds (each aborts and reports failed)."""
        for task in list(self._running.values()):
            task.cancel()
        for task in list(self._running.values()):
            with contextlib.suppress(BaseException):
                await task

    async def _finish(self, rebuild_id: str, status: RebuildStatus, events: int,
                      error: str | None) -> None:
        await self.db.run("update_rebuild", rebuild_id=rebuild_id, status=status,
                          events=events, error=error)

    async def _begin(self, season: Season, rebuild_id: str) -> Building:
        """A new version of `season` marked building (every apply from now on
        also reaches it), its stale versions dropped; before the snapshot."""
        # A long board is built from its closed parts' archives (lifecycle/history.py):
        # they are named on the version from the moment it is building, so a
        # completion of theirs applied live meanwhile counts once.
        history = await history_of(self.db, self.periods, season)
        version, current, stale = await self.board.begin_build(
            season, history.parts if history else ())
        log.info("rebuild %s of %s: building version %s%s", rebuild_id, season, version,
                 f" from {len(history.parts)} archived seasons" if history else "")
        for old in stale:
            await self.board.drop_version(season, old)
        return Building(season, rebuild_id, version, current, Source.of(
            season, history, await build_starts(self.board, season, self.clock())))

    async def _build(self, tx: Tx, season: Season, rebuild_id: str,
                     progress: Progress | None) -> RebuildResult:
        built = None
        try:
            built = await self._begin(season, rebuild_id)
            result = (await self._fill_and_switch(tx, [built], many=False,
                                                  progress=progress))[season]
        except BaseException as exc:  # its beginning failed, or it was interrupted
            await self._failed(built, rebuild_id, season, exc)
            raise
        if isinstance(result, BaseException):
            raise result
        return result

    async def _failed(self, built: Building | None, rebuild_id: str, season: Season,
                      exc: BaseException) -> None:
        """Leave the current board serving; stop feeding the new one and free
        it; record and log why."""
        if built is not None and not built.switched:
            with contextlib.suppress(Exception):
                await self.board.abort_build(season, built.version)
                await self.board.drop_version(season, built.version)
        reason = (str(exc) if isinstance(exc, RebuildFailed | BuildGone)
                  else "interrupted" if isinstance(exc, asyncio.CancelledError)
                  else f"{type(exc).__name__} (see the server log)")
        if not isinstance(exc, RebuildFailed | BuildGone | asyncio.CancelledError):
            log.error("rebuild %s of %s crashed", rebuild_id, season, exc_info=exc)
        with contextlib.suppress(Exception):
            await self._finish(rebuild_id, "failed", built.events if built else 0, reason)
        log.warning("rebuild %s of %s failed: %s", rebuild_id, season, reason)

    async def _switched(self, built: Building, previous: str) -> RebuildResult:
        """What follows a switch: the hint, the old version dropped, the record."""
        season, rebuild_id = built.season, built.rebuild_id
        if self.kinds is not None and not await self.kinds.defined(season):
            # Its kind was deleted while it was built: what the deletion could
            # not see goes now (docs/design.md, "Boards of a kind").
            await self.board.drop_season(season)
            await self._finish(rebuild_id, "failed", built.events, "its board kind was deleted")
            raise RebuildFailed(f"{season}: its board kind was deleted")
        await self.board.publish_hint({"season": season.name, "kind": "rebuilt"})
        if previous:
            await self.board.drop_version(season, previous)
        if self.lifecycle and await self.lifecycle.finalized([season]):
            await self.lifecycle.expire(season)  # an archived season keeps its expiry
        await self._finish(rebuild_id, "succeeded", built.events, None)
        log.info("rebuild %s of %s: switched to version %s (%d events)", rebuild_id, season,
                 built.version, built.events)
        return RebuildResult(rebuild_id, season, built.events, built.version)
