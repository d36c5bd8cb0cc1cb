"""Season lifecycle: close, archive, re-rank, expiry.

Finalizing a closed season archives its standings once, however many
processes try, and gives its Redis keys an expiry. An archive is re-ranked
when a learner's visibility changes or a learner is erased (learners/erasure.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from laurels.board.roles import Keeper
from laurels.core import failpoints
from laurels.core.errors import StoreUnavailable
from laurels.core.metrics import SEASONS_FINALIZED
from laurels.core.registry import SeasonFinalized
from laurels.core.seasons import (
    END_OF_TIME,
    GLOBAL,
    Season,
    kind_of,
    season_named,
    season_of,
    shifted,
)
from laurels.core.spans import spanned
from laurels.db import Database, Jsonb, Tx
from laurels.process.settings import Settings

log = logging.getLogger("laurels.lifecycle")
# Boards' seasons of one kind's period finalized in one transaction
# (finalize_boards): closing 10,000 boards one by one took 153 s (issue 42).
FINALIZE_BOARDS = 1_000


def finalized_event(season: Season) -> SeasonFinalized:
    return {"season": season.label, "period": season.period, "board": season.board}


class Lifecycle:
    def __init__(self, settings: Settings, db: Database, board: Keeper) -> None:
        self.settings = settings
        self.db = db
        self.board = board
        # async callbacks(seasons, tx), in the finalizing transaction; then
        # async callbacks(seasons), after it commits.
        self.on_finalized: list[Any] = []
        self.after_finalized: list[Any] = []

    # -- visibility of archived seasons ---------------------------------------

    async def rerank(self, tx: Tx, seasons: list[Season]) -> None:
        """Recompute the public ranks of archived seasons (in the caller's
        transaction): after a visibility change or an erasure, ranks close up."""
        for season in seasons:
            await self._rerank(tx, season)

    async def lock_archives(self, tx: Tx, seasons: list[Season]) -> None:
        """The re-rank locks of archived seasons, in name order, held to the
        end of the caller's transaction: taken before any standing row is
        written, so a re-rank never waits for a row while holding one."""
        for season in sorted(seasons):
            await self.db.run("lock_archive", tx, season=season)

    async def _rerank(self, tx: Tx, season: Season) -> None:
        row = await self.db.fetch_one("season_policies", tx, seasons=[season],
                                      tie_policy=self.settings.tie_policy)
        policy = row["tie_policy"] if row else self.settings.tie_policy
        await self.db.run("lock_archive", tx, season=season)
        await self.db.run("clear_archive_ranks", tx, season=season)
        await self.db.run("rerank_archive", tx, season=season, tie_policy=policy)

    # -- seasons ---------------------------------------------------------------

    def _season(self, name: str) -> Season:
        """A season's name, as a row holds it, read at the edge."""
        return season_named(name, self.settings.time_zone)

    def _closed(self, season: Season, now: datetime) -> bool:
        return season.is_closed(now, self.settings.late_grace_seconds,
                                self.settings.close_seasons)

    async def finalize_due(self, now: datetime | None = None) -> list[Season]:
        """Finalize every season past its end plus grace (none if seasons never close)."""
        if not self.settings.close_seasons:
            return []
        now = now or datetime.now(UTC)
        due = [s for s in map(self._season, (r["season"] for r in await self.db.fetch(
            "unfinalized_seasons"))) if self._closed(s, now)]
        # The whole board's seasons first, in order; then the boards of
        # kinds, each waiting for the whole board's weeks it spans. A kind
        # may have 10,000 boards closing at once: those of one period (one
        # range, one metric) are finalized together, FINALIZE_BOARDS a
        # transaction (finalize_boards).
        done = [s for s in due if s.board == GLOBAL and await self.finalize(s)]
        memo: dict[tuple[str, ...], bool] = {}
        together: dict[tuple[Any, ...], list[Season]] = {}
        for b in due:
            if b.board != GLOBAL and await self._weeks_final(b, now, memo):
                together.setdefault((b.period, b.metric, b.starts_at, b.ends_at), []).append(b)
        for names in together.values():
            for i in range(0, len(names), FINALIZE_BOARDS):
                done += await self.finalize_boards(names[i:i + FINALIZE_BOARDS])
        return done

    async def _weeks_final(self, board: Season, now: datetime,
                           memo: dict[tuple[str, ...], bool], tx: Tx | None = None) -> bool:
        """Whether every whole board's week `board`'s range spans is closed
        and finalized (or has no row). A board of a kind's season closes
        once every whole board's week it spans is finalized (or has no row:
        nothing was recorded in it, and nothing can be once it is closed): a
        completion is accepted by the whole board's week alone, so no
        completion of this season can come after (docs/boards.md)."""
        weeks, week = [], season_of(board.starts_at, "week", zone=self.settings.time_zone)
        while week.starts_at < board.ends_at:
            if not self._closed(week, now):
                return False
            weeks.append(week.name)
            week = week.next()
        if tuple(weeks) not in memo:
            rows = await self.db.fetch("weeks_finalized", tx, seasons=weeks)
            memo[tuple(weeks)] = all(r["finalized"] for r in rows)
        return memo[tuple(weeks)]

    async def finalize(self, season: Season) -> bool:
        """Archive a closed season's standings once; True if this call did it."""
        async with self.db.transaction() as tx:
            row = await self.db.fetch_one("lock_season_for_finalize", tx, season=season)
            if row is None or row["finalized"]:
                return False
            await self.db.run("archive_standings", tx, season=season)
            await self.db.run("mark_finalized", tx, season=season,
                              tie_policy=self.settings.tie_policy)
            await self.db.run("enqueue_webhook", tx, type="season.finalized", user_id=None,
                              data=Jsonb(finalized_event(season)))
            await self._rerank(tx, season)
            for callback in self.on_finalized:
                await callback([season], tx)
            await failpoints.pause("finalize_before_commit")
        SEASONS_FINALIZED.inc()
        log.info("season %s finalized and archived", season)
        await self._after([season])
        return True

    async def finalize_boards(self, names: list[Season]) -> list[Season]:
        """Finalize boards' seasons of one period of one kind's (one range,
        one metric) as `finalize` does one, in one transaction of a few
        statements: their rows locked in name order, their archives written
        by one statement and ranked by another. Returns those this call did."""
        async with self.db.transaction() as tx:
            todo = await self._finalize_boards(tx, names)
            if not todo:
                return []
            await failpoints.pause("finalize_before_commit")
        SEASONS_FINALIZED.inc(len(todo))
        log.info("%d seasons finalized and archived (%s to %s)", len(todo), todo[0], todo[-1])
        await self._after(todo)
        return todo

    async def _finalize_boards(self, tx: Tx, names: list[Season], quiet: bool = False
                               ) -> list[Season]:
        rows = await self.db.fetch("lock_boards_for_finalize", tx, seasons=names)
        named = {s.name: s for s in names}
        todo = boards = [named[r["season"]] for r in rows if not r["finalized"]]
        if not todo:
            return []
        await self.db.run("archive_boards_standings", tx, season=boards[0], seasons=todo,
                          boards=[b.board for b in boards])
        await self.db.run("mark_boards_finalized", tx, seasons=todo,
                          tie_policy=self.settings.tie_policy)
        if not quiet:
            await self.db.fetch("enqueue_webhooks", tx, type="season.finalized",
                                data=[Jsonb(finalized_event(b)) for b in boards])
        await self.db.fetch("lock_archives", tx, seasons=todo)
        await self.db.run("rank_archives", tx, seasons=todo, tie_policy=self.settings.tie_policy)
        for callback in self.on_finalized if not quiet else ():
            await callback(todo, tx)
        return todo

    async def archive_boards_of(self, start: datetime, end: datetime, now: datetime) -> bool:
        """Before the completions of [start, end) are retired (a month,
        history.Partitions.retire): every season of a board of a kind that
        touches the range and holds one of them archived (finalized), built
        or not, so that its boards stand on their archives once those
        completions are gone (history.history_of). Quietly: it closed long
        ago (no webhook event, no notification). False while one of those
        seasons could still take a completion (open, or a whole board's
        week it spans not finalized: finalize_due's rule): the month waits.
        FINALIZE_BOARDS seasons of one period a transaction (_archive_quietly);
        True once every one has committed."""
        memo: dict[tuple[str, ...], bool] = {}
        kinds = {r["kind"]: r for r in await self.db.fetch("board_kinds")}
        for k in kinds.values():  # closed, as finalize_due closes a board's season
            for p in k["periods"]:
                for s in spanned(start, end, p, k["time_zone"]) if p != "all" else []:
                    if not (self._closed(s, now) and await self._weeks_final(s, now, memo)):
                        return False
        tags = await self.db.fetch("month_tags", starts=start, ends=end) if kinds else []
        together: dict[tuple[Any, ...], list[Season]] = {}
        for t in tags:  # each season of its boards holding one of them
            if (kind := kinds.get(kind_of(t["tag"]))) is None:
                continue
            for p in kind["periods"]:
                held = spanned(t["first_at"], t["last_at"] + timedelta(microseconds=1), p,
                               kind["time_zone"]) if p != "all" else []
                for s in held:
                    on = s.on(t["tag"], kind["metric"])
                    together.setdefault((on.period, on.metric, on.starts_at, on.ends_at),
                                        []).append(on)
        for names in together.values():
            names.sort()
            for i in range(0, len(names), FINALIZE_BOARDS):
                await self._archive_quietly(names[i:i + FINALIZE_BOARDS])
        return True

    async def _archive_quietly(self, names: list[Season]) -> None:
        """archive_boards_of's transaction, under the kinds' lock (shared):
        those of `names` (one period's) whose kind is still defined as they
        say archived, their rows then their archives locked in name order."""
        async with self.db.transaction() as tx:
            await self.db.fetch("share_board_kinds", tx)
            live = {r["kind"]: r for r in await self.db.fetch("board_kinds", tx)}
            chunk = []
            for b in names:
                k = live.get(b.kind)
                if k is not None and (k["metric"], k["time_zone"]) == (b.metric, b.zone):
                    chunk.append(b)
            if not chunk:
                return
            await self.db.run("ensure_seasons", tx, seasons=chunk)
            done = await self._finalize_boards(tx, chunk, quiet=True)
        await self._expire(done)  # (a board built meanwhile has keys)

    async def _after(self, seasons: list[Season]) -> None:
        """After seasons' finalizations commit: the callbacks, then their
        keys' expiry in Redis (Redis unavailable: logged, as a Redis that
        lost the keys needs none)."""
        for after in self.after_finalized:
            await after(seasons)
        await self._expire(seasons)

    async def _expire(self, seasons: list[Season]) -> None:
        if not seasons:
            return
        try:
            await self.board.expire_many({s: self.expires_at(s) for s in seasons})
        except StoreUnavailable as exc:
            log.warning("could not set the expiry of %s in Redis: %s",
                        ", ".join(s.name for s in seasons[:3]), exc)

    def expires_at(self, season: Season) -> datetime:
        """A closed season stays in Redis while it is among the KEEP most
        recent of its period (`all` never closes, never expires)."""
        try:
            later = season.later(self.settings.keep_seasons)
        except (OverflowError, ValueError):  # its successors would lie past year 9999
            return END_OF_TIME
        return later.closes_at(self.settings.late_grace_seconds)

    def erasures_since(self, season: Season) -> datetime | None:
        """The earliest erasure that may concern a season (None: any): its
        start less the allowed clock skew, and a day for clocks that disagree."""
        if not season.bounded:
            return None
        return shifted(season.starts_at,
                       -timedelta(seconds=self.settings.max_future_skew_seconds, days=1))

    async def expire(self, season: Season) -> int:
        """Give every Redis key of a season its expiry; returns how many keys."""
        return await self.board.expire(season, self.expires_at(season))

    async def finalized(self, seasons: Iterable[Season], tx: Tx | None = None
                        ) -> dict[Season, str]:
        """The finalized ones among `seasons`, with their tie policy."""
        wanted = list(seasons)
        rows = await self.db.fetch("season_policies", tx, seasons=wanted,
                                   tie_policy=self.settings.tie_policy)
        policies = {r["season"]: r["tie_policy"] for r in rows}
        return {s: policies[s.name] for s in wanted if s.name in policies}
