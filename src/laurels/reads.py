"""Where a board is read: the public top and a learner's neighbourhood.

Privacy is enforced here, at the boundary: anonymous learners lose name and
id, hidden ones are never on the public board (the Redis projection keeps
them in a separate set). A season whose board is missing while PostgreSQL has
its completions is rebuilt, and meanwhile answers `503 rebuilding`, never a
partial board.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from laurels.board import Board, BoardMissing, Entry
from laurels.board.rebuild import Rebuilder
from laurels.db import Database
from laurels.errors import Problem
from laurels.seasons import Season
from laurels.settings import Settings

T = TypeVar("T")
HEAL_WAIT_SECONDS = 2.0
RETRY_AFTER_SECONDS = 2


def iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def public_entry(e: Entry) -> dict[str, Any]:
    if e.visibility == "anonymous":
        return {"rank": e.rank, "user_id": None, "display_name": "Anonymous", "score": e.score}
    return {"rank": e.rank, "user_id": e.user_id, "display_name": e.display_name,
            "score": e.score}


class Reads:
    def __init__(self, settings: Settings, db: Database, board: Board,
                 rebuilder: Rebuilder) -> None:
        self.settings = settings
        self.db = db
        self.board = board
        self.rebuilder = rebuilder

    def season_info(self, season: Season, now: datetime | None = None) -> dict[str, Any]:
        now = now or datetime.now(UTC)
        closed = season.is_closed(now, self.settings.late_grace_seconds,
                                  self.settings.close_seasons)
        return {"season": season.name, "starts_at": iso(season.starts_at),
                "ends_at": iso(season.ends_at), "status": "closed" if closed else "open",
                "tie_policy": self.settings.tie_policy}

    async def _with_board(self, season: Season, read: Callable[[], Awaitable[T]],
                          empty: Callable[[], T]) -> T:
        try:
            return await read()
        except BoardMissing:
            pass
        row = await self.db.fetch_one("season_has_completions", season=season.name)
        if not row or not row["present"]:
            return empty()
        task = self.rebuilder.ensure(season.name)
        try:
            await asyncio.wait_for(asyncio.shield(task), HEAL_WAIT_SECONDS)
        except (TimeoutError, Exception):  # the rebuild reports its own failure
            pass
        try:
            return await read()
        except BoardMissing:
            raise Problem("rebuilding", f"the board of {season.name} is being rebuilt; "
                          "retry shortly", retry_after=RETRY_AFTER_SECONDS) from None

    async def top(self, season: Season, limit: int) -> dict[str, Any]:
        top = await self._with_board(season, lambda: self.board.top(season.name, limit),
                                     lambda: None)
        body = self.season_info(season)
        body["total"] = top.total if top else 0
        body["entries"] = [public_entry(e) for e in top.entries] if top else []
        return body

    async def around(self, season: Season, user_id: int, radius: int) -> dict[str, Any]:
        around = await self._with_board(
            season, lambda: self.board.around(season.name, user_id, radius), lambda: None)
        if around is None:
            raise Problem("not_ranked", f"learner {user_id} has no completions in {season.name}")
        me = around.me
        neighbors = []
        for i, e in enumerate(around.neighbors):
            if i == around.index:
                entry = {"rank": e.rank, "user_id": e.user_id, "display_name": e.display_name,
                         "score": e.score, "self": True}
            else:
                entry = {**public_entry(e), "self": False}
            neighbors.append(entry)
        return {"season": season.name,
                "user": {"rank": me.rank, "user_id": me.user_id,
                         "display_name": me.display_name, "score": me.score,
                         "visibility": me.visibility},
                "neighbors": neighbors}
