"""Filling a board's new version from a snapshot of PostgreSQL (projection/rebuild.py
begins it and switches to it): its tombstones, its idempotency bits, each
learner's aggregate less what reached it live, its corrections. One board
from its own statements (`fill_one`), or many boards of kinds of one
metric, of any periods and zones, from one scan of their completions
(`fill_many`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from laurels.board.keys import ChunkBits, chunk_bits, hashed_bits
from laurels.board.roles import Builder
from laurels.board.values import Standing
from laurels.core import failpoints
from laurels.core.seasons import GLOBAL, Season
from laurels.db import Database, Row, Tx
from laurels.lifecycle.history import History
from laurels.lifecycle.kind_rules import score_of

if TYPE_CHECKING:
    from laurels.lifecycle.closing import Lifecycle

SEQ_BATCH = 20_000  # seqs per fetch while setting the bits
LOAD_BATCH = 1_000  # learners per load_board.lua call (a few ms of Redis)
FIELDS_PER_CALL = 2_000  # chunks of a board of a kind per merge_fields call

BOARDS_AT_ONCE = 1_000  # boards of kinds built from one scan (fill_many)
# fill_many reads its boards' seqs as one array a board (a few boards a
# fetch) while every seq lies within SEQ_WINDOW (PostgreSQL holds them all
# at once: 8 bytes a seq and board), else as pairs PostgreSQL sorts.
SEQ_WINDOW = 4_000_000
BOARDS_A_FETCH = 8

Progress = Callable[[int, int], None]


def group_of(season: Season) -> str | None:
    """What boards built together from one scan share (run_many): a board
    of a kind's metric (its season's range, in its zone, is the board's
    own in the scan: every period of a kind at once, an all-time board
    being named in UTC); None for the whole board's seasons, built alone."""
    if season.board == GLOBAL:
        return None
    return season.metric


def board_of(season: Season) -> str:
    """A board of a kind's tag."""
    return season.board


class RebuildFailed(Exception):
    """A rebuild could not finish (its reason is recorded on the rebuild)."""


@dataclass(frozen=True)
class Source:
    """Where a board's snapshot comes from: its completions (the named
    queries season_*), or, for a long board with closed parts, their
    archives plus its completions from the cutoff on (long_*)."""

    season: Season
    count: str
    seqs: str
    aggregates: str
    params: dict[str, Any]

    @property
    def window(self) -> dict[str, Any]:
        """A rolling window's start, for its other statements (db/variants.py)."""
        return {k: v for k, v in self.params.items() if k == "window_starts"}

    @property
    def alone(self) -> bool:
        """Built from archives too (lifecycle/history.py), or a rolling window
        from its first day: never with other boards."""
        return self.count == "long_event_count" or self.season.window

    @classmethod
    def of(cls, season: Season, history: History | None,
           window_starts: datetime | None = None) -> Source:
        if history is None:
            params: dict[str, Any] = {"season": season}
            if window_starts is not None:  # (db/variants.py)
                params["window_starts"] = window_starts
            return cls(season, "season_event_count", "season_seqs", "season_aggregates",
                       params)
        return cls(season, "long_event_count", "long_seqs", "long_aggregates",
                   {"season": season, "parts": history.parts, "cutoff": history.cutoff})


@dataclass
class Building:
    """One board's build under way: its rebuild, the version built beside
    the current one, where its snapshot comes from, how many completions
    it is built from."""

    season: Season
    rebuild_id: str
    version: str
    current: str
    source: Source
    events: int = 0
    switched: bool = False  # its version is the current one: never dropped on failure


class Bits:
    """A new version's idempotency bits, set from its snapshot's seqs in
    ascending order: one chunk (65,536 seqs) per script call, or on a board
    of a kind up to FIELDS_PER_CALL chunks of 256 in its bits hash. `finish`
    gives the seqs whose bit an apply had set live first."""

    def __init__(self, board: Builder, built: Building) -> None:
        self.board, self.season, self.version = board, built.season, built.version
        self.width, self.hashed = chunk_bits(self.season), hashed_bits(self.season)
        self.chunker = ChunkBits(self.width)
        self.fields: list[tuple[int, bytes]] = []
        self.already: list[int] = []
        self.seen = 0

    async def add(self, seqs: list[int]) -> None:
        for done in self.chunker.add_many(seqs):
            await self._flush(done)
        self.seen += len(seqs)

    async def finish(self) -> list[int]:
        await self._flush(self.chunker.rest(), last=True)
        return self.already

    async def _flush(self, done: tuple[int, bytes] | None, last: bool = False) -> None:
        if done is not None and not self.hashed:
            offsets = await self.board.merge_bits(self.season, self.version, *done)
            self.already.extend((done[0] << self.width) | offset for offset in offsets)
        elif done is not None:
            self.fields.append((done[0], done[1].rstrip(b"\0")))
        if self.fields and (last or len(self.fields) >= FIELDS_PER_CALL):
            self.already.extend(await self.board.merge_fields(self.season, self.version,
                                                              self.fields))
            self.fields.clear()


class Loader:
    """Each learner's aggregate (less what reached the new version live)
    added to it; a learner missing afterwards fails the build, unless
    erased (the tombstone kept them off rightly)."""

    def __init__(self, board: Builder, built: Building, live: dict[int, int]) -> None:
        self.board, self.season, self.version = board, built.season, built.version
        self.live = live
        self.seen: set[int] = set()
        self.expected = self.loaded = 0

    async def add(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Rows of (user id, score, tie time, profile version, visibility,
        name): the tie time a datetime (season_aggregates), or microseconds
        since the season began (boards_aggregates)."""
        standings: list[Standing] = []
        live = self.live
        for user_id, score, tie, profile_version, visibility, name in rows:
            self.seen.add(user_id)
            standings.append((user_id, score - live.get(user_id, 0), tie, profile_version,
                              visibility, name))
        self.loaded += await self.board.load_standings(self.season, self.version, standings)
        self.expected += len(rows)

    async def finish(self) -> None:
        if self.loaded != self.expected:
            raise RebuildFailed(f"{self.expected - self.loaded} learners missing from the "
                                "new board")
        # Learners whose only completions reached the version live but count
        # nothing in the snapshot (voided since): take those points back.
        back = [(u, -pts, None, 0, "public", "") for u, pts in self.live.items()
                if u not in self.seen and pts]
        for i in range(0, len(back), LOAD_BATCH):
            await self.board.load_standings(self.season, self.version, back[i:i + LOAD_BATCH])


class Filler:
    """Fills new versions (projection/rebuild.py's `Rebuilder` owns their lock, record,
    beginning and switch)."""

    def __init__(self, db: Database, board: Builder, lifecycle: Lifecycle | None) -> None:
        self.db = db
        self.board = board
        self.lifecycle = lifecycle

    async def fill_one(self, tx: Tx, built: Building, progress: Progress | None) -> None:
        """The new version filled from a snapshot of PostgreSQL taken after
        it began building."""
        source = built.source
        async with self.db.snapshot(tx):
            await self.db.run("rebuild_without_jit", tx)
            row = await self.db.fetch_one(source.count, tx, **source.params)
            total = int(row["n"]) if row else 0
            await failpoints.pause("rebuild_snapshot_taken")
            if progress:
                progress(0, total)
            await self._load_erased(tx, [built])
            bits = Bits(self.board, built)
            async for seqs in self.db.stream_column(source.seqs, tx, SEQ_BATCH,
                                                    **source.params):
                await bits.add(seqs)
                if progress:
                    progress(bits.seen, total)
            live = await self._live(tx, built, await bits.finish())
            built.events = total
            loader = Loader(self.board, built, live)
            async for standings in self.db.stream_tuples(source.aggregates, tx, LOAD_BATCH,
                                                         **source.params):
                await loader.add(standings)
            await loader.finish()
            rows = await self.db.fetch("season_corrections", tx, season=built.season,
                                       **source.window)
            await self._load_corrections(built, rows)

    async def fill_many(self, tx: Tx, builds: list[Building]) -> None:
        """`fill_one` of many boards of one `group_of` at once: one
        snapshot, each statement (boards_*) reading their completions once
        for all of them, whatever their periods, its rows dealt to each
        board by its number (`i`: its place in `builds`, from 1)."""
        seasons = [b.season for b in builds]

        def params() -> dict[str, Any]:
            return {"season": seasons[0], "boards": [s.board for s in seasons],
                    "starts": [s.starts_at for s in seasons],
                    "ends": [s.ends_at for s in seasons],
                    "boards_from": min(s.starts_at for s in seasons),
                    "boards_until": max(s.ends_at for s in seasons)}

        async with self.db.snapshot(tx):
            await self.db.run("rebuild_without_jit", tx)
            await self.db.run("rebuild_for_every_row", tx)
            await self._load_erased(tx, builds)  # its first statement takes the snapshot
            await failpoints.pause("rebuild_snapshot_taken")
            bits = [Bits(self.board, b) for b in builds]
            await self._bits_many(tx, bits, params)
            loaders = []
            for b, its_bits in zip(builds, bits, strict=True):
                b.events = its_bits.seen
                live = await self._live(tx, b, await its_bits.finish())
                loaders.append(Loader(self.board, b, live))
            async for standings in self.db.stream_tuples("boards_aggregates", tx, LOAD_BATCH,
                                                         **params()):
                for i, held in groupby(standings, key=itemgetter(0)):
                    await loaders[i - 1].add([r[1:] for r in held])
            for loader in loaders:
                await loader.finish()
            corrected: dict[int, list[Row]] = {}
            for r in await self.db.fetch("boards_corrections", tx, **params()):
                corrected.setdefault(r["i"], []).append(r)
            for i, rows in corrected.items():
                await self._load_corrections(builds[i - 1], rows)

    async def _bits_many(self, tx: Tx, bits: list[Bits],
                         params: Callable[[], dict[str, Any]]) -> None:
        """Each board's seqs into its bits, in ascending order: one array a
        board (boards_seqs, sorted here) while every completion's seq lies
        within one window (SEQ_WINDOW: what PostgreSQL holds at once, 8
        bytes a seq and board, is bounded); beyond, (board, seq) pairs
        sorted by PostgreSQL (boards_seq_pairs), streamed."""
        span = await self.db.fetch_one("completions_seq_span", tx)
        if span is None or span["first"] is None:
            return
        if span["last"] - span["first"] < SEQ_WINDOW:
            async for fetched in self.db.stream_tuples("boards_seqs", tx, BOARDS_A_FETCH,
                                                       **params()):
                for i, seqs in fetched:
                    seqs.sort()
                    await bits[i - 1].add(seqs)
            return
        async for pairs in self.db.stream_tuples("boards_seq_pairs", tx, SEQ_BATCH,
                                                 **params()):
            for i, same in groupby(pairs, key=itemgetter(0)):
                await bits[i - 1].add([seq for _, seq in same])

    async def _live(self, tx: Tx, built: Building, already: list[int]) -> dict[int, int]:
        """The points, per learner, of the completions an apply reached live
        on the new version before the snapshot's bits (they count on it
        already).

        Only completions reach a version being built live (corrections wait
        until it is current: apply.lua), each once: its points (what it
        scores on this board) are in the new version already, so the
        snapshot's aggregate gives them back (a completion voided in the
        snapshot then counts nothing). On `best` a maximum takes nothing
        back: load_board.lua keeps the higher of the two, and a completion
        voided in the snapshot that reached the version live cannot be
        told from one that counts, so the rebuild fails and runs again."""
        metric = built.season.metric
        live: dict[int, int] = {}
        if not already:
            return live
        for r in await self.db.fetch("completions_by_seq", tx, seqs=already):
            if metric == "best" and not r["counted"]:
                raise RebuildFailed("a completion voided before the snapshot reached the "
                                    "new board live; rebuild again")
            live[r["user_id"]] = live.get(r["user_id"], 0) + score_of(metric, r["points"])
        return {} if metric == "best" else live

    async def _load_erased(self, tx: Tx, builds: list[Building]) -> None:
        """The seasons' tombstones, as of the snapshot, and those learners
        off the version being built and the current one (load_erased.lua):
        the erased set lives in Redis only and may have been lost with the
        board (or rolled back with it), while a fast path still holds an
        erased learner's completion in memory. (Boards built together start
        together: the earliest `since` of theirs.)"""
        since = None
        if self.lifecycle is not None:
            starts = [self.lifecycle.erasures_since(b.season) for b in builds]
            since = None if None in starts else min(s for s in starts if s is not None)
        async for ids in self.db.stream_column("erased_since", tx, LOAD_BATCH, since=since):
            for built in builds:
                await self.board.load_erased(built.season, built.version, built.current, ids)

    async def _load_corrections(self, built: Building, rows: list[Row]) -> None:
        """The snapshot's state of each corrected completion (void, restore),
        unless a newer one reached the version live (HSETNX): a correction
        projected later converges from there (apply.lua)."""
        await self.board.load_corrections(
            built.season, built.version,
            [(r["seq"], r["correction"], r["counted"]) for r in rows])
