"""The read path's own memory of who must not be shown in public.

The stores keep hidden learners apart and erased ones out. This is the
second line: every process keeps, from PostgreSQL, the learners who are not
public (hidden, anonymous, erased), and every public entry is checked
against it at the boundary, whatever Redis or the archive says. It matters
when a store is wrong for a while: Redis restarted from an older snapshot
still holds a learner erased since, until the epoch watch has rebuilt it.

It is refreshed incrementally (rows whose `updated_at` moved, with an
overlap for transactions that committed late) and updated at once by the
profile changes and erasures of this process.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from laurels.db import Database

log = logging.getLogger("laurels.privacy")

OVERLAP = timedelta(seconds=30)  # a transaction that started earlier may commit later
REFRESH_SECONDS = 2.0
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Privacy:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.status: dict[int, str] = {}  # user id -> hidden | anonymous | erased
        self.since = EPOCH
        self.loaded = False

    def note(self, user_id: int, visibility: str, erased: bool = False) -> None:
        """A change this process just made (visible to its next read at once)."""
        if erased:
            self.status[user_id] = "erased"
        elif visibility == "public":
            self.status.pop(user_id, None)
        else:
            self.status[user_id] = visibility

    async def refresh(self) -> int:
        rows = await self.db.fetch("private_learners",
                                   since=self.since - OVERLAP if self.loaded else EPOCH,
                                   only_private=not self.loaded)
        for r in rows:
            self.note(r["user_id"], r["visibility"], r["erased"])
            self.since = max(self.since, r["updated_at"])
        self.loaded = True
        return len(rows)

    def visibility(self, user_id: int, stored: str) -> str:
        """The stricter of what a store says and what PostgreSQL said last:
        erased > hidden > anonymous > public."""
        known = self.status.get(user_id)
        if known is None:
            return stored
        return max(known, stored, key=_STRICTNESS.__getitem__)


_STRICTNESS = {"public": 0, "anonymous": 1, "hidden": 2, "erased": 3}
