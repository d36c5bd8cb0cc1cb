"""Compare a season's board in Redis with the sums in PostgreSQL.

Scores are compared, and so are the names and visibility the board holds
(they are a projection of the users table too), and under the `first` policy
each learner's tie time (their latest counted completion), which orders
ties. Bounded memory: PostgreSQL sums are streamed through a server-side
cursor and Redis learners are walked with HSCAN, a batch at a time; the ids
PostgreSQL streamed are kept (8 bytes a learner, in id order) so that only
the learners it did not stream are looked up again. Tolerant
of completions in flight: the outbox is settled first, and every difference
seen is checked again after settling once more, so only lasting ones are
reported.
"""

from __future__ import annotations

import asyncio
from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from laurels.board import BoardMissing
from laurels.board.roles import Scanner
from laurels.core import shapes
from laurels.core.seasons import Period, Season, season_named
from laurels.core.shapes import MismatchField
from laurels.db import Database
from laurels.lifecycle.closing import Lifecycle
from laurels.lifecycle.history import history_of
from laurels.lifecycle.windows import Windows
from laurels.projection.projector import Projector

BATCH = 2000
MAX_CANDIDATES = 10_000
MAX_LISTED = 100


# (score, visibility, display name, tie time: the latest counted completion's
# offset in the season, in microseconds; None under `shared`, where it orders nothing)
State = tuple[int | None, str, str, int | None]
Sums = tuple[str, str, dict[str, Any]]  # (all learners' query, by ids, their parameters)
NONE: State = (None, "public", "", None)


@dataclass
class Mismatch:
    user_id: int
    redis: int | None
    postgres: int | None
    field: MismatchField = "score"  # or "profile": same score, stale name or visibility; "tie"
    difference: str = ""  # what differs, in words


def describe(redis: State, postgres: State) -> tuple[MismatchField, str]:
    """(field, what differs) between a learner's state in Redis and in PostgreSQL."""
    if redis[0] != postgres[0]:
        return "score", f"score: Redis {redis[0]}, PostgreSQL {postgres[0]}"
    if redis[1:3] == postgres[1:3]:
        return "tie", (f"tie time (microseconds into the season): Redis {redis[3]}, "
                       f"PostgreSQL {postgres[3]}")
    parts = []
    if redis[1] != postgres[1]:
        parts.append(f"visibility: Redis {redis[1]}, PostgreSQL {postgres[1]}")
    if redis[2] != postgres[2]:
        parts.append(f"display_name: Redis {redis[2]!r}, PostgreSQL {postgres[2]!r}")
    return "profile", "; ".join(parts)



@dataclass
class VerifyResult:
    season: Season
    players_checked: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    mismatch_count: int = 0

    @property
    def consistent(self) -> bool:
        return self.mismatch_count == 0

    def body(self) -> shapes.Verified:
        return {"season": self.season.label, "board": self.season.board,
                "consistent": self.consistent,
                "players_checked": self.players_checked,
                "mismatches": [{"user_id": m.user_id, "redis": m.redis, "postgres": m.postgres,
                                "field": m.field, "difference": m.difference}
                               for m in self.mismatches[:MAX_LISTED]]}


class Verifier:
    def __init__(self, db: Database, board: Scanner, projector: Projector,
                 lifecycle: Lifecycle | None = None,
                 periods: tuple[Period, ...] = ("week",), windows: Windows | None = None
                 ) -> None:
        self.db = db
        self.board = board
        self.periods = periods  # which boards are long (lifecycle/history.py)
        self.windows = windows
        self.projector = projector
        self.lifecycle = lifecycle

    async def _redis_scores(self, season: Season, user_ids: list[int]) -> dict[int, State]:
        try:
            stored = await self.board.scores(season, user_ids)
            return {u: (*s[:3], s[3] if self._ties else None) for u, s in stored.items()}
        except BoardMissing:
            pass
        if self.lifecycle and await self.lifecycle.finalized([season]):
            # Its Redis keys expired: the archive is what readers see; check that.
            rows = await self.db.fetch("archived_states", season=season, user_ids=user_ids)
            found = {r["user_id"]: self._state(season, r) for r in rows}
            return {u: found.get(u, NONE) for u in user_ids}
        return dict.fromkeys(user_ids, NONE)

    async def _sums(self, season: Season) -> Sums:
        """The PostgreSQL side of a season: its completions' sums, or for a
        long board its closed parts' archives plus the rest (lifecycle/history.py)."""
        if season.window and self.windows is not None:  # from its marker, once moved
            return "season_sums", "season_sums_for", {
                "window_starts": await self.windows.starts(season)}
        history = await history_of(self.db, self.periods, season)
        if history is None:
            return "season_sums", "season_sums_for", {}
        return "long_sums", "long_sums_for", {"parts": history.parts, "cutoff": history.cutoff}

    async def _pg_scores(self, season: Season, user_ids: list[int], sums: Sums
                         ) -> dict[int, State]:
        _, by_id, params = sums
        rows = await self.db.fetch(by_id, season=season, user_ids=user_ids, **params)
        found = {r["user_id"]: self._state(season, r) for r in rows}
        return {u: found.get(u, NONE) for u in user_ids}

    @property
    def _ties(self) -> bool:
        return self.board.policy == "first"

    def _state(self, season: Season, row: Any) -> State:
        tie = (season.offset_us(row["last_at"])
               if self._ties else None)
        return (int(row["score"]), row["visibility"], row["display_name"], tie)

    async def _settle(self) -> None:
        await self.projector.drain(min_age_seconds=0)

    async def every_season(self) -> list[tuple[Season, bool]]:
        """Every season PostgreSQL knows, of every board, open and closed:
        (season, finalized), in name order (`laurels verify --all`)."""
        return [(season_named(r["season"], self.db.zone), bool(r["finalized"]))
                for r in await self.db.fetch("every_season")]

    async def verify(self, season: Season) -> VerifyResult:
        result = VerifyResult(season)
        await self._settle()
        sums = await self._sums(season)
        candidates: set[int] = set()
        seen = await self._compare_streamed(result, candidates, season, sums)
        extra = await self._find_extra(result, candidates, season, sums, seen)
        result.players_checked = len(seen) + extra
        if candidates:
            await asyncio.sleep(0.2)  # let fast paths in flight finish
            await self._settle()
            await self._check_again(result, sorted(candidates), season, sums)
            # Differences beyond the candidates we could keep still count.
            result.mismatch_count = (len(result.mismatches)
                                     + max(0, result.mismatch_count - len(candidates)))
        if self.lifecycle is not None and await self.lifecycle.finalized([season]):
            await self._compare_archive(result, season)
        return result

    async def _compare_archive(self, result: VerifyResult, season: Season) -> None:
        """A finalized season's archive (what its board is compared with
        above: history.history_of) against its completions' sums, whether
        or not Redis still holds its board: every learner of either, each
        score and tie time; not once retention retired some of them (the
        archive is all there is then). Both live in PostgreSQL and are read
        in one snapshot, so nothing is in flight between them: every
        difference is listed at once (as `archive: ...`)."""
        seen = array("q")
        async with self.db.snapshot() as tx:
            retired = await self.db.fetch_one("last_retired", tx)
            if retired is not None and retired["month"] is not None and (
                    season.starts_at.date()) < _month_after(retired["month"]):
                return
            async for rows in self.db.stream("season_sums", tx, BATCH, season=season):
                seen.extend(r["user_id"] for r in rows)
                held = {r["user_id"]: self._state(season, r) for r in await self.db.fetch(
                    "archived_states", tx, season=season, user_ids=[r["user_id"] for r in rows])}
                for r in rows:
                    self._archive_note(result, r["user_id"], held.get(r["user_id"], NONE),
                                       self._state(season, r))
            async for ids in self.db.stream_column("archived_ids", tx, BATCH, season=season):
                extra = [u for u in ids if not _holds(seen, u)]
                for r in await self.db.fetch("archived_states", tx, season=season,
                                             user_ids=extra) if extra else []:
                    self._archive_note(result, r["user_id"], self._state(season, r), NONE)

    @staticmethod
    def _archive_note(result: VerifyResult, uid: int, archived: State, postgres: State) -> None:
        if archived[0] == postgres[0] and archived[3] == postgres[3]:
            return  # names and visibility are the users table's on both sides
        what, difference = describe(archived, postgres)
        result.mismatch_count += 1
        result.mismatches.append(Mismatch(uid, archived[0], postgres[0], what,
                                          "archive: " + difference.replace("Redis", "archive")))

    async def _compare_streamed(self, result: VerifyResult, candidates: set[int], season: Season,
                                sums: Sums) -> array[int]:
        """Every learner PostgreSQL knows, against Redis; the ids streamed,
        in id order (the sums are ORDER BY user_id)."""
        seen = array("q")
        async with self.db.transaction() as tx:
            async for rows in self.db.stream(sums[0], tx, BATCH, season=season, **sums[2]):
                seen.extend(r["user_id"] for r in rows)
                redis_states = await self._redis_scores(season, [r["user_id"] for r in rows])
                for r in rows:
                    if redis_states[r["user_id"]] != self._state(season, r):
                        self._note(result, candidates, r["user_id"])
        return seen

    async def _find_extra(self, result: VerifyResult, candidates: set[int], season: Season,
                          sums: Sums, seen: array[int]) -> int:
        """Learners on the board that PostgreSQL did not stream (extra
        points), looked up again in case they scored since; how many."""
        extra = 0
        counted: set[int] = set()  # a scan may return a learner twice (ZSCAN, two sets)
        async for batch in self.board.scan_scored(season, BATCH):
            unseen = [uid for uid in dict.fromkeys(batch)
                      if not _holds(seen, uid) and uid not in counted]
            counted.update(unseen)
            if not unseen:
                continue
            pg = await self._pg_scores(season, unseen, sums)
            for uid in unseen:
                if pg[uid][0] is None:
                    extra += 1
                    self._note(result, candidates, uid)
        return extra

    async def _check_again(self, result: VerifyResult, ids: list[int], season: Season,
                           sums: Sums) -> None:
        """The differences seen, once more after settling: only lasting ones are listed."""
        for i in range(0, len(ids), BATCH):
            part = ids[i:i + BATCH]
            pg = await self._pg_scores(season, part, sums)
            rs = await self._redis_scores(season, part)
            for uid in part:
                if pg[uid] != rs[uid]:
                    what, difference = describe(rs[uid], pg[uid])
                    result.mismatches.append(
                        Mismatch(uid, rs[uid][0], pg[uid][0], what, difference))

    @staticmethod
    def _note(result: VerifyResult, candidates: set[int], uid: int) -> None:
        result.mismatch_count += 1
        if len(candidates) < MAX_CANDIDATES:
            candidates.add(uid)


def _month_after(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


def _holds(ids: array[int], uid: int) -> bool:
    """Whether the sorted `ids` hold `uid`."""
    i = bisect_left(ids, uid)
    return i < len(ids) and ids[i] == uid
