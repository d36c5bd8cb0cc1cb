"""Personal notifications from the boards' rank events.

The apply script appends rank events (entered the top 10, passed someone in
the top 100) to the season's Redis stream atomically with the score change.
The notifier (off the ingest hot path, in every process that runs the
projector) turns them into durable PostgreSQL rows, idempotently, then tells
the API processes, which push them to the learner's notification stream
(hub.py). Closing a week writes everyone's final rank (`season_final`).

The whole board's weeks notify, and the weeks of the boards of a kind whose
`notify` is on (CONTRACT.md, "Boards of a course, a track or a skill"):
their notifications are stored under the board's season name and carry
`"board"` in their data; they are shown by the period's name
(seasons.label_of). A kind may have 10,000 boards, and a board nobody
completes must cost nothing: the whole board's week is read every pass,
a board's only once a hint said it changed (this process's applies at
once, the others' through the subscription), and every notifying board
once a minute (a hint lost, a dead consumer's pending events).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from datetime import UTC, datetime

from laurels import failpoints
from laurels.board.hints import Hint
from laurels.board.roles import Announcer
from laurels.board_kinds import BoardKinds
from laurels.db import Database, Jsonb, Tx
from laurels.kind_rules import BoardKind
from laurels.metrics import NOTIFICATIONS_WRITTEN
from laurels.seasons import GLOBAL, is_board_season, parse_season, season_of, whole_week

log = logging.getLogger("laurels.notifier")

SEASONS_SECONDS = 10.0  # how often the open weeks are read again
SWEEP_SECONDS = 60.0  # how often every notifying board's stream is read


class Notifier:
    """Turns the seasons' rank-event streams into durable notifications."""

    def __init__(self, db: Database, board: Announcer, kinds: BoardKinds | None = None
                 ) -> None:
        self.db = db
        self.board = board
        self.kinds = kinds
        self.consumer = f"{os.uname().nodename}-{os.getpid()}"
        self._seasons: list[str] = []
        self._seasons_at = 0.0
        self._kinds: Mapping[str, BoardKind] = {}  # as of the last read of the open weeks
        self._changed: set[str] = set()  # boards of kinds a hint named since the last pass
        self._swept_at = float("-inf")

    def heard(self, hint: Hint) -> None:
        """A season changed (signals.changes): a board of a kind's stream
        is read on the next pass."""
        if is_board_season(hint["season"]):
            self._changed.add(hint["season"])

    async def _live_kinds(self, tx: Tx | None = None) -> Mapping[str, BoardKind]:
        return await self.kinds.live(tx) if self.kinds is not None else {}

    async def _open_seasons(self) -> list[str]:
        """The open weeks that notify (rank events come from weekly boards
        only), re-read every 10 s (`consume` adds the whole board's week, so
        the first notifications of a new week come at once)."""
        if time.monotonic() - self._seasons_at > SEASONS_SECONDS:
            self._kinds = kinds = await self._live_kinds()
            self._seasons = [r["season"] for r in await self.db.fetch("open_seasons")
                             if notifies(r["season"], kinds)]
            self._seasons_at = time.monotonic()
        return self._seasons

    async def consume(self, count: int = 200) -> int:
        """Process what the streams hold (and what dead consumers left); returns entries."""
        handled = 0
        known = await self._open_seasons()
        this_week = season_of(datetime.now(UTC), "week", zone=self.db.zone).name
        if time.monotonic() - self._swept_at > SWEEP_SECONDS:
            self._swept_at, self._changed = time.monotonic(), set()
            seasons = known
        else:  # (a board's week new since the last read of the open weeks, too)
            changed, self._changed = self._changed, set()
            if any(s.partition(":")[0] not in self._kinds for s in changed):
                # A kind defined since the open weeks were read: its boards'
                # hints count at once, not at the next sweep (a minute).
                self._kinds = await self._live_kinds()
            seasons = [s for s in known if not is_board_season(s)]
            seasons += sorted(s for s in changed if notifies(s, self._kinds))
        for season in seasons if this_week in seasons else [*seasons, this_week]:
            events = await self.board.rank_events(season, self.consumer, count,
                                                  create=season in known)
            if len(events) == count and is_board_season(season):
                self._changed.add(season)  # more wait: read again next pass
            for entry_id, fields in events:
                if fields:
                    await self._handle(season, fields)
                # Each at once: a replay of an older event after a newer one
                # refreshed the same notice would bring the older one back.
                await self.board.done_with(season, entry_id)
                handled += 1
        return handled

    async def _handle(self, season: str, f: dict[str, str]) -> None:
        uid, seq = int(f["uid"]), f["seq"]
        shown = parse_season(season, zone=self.db.zone)
        board = {} if shown.board == GLOBAL else {"board": shown.board}
        passed_ids = [int(p) for p in filter(None, f.get("passed", "").split(","))]
        created: list[tuple[int, int]] = []
        async with self.db.transaction() as tx:
            # Share-lock everyone involved: an erasure (FOR UPDATE) either
            # committed before (we see it and write nothing about them) or
            # waits for us (and then deletes and scrubs what we wrote).
            users = await self.db.fetch("lock_users", tx, user_ids=sorted({uid, *passed_ids}))
            erased = {r["user_id"] for r in users if r["erased"]}
            if uid in erased:
                return
            if f.get("top10") == "1":
                row = await self.db.fetch_one(
                    "insert_notification", tx, user_id=uid, kind="top10", season=season,
                    data=Jsonb({"rank": int(f["rank"]), "score": int(f["score"]), **board}),
                    # At most once per learner and season: leaving the top 10
                    # and entering it again tells them nothing new.
                    dedup_key=f"top10:{season}")
                if row:
                    created.append((uid, row["id"]))
                    NOTIFICATIONS_WRITTEN.labels("top10").inc()
            for target in passed_ids:
                if target in erased:
                    continue
                # Who passed them, by id only: the name is resolved when the
                # notification is read or sent (notifications.py), as the
                # mover is then (an anonymous one stays unnamed).
                data = Jsonb({"by_user_id": uid, "season": shown.label, **board})
                key = f"overtaken:{season}:{seq}"
                row = await self.db.fetch_one("refresh_overtaken", tx, user_id=target,
                                              season=season, data=data, dedup_key=key)
                if row is None:
                    row = await self.db.fetch_one(
                        "insert_notification", tx, user_id=target, kind="overtaken",
                        season=season, data=data, dedup_key=key)
                if row:
                    created.append((target, row["id"]))
                    NOTIFICATIONS_WRITTEN.labels("overtaken").inc()
            await failpoints.pause("notification_written")
        for target, nid in created:
            await self.board.publish_notification(target, nid)

    async def season_final(self, seasons: list[str], tx: Tx) -> None:
        """In the finalizing transaction: everyone's final rank, once, on
        the seasons that notify (weeks only: the contract's `season_final`
        is weekly); one statement for them all."""
        notifying = await self._notifying(seasons, tx)
        if not notifying:
            return
        extras = []
        for season in notifying:
            board = parse_season(season, zone=self.db.zone).board
            extras.append(Jsonb({} if board == GLOBAL else {"board": board}))
        written = await self.db.run("notify_season_final", tx, seasons=notifying,
                                    extras=extras)
        NOTIFICATIONS_WRITTEN.labels("season_final").inc(max(0, written))

    async def announce_final(self, seasons: list[str]) -> None:
        for season in await self._notifying(seasons):
            await self.board.announce_final(season)

    async def _notifying(self, seasons: list[str], tx: Tx | None = None) -> list[str]:
        """Those of `seasons` that notify (the kinds read once, if any is a
        board of a kind's)."""
        if not any(is_board_season(s) for s in seasons):
            return [s for s in seasons if whole_week(s)]
        kinds = await self._live_kinds(tx)
        return [s for s in seasons if notifies(s, kinds)]


def notifies(season: str, kinds: Mapping[str, BoardKind]) -> bool:
    """Whether a season's board sends rank notifications: a week of the
    whole board, or the week of a board of a kind whose `notify` is on."""
    if whole_week(season):
        return True
    if not is_board_season(season):
        return False
    named = parse_season(season, zone="UTC")  # (a board's name carries its zone)
    kind = kinds.get(named.board.partition(":")[0])
    return (named.period == "week" and kind is not None and kind.notify
            and (kind.metric, kind.time_zone) == (named.metric, named.zone))
