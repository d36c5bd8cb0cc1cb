"""Learner and season lifecycle: erasure, season close and archive.

Erasure deletes a learner's data from PostgreSQL in one transaction that also
records an erasure job; the job is done when every season board in Redis has
forgotten them, and is re-run until then (so a crash half-way cannot leave
them visible). Finalizing a closed season archives its standings once, however
many processes try, and gives its Redis keys an expiry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from psycopg.types.json import Jsonb
from redis.exceptions import RedisError

from laurels import failpoints
from laurels.board import Board
from laurels.db import Database
from laurels.metrics import ERASURES, SEASONS_FINALIZED
from laurels.seasons import END_OF_TIME, parse_season, shifted
from laurels.settings import Settings

log = logging.getLogger("laurels.lifecycle")


class Lifecycle:
    def __init__(self, settings: Settings, db: Database, board: Board) -> None:
        self.settings = settings
        self.db = db
        self.board = board
        self.on_finalized: list[Any] = []  # async callbacks(season, conn): same transaction
        self.after_finalized: list[Any] = []  # async callbacks(season): after commit

    # -- erasure -------------------------------------------------------------

    async def erase(self, user_id: int, committed: Callable[[], None] | None = None) -> None:
        async with self.db.transaction() as conn:
            # Lock order: the learner's row (waits for ingests holding FOR
            # SHARE), then their seasons (a finalize building an archive
            # commits first, and its rows are deleted below; or it waits).
            await self.db.run("erase_user", conn, user_id=user_id)
            # Webhook deliveries in flight that concern the learner are sent
            # first (webhooks.py); none is sent unscrubbed after this commits.
            await self.db.fetch("erase_lock", conn, user_id=user_id)
            locked = await self.db.fetch("lock_user_seasons", conn, user_id=user_id)
            seasons = {r["season"] for r in locked}  # every period's
            # The archives' locks before their standings are deleted (a
            # re-rank holding one must not wait for a row deleted here).
            await self.lock_archives(conn, [r["season"] for r in locked if r["finalized"]])
            await failpoints.pause("erase_locked")
            # Ids are not moved between completion_ids' partitions while
            # they are deleted here (migration 020: the seal's move).
            await self.db.fetch("seal_lock_shared", conn)
            seasons |= {r["season"] for r in await self.db.fetch(
                "delete_user_completions", conn, user_id=user_id)}
            archived = {r["season"] for r in await self.db.fetch(
                "delete_user_standings", conn, user_id=user_id)}
            await self.db.run("delete_user_notifications", conn, user_id=user_id)
            await self.db.run("delete_league_history", conn, user_id=user_id)
            groups = [r["group_id"] for r in await self.db.fetch(
                "delete_user_memberships", conn, user_id=user_id)]
            await self.db.run("scrub_notifications_about", conn, user_id=str(user_id))
            await self.rerank(conn, sorted(archived))
            await self.db.run("record_erasure", conn, user_id=user_id,
                              seasons=sorted(seasons | archived))
            # The audit keeps the user id and nothing else about the learner,
            # and so does the webhook; the learner's events (sent or not) go,
            # and others' stop naming them.
            await self.db.run("insert_audit", conn, action="erase", target=str(user_id),
                              reason=None, details=None)
            await self.db.run("delete_deliveries_of", conn, user_id=user_id)
            await self.db.run("scrub_deliveries_about", conn, user_id=str(user_id))
            await self.db.run("enqueue_webhook", conn, type="user.erased", user_id=None,
                              data=Jsonb({"user_id": user_id}))
        ERASURES.inc()
        if committed is not None:
            committed()
        for group_id in groups:  # cached group boards and member indexes, every process
            await self.board.publish_group_change(group_id)
        log.info("erased learner %s from %d seasons", user_id, len(seasons | archived))
        await failpoints.pause("erase_committed")
        await self.finish_erasure(user_id, sorted(seasons | archived))

    async def finish_erasure(self, user_id: int, seasons: list[str]) -> None:
        """Remove the learner from every board (idempotent); then close the job."""
        for season in seasons:
            # The tombstone is kept even without a board; a finalized
            # season's archive lost them in the erasure's transaction. Ranks
            # closed up: every process drops its cached pages.
            await self.board.erase(season, user_id, self.expires_at(season))
            await self.board.publish_hint({"season": season})
        await self.db.run("finish_erasure", user_id=user_id, seasons=seasons)

    async def resume_erasures(self, min_age_seconds: float = 5.0) -> int:
        done = 0
        for row in await self.db.fetch("pending_erasures", min_age_seconds=min_age_seconds):
            try:
                await self.finish_erasure(row["user_id"], list(row["seasons"]))
                done += 1
            except RedisError as exc:
                log.warning("erasure of %s still pending: %s", row["user_id"], exc)
        return done

    # -- visibility of archived seasons ---------------------------------------

    async def rerank(self, conn: Any, seasons: list[str]) -> None:
        """Recompute the public ranks of archived seasons (in the caller's
        transaction): after a visibility change or an erasure, ranks close up."""
        for season in seasons:
            await self._rerank(conn, season)

    async def lock_archives(self, conn: Any, seasons: list[str]) -> None:
        """The re-rank locks of archived seasons, in name order, held to the
        end of the caller's transaction: taken before any standing row is
        written, so a re-rank never waits for a row while holding one."""
        for season in sorted(seasons):
            await self.db.run("lock_archive", conn, season=season)

    async def _rerank(self, conn: Any, season: str) -> None:
        row = await self.db.fetch_one("season_policies", conn, seasons=[season],
                                      tie_policy=self.settings.tie_policy)
        policy = row["tie_policy"] if row else self.settings.tie_policy
        await self.db.run("lock_archive", conn, season=season)
        await self.db.run("clear_archive_ranks", conn, season=season)
        await self.db.run("rerank_archive", conn, season=season, tie_policy=policy)

    # -- seasons ---------------------------------------------------------------

    def _closed(self, season: str, now: datetime) -> bool:
        return parse_season(season).is_closed(now, self.settings.late_grace_seconds,
                                              self.settings.close_seasons)

    async def finalize_due(self, now: datetime | None = None) -> list[str]:
        """Finalize every season past its end plus grace (none if seasons never close)."""
        if not self.settings.close_seasons:
            return []
        now = now or datetime.now(UTC)
        done = []
        for row in await self.db.fetch("unfinalized_seasons"):
            if self._closed(row["season"], now) and await self.finalize(row["season"]):
                done.append(row["season"])
        return done

    async def finalize(self, season: str) -> bool:
        """Archive a closed season's standings once; True if this call did it."""
        async with self.db.transaction() as conn:
            row = await self.db.fetch_one("lock_season_for_finalize", conn, season=season)
            if row is None or row["finalized"]:
                return False
            await self.db.run("archive_standings", conn, season=season)
            await self.db.run("mark_finalized", conn, season=season,
                              tie_policy=self.settings.tie_policy)
            await self.db.run("enqueue_webhook", conn, type="season.finalized", user_id=None,
                              data=Jsonb({"season": season,
                                          "period": parse_season(season).period}))
            await self._rerank(conn, season)
            for callback in self.on_finalized:
                await callback(season, conn)
            await failpoints.pause("finalize_before_commit")
        SEASONS_FINALIZED.inc()
        log.info("season %s finalized and archived", season)
        for after in self.after_finalized:
            await after(season)
        try:
            await self.expire(season)
        except RedisError as exc:
            log.warning("could not set the expiry of %s in Redis: %s", season, exc)
        return True

    def expires_at(self, season: str) -> datetime:
        """A closed season stays in Redis while it is among the KEEP most
        recent of its period (`all` never closes, never expires)."""
        try:
            later = parse_season(season).later(self.settings.keep_seasons)
        except (OverflowError, ValueError):  # its successors would lie past year 9999
            return END_OF_TIME
        return later.closes_at(self.settings.late_grace_seconds)

    def erasures_since(self, season: str) -> datetime | None:
        """The earliest erasure that may concern a season (None: any). A
        completion in it commits no earlier than its start less the allowed
        clock skew, and an erasure commits after the learner's completions;
        a day more covers clocks that disagree."""
        start = parse_season(season)
        if not start.bounded:
            return None
        return shifted(start.starts_at,
                       -timedelta(seconds=self.settings.max_future_skew_seconds, days=1))

    async def expire(self, season: str) -> int:
        """Give every Redis key of a season its expiry; returns how many keys."""
        return await self.board.expire(season, self.expires_at(season))

    async def finalized(self, seasons: list[str], conn: Any = None) -> dict[str, str]:
        """The finalized ones among `seasons`, with their tie policy."""
        rows = await self.db.fetch("season_policies", conn, seasons=seasons,
                                   tie_policy=self.settings.tie_policy)
        return {r["season"]: r["tie_policy"] for r in rows}
