"""Filling a board's new version from a snapshot of PostgreSQL (rebuild.py
begins it and switches to it): its tombstones, its idempotency bits, each
learner's aggregate less what reached it live, its corrections. One board
from its own statements (`fill_one`), or many boards of kinds of one
period, metric and zone from one scan of their completions (`fill_many`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from laurels import failpoints
from laurels.board.roles import Builder
from laurels.board_kinds import score_of
from laurels.db import Database, Row, Tx
from laurels.history import History
from laurels.keys import ChunkBits, chunk_bits, hashed_bits
from laurels.seasons import is_board_season, parse_season

if TYPE_CHECKING:
    from laurels.lifecycle import Lifecycle

SEQ_BATCH = 20_000  # seqs per fetch while setting the bits
LOAD_BATCH = 1_000  # learners per load_board.lua call (a few ms of Redis)
FIELDS_PER_CALL = 2_000  # chunks of a board of a kind per merge_fields call

BOARDS_AT_ONCE = 1_000  # boards of kinds built from one scan (fill_many)

Progress = Callable[[int, int], None]


def group_of(season: str) -> str | None:
    """What boards built together from one scan share (run_many): a board
    of a kind's metric, zone and season label; None for the whole board's
    seasons, built alone."""
    return season.partition("/")[2] if is_board_season(season) else None


class RebuildFailed(Exception):
    """A rebuild could not finish (its reason is recorded on the rebuild)."""


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

    @property
    def long(self) -> bool:
        """Built from archives too (history.py): never with other boards."""
        return self.count == "long_event_count"

    @classmethod
    def of(cls, season: str, history: History | None) -> Source:
        if history is None:
            return cls(season, "season_event_count", "season_seqs", "season_aggregates",
                       {"season": season})
        return cls(season, "long_event_count", "long_seqs", "long_aggregates",
                   {"season": season, "parts": history.parts, "cutoff": history.cutoff})


@dataclass
class Building:
    """One board's build under way: its rebuild, the version built beside
    the current one, where its snapshot comes from, how many completions
    it is built from."""

    season: str
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

    async def add(self, rows: Sequence[Row]) -> None:
        standings = []
        live = self.live
        for r in rows:
            user_id = r["user_id"]
            self.seen.add(user_id)
            standings.append((user_id, int(r["score"]) - live.get(user_id, 0), r["last_at"],
                              r["profile_version"], r["visibility"], r["display_name"]))
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
    """Fills new versions (rebuild.py's `Rebuilder` owns their lock, record,
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
            async for rows in self.db.stream(source.aggregates, tx, LOAD_BATCH,
                                             **source.params):
                await loader.add(rows)
            await loader.finish()
            rows = await self.db.fetch("season_corrections", tx, season=built.season)
            await self._load_corrections(built, rows)

    async def fill_many(self, tx: Tx, builds: list[Building]) -> None:
        """`_fill_one` of many boards of one `group_of` at once: one
        snapshot, each statement reading their completions once for all
        (`BOARDS_FILTER`, db/variants.py), its rows dealt to each board."""
        first = parse_season(builds[0].season, zone=self.db.zone)

        def params() -> dict[str, Any]:
            return {"season": first, "seasons": [b.season for b in builds],
                    "boards": [parse_season(b.season, zone=self.db.zone).board
                               for b in builds]}

        by_season = {b.season: b for b in builds}
        async with self.db.snapshot(tx):
            await self.db.run("rebuild_without_jit", tx)
            await self._load_erased(tx, builds)  # its first statement takes the snapshot
            await failpoints.pause("rebuild_snapshot_taken")
            bits = {b.season: Bits(self.board, b) for b in builds}
            async for pairs in self.db.stream_tuples("boards_seqs", tx, SEQ_BATCH, **params()):
                for season, same in groupby(pairs, key=itemgetter(0)):
                    await bits[season].add([seq for _, seq in same])
            loaders = {}
            for b in builds:
                b.events = bits[b.season].seen
                live = await self._live(tx, b, await bits[b.season].finish())
                loaders[b.season] = Loader(self.board, b, live)
            async for rows in self.db.stream("boards_aggregates", tx, LOAD_BATCH, **params()):
                for season, held in groupby(rows, key=itemgetter("season")):
                    await loaders[season].add(list(held))
            for loader in loaders.values():
                await loader.finish()
            corrected: dict[str, list[Row]] = {}
            for r in await self.db.fetch("boards_corrections", tx, **params()):
                corrected.setdefault(r["season"], []).append(r)
            for season, rows in corrected.items():
                await self._load_corrections(by_season[season], rows)

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
        metric = parse_season(built.season, zone=self.db.zone).metric
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
        together: one `since`.)"""
        season = builds[0].season
        since = self.lifecycle.erasures_since(season) if self.lifecycle else None
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
