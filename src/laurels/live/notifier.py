"""Personal notifications from the boards' rank events.

The apply script appends rank events (entered the top 10, passed someone in
the top 100) to the season's Redis stream atomically with the score change.
The notifier (off the ingest hot path, in every process that runs the
projector) turns them into durable PostgreSQL rows, idempotently, then tells
the API processes, which push them to the learner's notification stream
(live/hub.py). Closing a week writes everyone's final rank (`season_final`).

The whole board's weeks notify, and the weeks of the boards of a kind whose
`notify` is on (CONTRACT.md, "Boards of a course, a track or a skill"):
their notifications are stored under the board's season name and carry
`"board"` in their data; they are shown by the period's name
(seasons.label_of). A kind may have 10,000 boards, and a board nobody
completes must cost nothing: the whole board's week is read every pass,
a board's only once a hint said it changed (this process's applies at
once, the others' through the subscription), and every notifying board
once a minute (a hint lost, a dead consumer's pending events).

A rank event is decoded once (`RankMove.of`: the stream's strings, as
kinds.RankEvent declares them, made numbers and flags), and each
notification's data is built as its type (notifications.DATA).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from laurels.board.hints import Hint
from laurels.board.roles import Announcer
from laurels.core import failpoints
from laurels.core.metrics import NOTIFICATIONS_WRITTEN
from laurels.core.registry import RANK_EVENT_FIELDS, Overtaken, Ranked
from laurels.core.seasons import GLOBAL, Season, is_board_season, season_named, season_of
from laurels.core.shapes import visibility
from laurels.core.states import Visibility
from laurels.db import Database, Jsonb, Tx
from laurels.lifecycle.board_kinds import BoardKinds
from laurels.lifecycle.kind_rules import BoardKind
from laurels.live.notifications import FromBoard

log = logging.getLogger("laurels.notifier")

SEASONS_SECONDS = 10.0  # how often the open weeks are read again
SWEEP_SECONDS = 60.0  # how often every notifying board's stream is read


@dataclass(frozen=True)
class RankMove:
    """A rank event (kinds.RankEvent: all strings on the stream), decoded."""

    seq: str  # the completion's (a notification's dedup key names it)
    user_id: int  # the learner who moved
    visibility: Visibility  # theirs then
    rank: int  # their new rank
    score: int  # their new score
    top10: bool  # they entered the top 10
    passed: tuple[int, ...]  # the learners they passed in the top 100

    @classmethod
    def of(cls, f: Mapping[str, str]) -> RankMove:
        """The event's fields decoded; ValueError when one is missing, one
        is not declared, or one does not read as its type."""
        if set(f) != set(RANK_EVENT_FIELDS):
            raise ValueError(f"fields {sorted(f)}, not {sorted(RANK_EVENT_FIELDS)}")
        return cls(seq=f["seq"], user_id=int(f["uid"]), visibility=visibility(f["vis"]),
                   rank=int(f["rank"]), score=int(f["score"]), top10=f["top10"] == "1",
                   passed=tuple(int(p) for p in f["passed"].split(",") if p))


def from_board(season: Season) -> FromBoard:
    """What a notification of `season` carries of its board: nothing on the
    whole board, `board` on a board of a kind (CONTRACT.md)."""
    return {} if season.board == GLOBAL else {"board": season.board}


class Notifier:
    """Turns the seasons' rank-event streams into durable notifications."""

    def __init__(self, db: Database, board: Announcer, kinds: BoardKinds | None = None
                 ) -> None:
        self.db = db
        self.board = board
        self.kinds = kinds
        self.consumer = f"{os.uname().nodename}-{os.getpid()}"
        self._seasons: list[Season] = []
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

    async def _open_seasons(self) -> list[Season]:
        """The open weeks that notify (rank events come from weekly boards
        only), re-read every 10 s (`consume` adds the whole board's week, so
        the first notifications of a new week come at once)."""
        if time.monotonic() - self._seasons_at > SEASONS_SECONDS:
            self._kinds = kinds = await self._live_kinds()
            opened = [season_named(r["season"], self.db.zone)
                      for r in await self.db.fetch("open_seasons")]
            self._seasons = [s for s in opened if notifies(s, kinds)]
            self._seasons_at = time.monotonic()
        return self._seasons

    async def consume(self, count: int = 200) -> int:
        """Process what the streams hold (and what dead consumers left); returns entries."""
        handled = 0
        known = await self._open_seasons()
        this_week = season_of(datetime.now(UTC), "week", zone=self.db.zone)
        seasons = await self._to_read(known)
        for season in seasons if this_week in seasons else [*seasons, this_week]:
            events = await self.board.rank_events(season, self.consumer, count,
                                                  create=season in known)
            if len(events) == count and season.board != GLOBAL:
                self._changed.add(season.name)  # more wait: read again next pass
            for entry_id, fields in events:
                if fields:
                    await self._handle_event(season, entry_id, fields)
                # Each at once: a replay of an older event after a newer one
                # refreshed the same notice would bring the older one back.
                await self.board.done_with(season, entry_id)
                handled += 1
        return handled

    async def _to_read(self, known: list[Season]) -> list[Season]:
        """The notifying weeks whose streams this pass reads: every one on a
        sweep, else the whole board's and the boards a hint named."""
        if time.monotonic() - self._swept_at > SWEEP_SECONDS:
            self._swept_at, self._changed = time.monotonic(), set()
            return known
        # (a board's week new since the last read of the open weeks, too)
        changed, self._changed = self._changed, set()
        if any(s.partition(":")[0] not in self._kinds for s in changed):
            # A kind defined since the open weeks were read: its boards'
            # hints count at once, not at the next sweep (a minute).
            self._kinds = await self._live_kinds()
        hinted = [season_named(s, self.db.zone) for s in sorted(changed)]
        return [*(s for s in known if s.board == GLOBAL),
                *(s for s in hinted if notifies(s, self._kinds))]

    async def _handle_event(self, season: Season, entry_id: str,
                            fields: Mapping[str, str]) -> None:
        try:
            move = RankMove.of(fields)
        except ValueError as exc:  # it never will read: dropped, not retried forever
            log.error("rank event %s of %s dropped: %s", entry_id, season, exc)
            return
        await self._handle(season, move)

    async def _handle(self, season: Season, move: RankMove) -> None:
        uid, seq, passed_ids = move.user_id, move.seq, list(move.passed)
        created: list[tuple[int, int]] = []
        async with self.db.transaction() as tx:
            # Share-lock everyone involved: an erasure (FOR UPDATE) either
            # committed before (we see it and write nothing about them) or
            # waits for us (and then deletes and scrubs what we wrote).
            users = await self.db.fetch("lock_users", tx, user_ids=sorted({uid, *passed_ids}))
            erased = {r["user_id"] for r in users if r["erased"]}
            if uid in erased:
                return
            if move.top10:
                ranked: Ranked = {"rank": move.rank, "score": move.score}
                if season.board != GLOBAL:
                    ranked["board"] = season.board
                row = await self.db.fetch_one(
                    "insert_notification", tx, user_id=uid, kind="top10", season=season,
                    data=Jsonb(ranked),
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
                # notification is read or sent (live/notifications.py), as the
                # mover is then (an anonymous one stays unnamed).
                overtaken: Overtaken = {"by_user_id": uid, "season": season.label}
                if season.board != GLOBAL:
                    overtaken["board"] = season.board
                data = Jsonb(overtaken)
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

    async def season_final(self, seasons: list[Season], tx: Tx) -> None:
        """In the finalizing transaction: everyone's final rank, once, on
        the seasons that notify (weeks only: the contract's `season_final`
        is weekly); one statement for them all. SQL adds `rank` and
        `score` to each season's `from_board` (a kinds.Ranked)."""
        notifying = await self._notifying(seasons, tx)
        if not notifying:
            return
        extras = [Jsonb(from_board(season)) for season in notifying]
        written = await self.db.run("notify_season_final", tx, seasons=notifying,
                                    extras=extras)
        NOTIFICATIONS_WRITTEN.labels("season_final").inc(max(0, written))

    async def announce_final(self, seasons: list[Season]) -> None:
        for season in await self._notifying(seasons):
            await self.board.announce_final(season)

    async def _notifying(self, seasons: list[Season], tx: Tx | None = None) -> list[Season]:
        """Those of `seasons` that notify (the kinds read once, if any is a
        board of a kind's)."""
        kinds = await self._live_kinds(tx) if any(s.board != GLOBAL for s in seasons) else {}
        return [s for s in seasons if notifies(s, kinds)]


def notifies(season: Season, kinds: Mapping[str, BoardKind]) -> bool:
    """Whether a season's board sends rank notifications: a week of the
    whole board, or the week of a board of a kind whose `notify` is on."""
    if season.period != "week":
        return False
    if season.board == GLOBAL:
        return True
    kind = kinds.get(season.kind or "")
    return (kind is not None and kind.notify
            and (kind.metric, kind.time_zone) == (season.metric, season.zone))
