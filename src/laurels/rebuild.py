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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from laurels import failpoints, shapes
from laurels.board import BuildGone
from laurels.board.roles import Builder
from laurels.board_kinds import BoardKinds, score_of
from laurels.db import Database, Jsonb, Tx
from laurels.errors import DomainError
from laurels.history import History, history_of
from laurels.keys import ChunkBits, chunk_bits, hashed_bits
from laurels.seasons import GLOBAL, Period, parse_season, whole_week
from laurels.states import RebuildStatus

if TYPE_CHECKING:
    from laurels.lifecycle import Lifecycle

log = logging.getLogger("laurels.rebuild")

SEQ_BATCH = 20_000  # seqs per fetch while setting the bits
LOAD_BATCH = 1_000  # learners per load_board.lua call (a few ms of Redis)
FIELDS_PER_CALL = 2_000  # chunks of a board of a kind per merge_fields call

Progress = Callable[[int, int], None]


class RebuildRunning(Exception):
    """Another rebuild of the same season holds the lock."""


@dataclass(frozen=True)
class Source:
    """Where a board's snapshot comes from: its completions (the named
    queries season_*), or, for a long board with closed parts, their
    archives plus its completions from the cutoff on (long_*)."""

    season: str
    count: str
    seqs: str
    aggregates: str
    params: dict[str, Any]

    @classmethod
    def of(cls, season: str, history: History | None) -> Source:
        if history is None:
            return cls(season, "season_event_count", "season_seqs", "season_aggregates",
                       {"season": season})
        return cls(season, "long_event_count", "long_seqs", "long_aggregates",
                   {"season": season, "parts": history.parts, "cutoff": history.cutoff})


class RebuildFailed(Exception):
    """A rebuild could not finish (its reason is recorded on the rebuild)."""


class NotDefined(RebuildFailed, LookupError):
    """A board of a kind that is not defined (any more): nothing to build."""


@dataclass
class RebuildResult:
    rebuild_id: str
    season: str
    events: int
    version: str


def retrieved(task: asyncio.Task[Any]) -> None:
    """A background build nobody may await: take its exception, so asyncio
    never reports it as "never retrieved" (the build logged and recorded it)."""
    if not task.cancelled():
        task.exception()


def lock_key(prefix: str, policy: str, season: str) -> int:
    digest = hashlib.blake2b(f"{prefix}:{policy}:{season}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class Rebuilder:
    def __init__(self, db: Database, board: Builder, lifecycle: Lifecycle | None = None,
                 periods: tuple[Period, ...] = ("week",), kinds: BoardKinds | None = None
                 ) -> None:
        self.db = db
        self.kinds = kinds  # a board of a kind is built only while its kind is defined
        self.board = board
        self.lifecycle = lifecycle
        self.periods = periods  # which boards are long (history.py)
        self._running: dict[str, asyncio.Task[RebuildResult]] = {}  # by rebuild id

    def _lock(self, season: str) -> int:
        return lock_key(self.board.keys.prefix, self.board.policy, season)

    async def start_record(self, season: str, audited: bool = False) -> str:
        """The rebuild's row (and, for one an operator asked for, its audit
        entry, in the same transaction)."""
        rebuild_id = str(uuid.uuid4())
        async with self.db.transaction() as tx:
            # A board of another period built for the first time (switched on
            # later, for a past season) gets its season row: the lifecycle
            # finalizes, archives and expires it like any other. (A week's
            # row comes with its first completion, as before periods.)
            if not whole_week(season):
                await self.db.run("ensure_seasons", tx, seasons=[season])
            await self.db.run("insert_rebuild", tx, rebuild_id=rebuild_id, season=season,
                              tie_policy=self.board.policy)
            if audited:
                named = parse_season(season, zone=self.db.zone)
                await self.db.run("insert_audit", tx, action="rebuild", target=named.label,
                                  reason=None, details=Jsonb({"rebuild_id": rebuild_id,
                                                              "board": named.board}))
        return rebuild_id

    async def start(self, season: str, progress: Progress | None = None,
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

    async def run(self, season: str, progress: Progress | None = None,
                  audited: bool = False) -> RebuildResult:
        """Build, verify and switch in the foreground."""
        _, task = await self.start(season, progress, audited)
        return await task

    async def _locked_build(self, tx: Tx, season: str, rebuild_id: str,
                            progress: Progress | None) -> RebuildResult:
        try:
            return await self._build(tx, season, rebuild_id, progress)
        finally:
            await self._release(tx, season, locked=True)

    async def _release(self, tx: Tx, season: str, locked: bool,
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

    async def start_or_join(self, season: str, attempts: int = 20) -> str | None:
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

    async def running(self, season: str) -> str | None:
        """The id of the rebuild of `season` that is running now, if any."""
        row = await self.db.fetch_one("running_rebuild", season=season,
                                      tie_policy=self.board.policy)
        return str(row["rebuild_id"]) if row else None

    async def status(self, rebuild_id: str) -> shapes.RebuildStatus | None:
        row = await self.db.fetch_one("get_rebuild", rebuild_id=rebuild_id)
        if row is None:
            return None
        if row["status"] == "running" and rebuild_id not in self._running \
                and await self.db.lock_is_free(self._lock(row["season"])):
            # Its builder died (kill -9, crash): nobody holds the lock any more.
            await self._finish(rebuild_id, "failed", row["events"], "interrupted")
            row = await self.db.fetch_one("get_rebuild", rebuild_id=rebuild_id)
            if row is None:  # erased meanwhile? report it as unknown
                return None
        board, _, label = str(row["season"]).rpartition("/")  # a board's: its tag first
        return {"rebuild_id": str(row["rebuild_id"]), "season": label,
                "board": board.split("/", 1)[0] if board else GLOBAL,
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

    async def _build(self, tx: Tx, season: str, rebuild_id: str,
                     progress: Progress | None) -> RebuildResult:
        # A long board is built from its closed parts' archives (history.py):
        # they are named on the version from the moment it is building, so a
        # completion of theirs applied live meanwhile counts once.
        history = await history_of(self.db, self.periods, season)
        version, current, stale = await self.board.begin_build(
            season, history.parts if history else ())
        log.info("rebuild %s of %s: building version %s%s", rebuild_id, season, version,
                 f" from {len(history.parts)} archived seasons" if history else "")
        source = Source.of(season, history)
        for old in stale:
            await self.board.drop_version(season, old)
        events = 0
        try:
            async with self.db.snapshot(tx):
                row = await self.db.fetch_one(source.count, tx, **source.params)
                total = int(row["n"]) if row else 0
                await failpoints.pause("rebuild_snapshot_taken")
                if progress:
                    progress(0, total)
                await self._load_erased(tx, season, version, current)
                live = await self._merge_bits(tx, source, version, total, progress)
                events = total
                await self._load(tx, source, version, live)
                await self._load_corrections(tx, season, version)
            await failpoints.pause("rebuild_before_switch")
            previous = await self.board.switch(season, version)
            await failpoints.pause("rebuild_after_switch")
        except BaseException as exc:
            # Leave the current board serving; stop feeding and free the new one.
            with contextlib.suppress(Exception):
                await self.board.abort_build(season, version)
                await self.board.drop_version(season, version)
            reason = (str(exc) if isinstance(exc, RebuildFailed | BuildGone)
                      else "interrupted" if isinstance(exc, asyncio.CancelledError)
                      else f"{type(exc).__name__} (see the server log)")
            if not isinstance(exc, RebuildFailed | BuildGone | asyncio.CancelledError):
                log.exception("rebuild %s of %s crashed", rebuild_id, season)
            with contextlib.suppress(Exception):
                await self._finish(rebuild_id, "failed", events, reason)
            log.warning("rebuild %s of %s failed: %s", rebuild_id, season, reason)
            if isinstance(exc, BuildGone):
                raise RebuildFailed(reason) from exc
            raise
        if self.kinds is not None and not await self.kinds.defined(season):
            # Its kind was deleted while it was built: what the deletion could
            # not see goes now (docs/design.md, "Boards of a kind").
            await self.board.expire(season, datetime.now(UTC))
            await self._finish(rebuild_id, "failed", events, "its board kind was deleted")
            raise RebuildFailed(f"{season}: its board kind was deleted")
        await self.board.publish_hint({"season": season, "kind": "rebuilt"})
        if previous:
            await self.board.drop_version(season, previous)
        if self.lifecycle and await self.lifecycle.finalized([season]):
            await self.lifecycle.expire(season)  # an archived season keeps its expiry
        await self._finish(rebuild_id, "succeeded", events, None)
        log.info("rebuild %s of %s: switched to version %s (%d events)", rebuild_id, season,
                 version, events)
        return RebuildResult(rebuild_id, season, events, version)

    async def _merge_bits(self, tx: Tx, source: Source, version: str, total: int,
                          progress: Progress | None) -> dict[int, int]:
        """Set the idempotency bit of every completion of the snapshot on the
        new version, one chunk (65,536 seqs) per script call, or on a board
        of a kind up to FIELDS_PER_CALL chunks of 256 in its bits hash;
        returns the points, per learner, of the completions an apply reached
        live first (they count on the new version already)."""
        seen = 0
        already: list[int] = []
        season = source.season
        width, hashed = chunk_bits(season), hashed_bits(season)
        fields: list[tuple[int, bytes]] = []

        async def flush(done: tuple[int, bytes] | None, last: bool = False) -> None:
            if done is not None and not hashed:
                offsets = await self.board.merge_bits(season, version, *done)
                already.extend((done[0] << width) | offset for offset in offsets)
            elif done is not None:
                fields.append((done[0], done[1].rstrip(b"\0")))
            if fields and (last or len(fields) >= FIELDS_PER_CALL):
                already.extend(await self.board.merge_fields(season, version, fields))
                fields.clear()

        chunker = ChunkBits(width)
        async for seqs in self.db.stream_column(source.seqs, tx, SEQ_BATCH, **source.params):
            for done in chunker.add_many(seqs):
                await flush(done)
            seen += len(seqs)
            if progress:
                progress(seen, total)
        await flush(chunker.rest(), last=True)
        # Only completions reach a version being built live (corrections wait
        # until it is current: apply.lua), each once: its points (what it
        # scores on this board) are in the new version already, so the
        # snapshot's aggregate gives them back (a completion voided in the
        # snapshot then counts nothing). On `best` a maximum takes nothing
        # back: load_board.lua keeps the higher of the two, and a completion
        # voided in the snapshot that reached the version live cannot be
        # told from one that counts, so the rebuild fails and runs again.
        metric = parse_season(season, zone=self.db.zone).metric
        live: dict[int, int] = {}
        for r in await self.db.fetch("completions_by_seq", tx, seqs=already):
            if metric == "best" and not r["counted"]:
                raise RebuildFailed("a completion voided before the snapshot reached the "
                                    "new board live; rebuild again")
            live[r["user_id"]] = live.get(r["user_id"], 0) + score_of(metric, r["points"])
        return {} if metric == "best" else live

    async def _load_erased(self, tx: Tx, season: str, version: str,
                           current: str) -> None:
        """The season's tombstones, as of the snapshot, and those learners
        off the version being built and the current one (load_erased.lua):
        the erased set lives in Redis only and may have been lost with the
        board (or rolled back with it), while a fast path still holds an
        erased learner's completion in memory."""
        since = self.lifecycle.erasures_since(season) if self.lifecycle else None
        async for ids in self.db.stream_column("erased_since", tx, LOAD_BATCH, since=since):
            await self.board.load_erased(season, version, current, ids)

    async def _load_corrections(self, tx: Tx, season: str, version: str) -> None:
        """The snapshot's state of each corrected completion (void, restore),
        unless a newer one reached the version live (HSETNX): a correction
        projected later converges from there (apply.lua)."""
        rows = await self.db.fetch("season_corrections", tx, season=season)
        await self.board.load_corrections(
            season, version, [(r["seq"], r["correction"], r["counted"]) for r in rows])

    async def _load(self, tx: Tx, source: Source, version: str,
                    live: dict[int, int]) -> None:
        """Add each learner's aggregate (less what reached the new version
        live) to it; a learner missing afterwards fails the rebuild, unless
        erased (the tombstone kept them off rightly)."""
        expected = loaded = 0
        seen: set[int] = set()
        season = source.season
        async for rows in self.db.stream(source.aggregates, tx, LOAD_BATCH, **source.params):
            standings = []
            for r in rows:
                seen.add(r["user_id"])
                standings.append((r["user_id"], int(r["score"]) - live.get(r["user_id"], 0),
                                  r["last_at"], r["profile_version"], r["visibility"],
                                  r["display_name"]))
            loaded += await self.board.load_standings(season, version, standings)
            expected += len(rows)
        if loaded != expected:
            raise RebuildFailed(f"{expected - loaded} learners missing from the new board")
        # Learners whose only completions reached the version live but count
        # nothing in the snapshot (voided since): take those points back.
        back = [(u, -pts, None, 0, "public", "") for u, pts in live.items()
                if u not in seen and pts]
        for i in range(0, len(back), LOAD_BATCH):
            await self.board.load_standings(season, version, back[i:i + LOAD_BATCH])
