"""A long board's history: the closed seasons it is the sum of.

The board of all time (and of a month, when days are configured) counts the
same completions as the weeks (the days) it spans. Once one of those closes,
its standings are archived in PostgreSQL, kept corrected (a void after the
close re-ranks its archive) and never change otherwise. So a long board is
rebuilt, and verified, from the archived standings of its closed parts plus
its completions from the first part still open (the cutoff) on: its cost
grows with learners and open weeks, not with years, and completions of
closed parts may be retired (docs/operations.md, "A year of history").

Which parts: for `all`, every finalized week before the earliest week still
open (every completion's week has a `seasons` row, so weeks without one hold
none); for a month, its days from the first, as long as each is finalized
(a day without a row may hold completions recorded before days were
configured: the parts stop there).
"""

from __future__ import annotations

import asyncio
import calendar
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from laurels.core.seasons import END_OF_TIME, GLOBAL, Period, Season, parse_season, season_of
from laurels.core.spans import part_period, spanned
from laurels.db import Database, Tx

PATTERNS = {"week": "____-W__", "day": "____-__-__"}

# A month is kept this long after its end whatever the retention: a 30-day
# window holds its last day until 30 local days after (then reads it to take
# it out), and a zone or a late move may add a day.
WINDOW_KEEP_DAYS = 32


@dataclass(frozen=True)
class History:
    parts: list[str]  # the closed seasons the board is built from (their archives)
    cutoff: datetime  # its completions count from here on


async def history_of(db: Database, periods: tuple[Period, ...], board: Season,
                     tx: Tx | None = None) -> History | None:
    """The history a long board is the sum of, or None: a board built from its
    own completions (not long, or nothing of it closed yet)."""
    if board.bounded:
        closed = await db.fetch("part_seasons", tx, pattern=_like(board.name),
                                first=board.name, last=board.name)
        if closed and closed[0]["finalized"]:
            # A closed season is its own archive (its completions may be
            # retired): a rebuild reads its standings, as its reads do.
            return History([board.name], END_OF_TIME)
    if board.board != GLOBAL:
        return await _board_history(db, board, tx) if board.period == "all" else None
    part = part_period(board.period, periods)
    if part is None:
        return None
    if part == "week":
        return await weeks_history(db, tx)
    first, last = board.start, _last_day(board)
    rows = await db.fetch("part_seasons", tx, pattern=PATTERNS["day"],
                          first=first.isoformat(), last=last.isoformat())
    return _days(board, {r["season"]: bool(r["finalized"]) for r in rows})


async def _board_history(db: Database, board: Season, tx: Tx | None) -> History | None:
    """The all-time board of a kind's board once months were retired: every
    season of its boards touching a retired month was archived before the
    month went (lifecycle.archive_boards_of), and months go in order; so its
    finalized weeks up to the week holding the last retired instant (or up
    to that week's start, when that week is not archived: a kind defined
    after, whose boards never counted what went) stand for everything
    before, and its completions count from there on. None while nothing
    was retired: built from its completions."""
    row = await db.fetch_one("last_retired_month", tx)
    if row is None or row["month"] is None:
        return None
    month: date = row["month"]
    gone = datetime(month.year, month.month, 1, tzinfo=UTC) + timedelta(days=31)
    # Its weeks, in its kind's zone (the name of `all` carries none): a kind
    # deleted takes its seasons with it, so they are all in its zone now.
    head = f"{board.board}/{board.metric}/"
    rows = await db.fetch("board_weeks", tx, pattern=_like(head) + "%/" + PATTERNS["week"])
    if not rows:
        return None
    weeks = {r["season"]: parse_season(r["season"], zone=board.zone) for r in rows}
    zone = next(iter(weeks.values())).zone
    last = season_of(gone.replace(day=1) - timedelta(microseconds=1), "week",
                     zone=zone).on(board.board, board.metric)
    finalized = {r["season"] for r in rows if r["finalized"]}
    cutoff = last.ends_at if last.name in finalized else last.starts_at
    parts = [n for n in sorted(finalized) if weeks[n].ends_at <= cutoff]
    return History(parts, cutoff) if parts else None


def _like(name: str) -> str:
    """A season's name as a LIKE pattern matching itself (a board's value
    may hold `_`)."""
    return name.replace("_", "\\_")


async def weeks_history(db: Database, tx: Tx | None = None) -> History | None:
    """Every finalized week before the earliest week still open, and that
    cutoff (the all-time board's history; the seal's cutoff too)."""
    rows = await db.fetch("part_seasons", tx, pattern=PATTERNS["week"], first="0000",
                          last="9999-W99")
    return _weeks([(parse_season(r["season"], zone=db.zone), bool(r["finalized"]))
                   for r in rows])


def _weeks(weeks: list[tuple[Season, bool]]) -> History | None:
    open_starts = [w.starts_at for w, finalized in weeks if not finalized]
    closed = [w for w, finalized in weeks if finalized]
    if not closed:
        return None
    cutoff = min(open_starts) if open_starts else max(w.ends_at for w in closed)
    parts = [w.name for w in closed if w.starts_at < cutoff]
    return History(parts, cutoff) if parts else None


def _last_day(month: Season) -> date:
    """A month's last local day (the last month of year 9999 has no next)."""
    return month.start.replace(day=calendar.monthrange(month.start.year, month.start.month)[1])


def _days(month: Season, finalized: dict[str, bool]) -> History | None:
    parts: list[str] = []
    day: date = month.start
    while day <= _last_day(month) and finalized.get(day.isoformat()):
        parts.append(day.isoformat())
        if day == date.max:
            break
        day += timedelta(days=1)
    if not parts:
        return None
    return History(parts, parse_season(parts[-1], zone=month.zone).ends_at)


RETRY_SECONDS = 0.25  # between tries of a partition a batch needs (Partitions)
SEAL_BATCH = 100_000  # ids a seal moves at a time (Partitions.seal)


def month_of(at: datetime) -> date:
    utc = at.astimezone(UTC)
    return date(utc.year, utc.month, 1)


class Partitions:
    """The months of completions (migration 013): each month's partition is
    made ahead of its first completion (this month's and the next, by the
    service's loop; any other a batch needs, before it is recorded), so the
    default partition stays empty."""

    def __init__(self, db: Database,
                 before_retiring: Callable[[datetime, datetime, datetime], Awaitable[bool]]
                 | None = None, *, grace_seconds: int = 0, close_seasons: bool = True,
                 tie_policy: str = "shared", windows: bool = False) -> None:
        self.db = db
        # When a week closes by the clock (settings: late_grace_seconds,
        # close_seasons), and the policy an empty week is closed with.
        self.grace_seconds, self.close_seasons = grace_seconds, close_seasons
        self.tie_policy = tie_policy
        self.windows = windows  # the deployment's periods hold a rolling window
        # Called before a month is retired (lifecycle.archive_boards_of):
        # False keeps it for now.
        self.before_retiring = before_retiring
        self.known: set[date] = set()  # made (by anyone) as far as this process knows

    async def ensure(self, months: set[date]) -> bool:
        """Make the months' partitions; False when one could not be made now
        (its locks were taken: each try waits at most 100 ms for them,
        migration 019, so no statement on completions queues behind it)."""
        made = True
        for month in sorted(months - self.known):
            row = await self.db.fetch_one("ensure_partition", month=month)
            if row is not None and row["name"] is not None:
                self.known.add(month)
            else:
                made = False
        return made

    async def ensure_before_recording(self, months: set[date]) -> None:
        """What a batch needs before it is recorded: its months' partitions,
        tried again every RETRY_SECONDS while a long transaction keeps them
        from being made. Its rows never go to the default partition (whose
        rows a later partition would have to move), and between the tries
        every other statement on completions goes on."""
        while not await self.ensure(months):
            await asyncio.sleep(RETRY_SECONDS * random.uniform(0.5, 1.5))  # noqa: S311

    async def ahead(self, now: datetime) -> bool:
        this = month_of(now)
        following = date(this.year + this.month // 12, this.month % 12 + 1, 1)
        return await self.ensure({this, following})

    async def seal(self, limit: int = SEAL_BATCH) -> tuple[int, int]:
        """Move the ids of finalized weeks out of the open partition of
        completion_ids into the sealed one (migration 020), so that a
        recording's index holds the open weeks' ids, not all of history.
        One step a call: stage up to `limit` ids, or move the staged ones once
        every transaction that was running at the staging has ended. The
        ids (staged, moved)."""
        history = await weeks_history(self.db)
        if history is None:
            return 0, 0
        row = await self.db.fetch_one("seal_completion_ids", cutoff=history.cutoff,
                                      limit=limit)
        staged, moved = (int(row["staged"]), int(row["moved"])) if row else (0, 0)
        if moved:
            await self.db.run("vacuum_open_ids")  # the moved rows' space, for the next ids
        return staged, moved

    async def retire(self, now: datetime, retain_days: int | None) -> list[date]:
        """Drop the months of completions wholly older than `retain_days`
        whose seasons (every week, day and month they touch) are closed and
        archived, and whose league weeks are decided (while the deployment's
        leagues are on: its stored switch, not this process's settings):
        every board, archive and result stays as it was (docs/operations.md);
        while a rolling window is configured (the deployment's or a kind's),
        never one that ended less than WINDOW_KEEP_DAYS ago.
        The months dropped."""
        if retain_days is None:
            return []
        # (never a month a rolling window may still hold: lifecycle/windows.py
        # takes a day out by reading its completions)
        if self.windows or await self.db.fetch_one("kinds_with_windows") is not None:
            retain_days = max(retain_days, WINDOW_KEEP_DAYS)
        limit = now - timedelta(days=retain_days)
        done = []
        for row in await self.db.fetch("completion_months"):
            month: date = row["month"]
            start = datetime(month.year, month.month, 1, tzinfo=UTC)
            end = datetime(month.year + month.month // 12, month.month % 12 + 1, 1, tzinfo=UTC)
            # In order: a month goes once every month before it went (a
            # kind's all-time board stands on that: _board_history).
            if end > limit or not await self._closed(start, end, now):
                break
            if self.before_retiring is not None and not await self.before_retiring(
                    start, end, now):
                break
            found = await self.db.fetch_one("retire_month", month=month)
            if not (found and found["retired"]):
                break  # busy: this month, and every later one, next time
            self.known.discard(month)
            done.append(month)
        return done

    async def _closed(self, start: datetime, end: datetime, now: datetime) -> bool:
        """Whether every season touching [start, end) is finalized, no
        undecided challenge's window reaches into it, and, with the
        deployment's leagues on, every week of it someone joined decided.

        A week PostgreSQL does not know has no completion yet, but it takes
        one until it closes by the clock: only then may its month go, and it
        is first recorded finalized, empty (`close_empty_weeks`), so that a
        completion arriving for it later is refused (`season_closed`) rather
        than counted in a range whose completions are gone (found by
        tests/integration/test_model_interleaved.py: a retired month, then a
        replay moved into its open week, counted twice on the all-time
        board). Days and months PostgreSQL does not know hold no completions
        (acceptance is the week's alone)."""
        zone = self.db.zone
        weeks = spanned(start, end, "week", zone)
        names = [w.name for w in weeks] + [
            s.name for p in ("day", "month") for s in spanned(start, end, p, zone)]
        known = {r["season"]: r["finalized"]
                 for r in await self.db.fetch("seasons_touching", seasons=names)}
        if not all(known.values()):
            return False
        empty = [w for w in weeks if w.name not in known]
        if empty:
            if not all(w.is_closed(now, self.grace_seconds, self.close_seasons) for w in empty):
                return False
            await self.db.run("close_empty_weeks", seasons=[w.name for w in empty],
                              tie_policy=self.tie_policy)
            # An ingest that made a week's row first kept it open: wait.
            rows = await self.db.fetch("seasons_touching", seasons=[w.name for w in empty])
            if len(rows) < len(empty) or not all(r["finalized"] for r in rows):
                return False
        if await self.db.fetch("undecided_challenges_in", start=start, end=end):
            return False  # a challenge not decided yet still reads them
        return not await self.db.fetch("undecided_league_weeks",
                                       seasons=[w.name for w in weeks])
