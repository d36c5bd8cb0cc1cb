"""Erasure of a learner (docs/privacy.md): every concern forgets them.

One transaction deletes the learner's data from PostgreSQL (each concern
that keeps rows of a learner forgets its own: `Forgets`, in the lock
order) and records an erasure job; the job is done when every board in
Redis has forgotten them, and is run again until then (so a crash half-way
cannot leave them visible).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from laurels.board.roles import Keeper
from laurels.core import failpoints
from laurels.core.errors import StoreUnavailable
from laurels.core.registry import UserErased
from laurels.core.seasons import Season, season_named
from laurels.db import LOCK_ORDER, Database, Jsonb, Tx
from laurels.lifecycle.closing import Lifecycle
from laurels.process.settings import Settings

log = logging.getLogger("laurels.lifecycle")  # (the name its lines have always had)


class Forgets(Protocol):
    """A concern keeping rows of a learner: the erasure has it `hold` its lock
    (`holds`: db.LOCK_ORDER's order) before their seasons, then `forget` them
    (in `Erasure.concerns`' order): the groups and cohorts that changed."""

    holds: str

    async def hold(self, tx: Tx, user_id: int) -> None: ...

    async def forget(self, tx: Tx, user_id: int) -> list[str]: ...


class Erasure:
    def __init__(self, settings: Settings, db: Database, board: Keeper,
                 lifecycle: Lifecycle) -> None:
        self.settings = settings
        self.db = db
        self.board = board
        self.lifecycle = lifecycle  # the archives' locks, re-ranks and expiries
        self._files_rewritten_for: datetime | None = None  # the erasure last scrubbed
        self.concerns: list[Forgets] = []  # what the erasure makes forget (runtime.wire)

    def _season(self, name: str) -> Season:
        """A season's name, as a row holds it, read at the edge."""
        return season_named(name, self.settings.time_zone)

    async def erase(self, user_id: int, committed: Callable[[], None] | None = None) -> bool:
        """Erase a learner (docs/privacy.md); False if erased already."""
        async with self.db.transaction() as tx:
            # Lock order: the learner's row (waits for ingests holding FOR
            # SHARE), then their seasons (a finalize building an archive
            # commits first, and its rows are deleted below; or it waits).
            # Before it all, the kinds: none is defined until this commits.
            await self.db.fetch("share_board_kinds", tx)
            tombstone = await self.db.fetch_one("erase_user", tx, user_id=user_id)
            again = bool(tombstone and tombstone["again"])
            # Each concern that keeps rows of a learner takes its locks
            # (webhooks: the learner's erasure lock; leagues: their weeks')...
            for concern in sorted(self.concerns, key=lambda c: LOCK_ORDER.index(c.holds)):
                await concern.hold(tx, user_id)
            locked = await self.db.fetch("lock_user_seasons", tx, user_id=user_id)
            seasons = {self._season(r["season"]) for r in locked}  # every period's
            # Every board of a kind they count on, built or not: a tombstone
            # in each keeps a board built later from ever taking them.
            seasons |= {self._season(r["season"]) for r in await self.db.fetch(
                "user_board_seasons", tx, user_id=user_id)}
            # The archives' locks before their standings are deleted (a
            # re-rank holding one must not wait for a row deleted here).
            await self.lifecycle.lock_archives(tx, [self._season(r["season"]) for r in locked
                                          if r["finalized"]])
            await failpoints.pause("erase_locked")
            # Ids are not moved between completion_ids' partitions while
            # they are deleted here (migration 020: the seal's move).
            await self.db.fetch("seal_lock_shared", tx)
            seasons |= {self._season(r["season"]) for r in await self.db.fetch(
                "delete_user_completions", tx, user_id=user_id)}
            archived = {self._season(r["season"]) for r in await self.db.fetch(
                "delete_user_standings", tx, user_id=user_id)}
            # ...and, once the completions are gone, forgets them, in the
            # order of the locks its statements take (members, group,
            # deliveries): what it names changed membership (groups, cohorts).
            groups: list[str] = []
            for concern in self.concerns:
                groups += await concern.forget(tx, user_id)
            await self.lifecycle.rerank(tx, sorted(archived))
            await self.db.run("record_erasure", tx, user_id=user_id,
                              seasons=sorted(seasons | archived))
            # The audit keeps the user id and nothing else about the learner,
            # and so does the webhook.
            if not again:  # erased before: no second entry, no second webhook
                await self.db.run("insert_audit", tx, action="erase", target=str(user_id),
                                  reason=None, details=None)
                erased: UserErased = {"user_id": user_id}
                await self.db.run("enqueue_webhook", tx, type="user.erased", user_id=None,
                                  data=Jsonb(erased))
            await failpoints.pause("erase_deleted")
        if committed is not None:
            committed()
        # Cached group boards and member indexes, every process; the live
        # streams of those groups and cohorts check their readers again.
        for group_id in groups:
            await self.board.publish_group_change(group_id)
        log.info("erased learner %s from %d seasons", user_id, len(seasons | archived))
        await failpoints.pause("erase_committed")
        await self.finish_erasure(user_id, sorted(seasons | archived))
        return not again

    async def finish_erasure(self, user_id: int, seasons: list[Season]) -> None:
        """Remove the learner from every board (idempotent); then close the job."""
        for season in seasons:
            # The tombstone is kept even without a board (an archive lost
            # them in the erasure's transaction); every process drops pages.
            await self.board.erase(season, user_id, self.lifecycle.expires_at(season))
            await self.board.publish_hint({"season": season.name})
        await self.db.run("finish_erasure", user_id=user_id, seasons=seasons)

    async def resume_erasures(self, min_age_seconds: float = 5.0) -> int:
        done = 0
        for row in await self.db.fetch("pending_erasures", min_age_seconds=min_age_seconds):
            try:
                await self.finish_erasure(row["user_id"],
                                          [self._season(s) for s in row["seasons"]])
                done += 1
            except StoreUnavailable as exc:
                log.warning("erasure of %s still pending: %s", row["user_id"], exc)
        return done

    async def scrub_files(self) -> bool:
        """The embedded Valkey's files (append-only file, snapshot) hold an
        erased learner's name and id until written afresh: called every
        minute (runtime.py) while Redis is embedded, this rewrites them when
        an erasure committed since the last rewrite. True if it rewrote."""
        row = await self.db.fetch_one("last_erasure")
        latest = row["at"] if row else None
        if latest is None or (self._files_rewritten_for is not None
                              and latest <= self._files_rewritten_for):
            return False
        if not await self.board.rewrite_files():
            return False  # a rewrite is running: the next call sees to this one
        self._files_rewritten_for = latest
        log.info("the embedded Valkey's files are written afresh after an erasure")
        return True
