"""The read path's own memory of who must not be shown in public.

The stores keep hidden learners apart and erased ones out. This is the
second line: every process keeps, from PostgreSQL, the learners who are not
public (hidden, anonymous, erased), and every public entry is checked
against it at the boundary, whatever Redis or the archive says. It matters
when a store is wrong for a while: Redis restarted from an older snapshot
still holds a learner erased since, until the epoch watch has rebuilt it.

It is refreshed incrementally (rows changed by a transaction at or after
the horizon of the last refresh: the oldest transaction then running, so a
change that commits late is read whenever it commits) and updated at once
by the profile changes and erasures of this process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from laurels.db import Database

log = logging.getLogger("laurels.privacy")

REFRESH_SECONDS = 2.0
START = "0"  # the horizon before the first load: every transaction


class Privacy:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.status: dict[int, str] = {}  # user id -> hidden | anonymous | erased
        self.horizon = START
        self.loaded = False
        # Called when a refresh finds a learner newly not public (another
        # process's change): a cached body read before it, kept until a hint
        # that may have been lost, is dropped (api/caches.py).
        self.on_tightened: list[Callable[[], None]] = []

    def note(self, user_id: int, visibility: str, erased: bool = False) -> None:
        """A change this process just made (visible to its next read at once)."""
        if erased:
            self.status[user_id] = "erased"
        elif visibility == "public":
            self.status.pop(user_id, None)
        else:
            self.status[user_id] = visibility

    async def refresh(self) -> int:
        rows = await self.db.fetch("private_learners", since=self.horizon,
                                   only_private=not self.loaded)
        changed = [r for r in rows if r["user_id"] is not None]
        tightened = False
        for r in changed:
            status = "erased" if r["erased"] else r["visibility"]
            tightened |= self.loaded and status != "public" and \
                self.status.get(r["user_id"]) != status
            self.note(r["user_id"], r["visibility"], r["erased"])
        if tightened:
            for callback in self.on_tightened:
                callback()
        self.horizon = rows[0]["horizon"]
        self.loaded = True
        return len(changed)

    def visibility(self, user_id: int, stored: str) -> str:
        """The stricter of what a store says and what PostgreSQL said last:
        erased > hidden > anonymous > public."""
        known = self.status.get(user_id)
        if known is None:
            return stored
        return max(known, stored, key=_STRICTNESS.__getitem__)


_STRICTNESS = {"public": 0, "anonymous": 1, "hidden": 2, "erased": 3}
