"""Learners' names and visibility: stored in PostgreSQL, projected onto boards."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from laurels.board import Profile, default_name
from laurels.board.roles import Profiles
from laurels.core import failpoints
from laurels.core.errors import DomainError
from laurels.core.seasons import Season, season_named
from laurels.core.shapes import LearnerProfile, Suspend, visibility
from laurels.core.validation import ProfileIn
from laurels.db import Database, Tx
from laurels.learners.erasure import Erasure
from laurels.lifecycle.closing import Lifecycle
from laurels.lifecycle.teams import Teams
from laurels.reads.privacy import Privacy

log = logging.getLogger("laurels.learners")


@dataclass(frozen=True)
class Learner:
    user_id: int
    display_name: str
    visibility: str

    def body(self) -> LearnerProfile:
        return {"user_id": self.user_id, "display_name": self.display_name,
                "visibility": visibility(self.visibility)}


class Learners:
    def __init__(self, db: Database, board: Profiles, lifecycle: Lifecycle,
                 privacy: Privacy, erasure: Erasure, teams: Teams) -> None:
        self.db = db
        self.board = board
        self.lifecycle = lifecycle
        self.privacy = privacy
        self.erasure = erasure
        self.teams = teams  # a suspended learner counts in no team

    async def erase(self, user_id: int) -> bool:
        """False when the learner was erased already (learners/erasure.py)."""
        return await self.erasure.erase(user_id, committed=lambda: self.privacy.note(
            user_id, "public", erased=True))

    async def update(self, user_id: int, body: ProfileIn) -> Learner:
        # One transaction: the learner's row lock (which waits for ingests
        # holding FOR SHARE, so every season with a completion of theirs is
        # visible), then their seasons (FOR SHARE: a finalize either committed
        # its archive, which is re-ranked here, or waits for this change).
        async with self.db.transaction() as tx:
            await self.db.fetch("share_board_kinds", tx)  # its boards of kinds hold still
            row = await self.db.fetch_one("upsert_user", tx, user_id=user_id,
                                          display_name=body.display_name,
                                          visibility=body.visibility)
            if row is None:
                raise DomainError("user_erased", "this learner was erased")
            seasons = await self.db.fetch("lock_user_seasons", tx, user_id=user_id)
            await failpoints.pause("profile_locked")
            if body.visibility is not None:
                await self.lifecycle.rerank(tx, [self._season(r["season"]) for r in seasons
                                                   if r["finalized"]])
                await self._touch_leagues(tx, user_id)
        await self._project(row, [self._season(r["season"]) for r in seasons])
        # Their own choice (while suspended, they stay hidden on every board).
        return Learner(user_id, row["display_name"] or default_name(user_id),
                       row["own_visibility"])

    async def _touch_leagues(self, tx: Tx, user_id: int) -> None:
        """Their cohorts' zones may move with their visibility (they leave or
        join the cohort's board): the zone pass reads those cohorts again."""
        await self.db.run("touch_learner_cohorts", tx, user_id=user_id, season=None, seq=None)

    def _season(self, name: str) -> Season:
        return season_named(name, self.db.zone)

    async def _project(self, row: Any, seasons: list[Season]) -> None:
        """A committed profile change onto every board of the learner."""
        user_id = row["user_id"]
        profile = Profile(row["profile_version"], row["visibility"], row["display_name"] or "")
        self.privacy.note(user_id, row["visibility"])
        await failpoints.pause("profile_committed")
        # And the seasons whose rows were made since the transaction read
        # them (a late kind's board built for the first time: its snapshot
        # may precede this commit; one whose row comes after this read
        # snapshots after the commit and holds the change: issue 63).
        named = {s.name for s in seasons}
        later = [self._season(r["season"]) for r in await self.db.fetch(
            "lock_user_seasons", user_id=user_id) if r["season"] not in named]
        for season in [*seasons, *later]:
            # A season without a board needs nothing: its rebuild reads
            # PostgreSQL, and a finalized one is read from its archive
            # (re-ranked in the change's transaction). Either way the hint
            # goes out: every process drops its cached pages of the season.
            # A Redis error surfaces as 503; the stored change is kept and a
            # retried PUT projects it again.
            await self.board.set_profile(season, user_id, profile)
            await self.board.publish_hint({"season": season.name})

    async def suspend(self, user_id: int, suspended: bool, reason: str | None
                      ) -> Suspend:
        """Suspend (off every public board and hint, like a hidden learner,
        whatever their own visibility) or unsuspend; their completions still
        count, and they still read their own would-be rank. Moved between the
        sets atomically on every board, like a visibility change; audited in
        the same transaction."""
        async with self.db.transaction() as tx:
            await self.db.fetch("share_board_kinds", tx)  # its boards of kinds hold still
            await self.db.run("ensure_users", tx, user_ids=[user_id])
            row = await self.db.fetch_one("suspend_user", tx, user_id=user_id,
                                          suspended=suspended)
            if row is None:
                raise DomainError("user_erased", "this learner was erased")
            seasons = await self.db.fetch("lock_user_seasons", tx, user_id=user_id)
            await self.lifecycle.rerank(tx, [self._season(r["season"]) for r in seasons
                                             if r["finalized"]])
            await self._touch_leagues(tx, user_id)
            await self.teams.moved_everywhere(tx, user_id)  # out of (back in) their teams
            await self.db.run("insert_audit", tx,
                              action="suspend" if suspended else "unsuspend",
                              target=str(user_id), reason=reason, details=None)
        await self._project(row, [self._season(r["season"]) for r in seasons])
        return {"user_id": user_id, "suspended": bool(row["suspended"])}
