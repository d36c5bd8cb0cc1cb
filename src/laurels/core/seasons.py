"""Periods and their seasons, in a time zone, chosen by completed_at (pure functions).

A period is one way of cutting time into boards (docs/contract.md, Domain):

| period | season name  | boundaries                     | closes          | tie time width |
|--------|--------------|--------------------------------|-----------------|----------------|
| week   | `2026-W49`   | ISO-8601 week, Monday 00:00    | end + grace     | 12 digits      |
| day    | `2026-11-30` | 00:00 to 24:00                 | end + grace     | 12 digits      |
| month  | `2026-11`    | the 1st 00:00 to the next 1st  | end + grace     | 13 digits      |
| all    | `all`        | none                           | never           | 18 digits      |
| 7d     | `last-7d`    | the last 7 local days, moving  | never           | 18 digits      |
| 30d    | `last-30d`   | the last 30 local days, moving | never           | 18 digits      |

Days, weeks (Monday to Sunday) and months are those of the local calendar of
the season's time zone (`LAURELS_TIME_ZONE` for the whole board and leagues,
a board kind's own for its boards): a season runs from the first instant of its
first local day to the first instant of the next season's, so a day across
a daylight-saving change lasts 23 or 25 hours (where midnight is skipped,
a day starts at the gap's end). `starts_at` and `ends_at` are instants in
UTC, and season_of(at) is the season that contains `at`. A season's zone is
part of it: the zone is given where a season is made (season_of,
parse_season) and every season derived from it keeps it.

Every completion counts on the season of each configured period that holds
its `completed_at`. `week` is always on. A season's board keys carry the
period in their hash tag (board/keys.py), and the `first` policy's tie time is the
microseconds since the season's start, zero-padded to the period's width, so
members of one board always compare in time order (a month holds at most
2.7e12 us; all time, from year 1, at most 3.2e17).

A rolling window (`7d`, `30d`: CONTRACT.md, "Rolling windows") is one season
whatever the instant, like `all`, and its tie times count from the same
origin; which completions it holds moves with the clock, not with its name:
its board keeps the first local day it still holds (board/keys.py, the
window marker), refuses a completion of an earlier day, and at each local
midnight sheds the day leaving it (lifecycle/windows.py). A completion's
entry on a window carries its local day (its day season's label).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import cached_property, lru_cache
from typing import Literal, get_args

from laurels.core.registry import METRICS, Metric
from laurels.core.time_zones import BadZone, local_date, local_midnight, zone_info

Period = Literal["week", "day", "month", "all", "7d", "30d"]
PERIODS: tuple[Period, ...] = get_args(Period)
WINDOW_DAYS: dict[Period, int] = {"7d": 7, "30d": 30}  # the rolling windows' lengths
WEEK = timedelta(days=7)
DAY = timedelta(days=1)
EPOCH = date(1, 1, 1)  # the `all` season's tie times count from here
END_OF_TIME = datetime.max.replace(tzinfo=UTC)
START_OF_TIME = datetime.min.replace(tzinfo=UTC)
TS_WIDTHS: dict[Period, int] = {"week": 12, "day": 12, "month": 13, "all": 18, "7d": 18,
                                 "30d": 18}
ALIASES: dict[str, Period] = {"current": "week", "current-day": "day",
                              "current-month": "month"}

_WEEK_RE = re.compile(r"([0-9]{4})-W([0-9]{2})")
_DAY_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_MONTH_RE = re.compile(r"([0-9]{4})-([0-9]{2})")
GLOBAL = "global"  # the whole platform's board: every completion counts on it
BOARD_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}:[A-Za-z0-9._-]{1,64}")  # a tag, `kind:value`
SEASON_FORMS = ("season must be YYYY-Www (e.g. 2026-W49), YYYY-MM-DD, YYYY-MM, all, "
                "last-7d, last-30d, current, current-day or current-month")


def kind_of(board: str) -> str:  # `course` of `course:python-101`
    return board.partition(":")[0]


class BadSeason(ValueError):
    pass


class PeriodOff(LookupError):
    """A well-formed season of a period that is not configured (404)."""


def shifted(at: datetime, delta: timedelta) -> datetime:
    """`at + delta`, held within the instants a board can hold (year 1 to
    9999): the first and last seasons of every period have neighbours
    beyond them that do not exist, and a margin reaching there means
    "from the beginning" or "to the end"."""
    try:
        return at + delta
    except OverflowError:
        return END_OF_TIME if delta > timedelta(0) else START_OF_TIME


def _add_months(d: date, n: int) -> date:
    months = d.year * 12 + d.month - 1 + n
    return date(months // 12, months % 12 + 1, 1)


@dataclass(frozen=True)
class Season:
    """A season of a board: the whole platform's (`global`), or a board of a
    kind (`course:python-101`, docs/design.md, "Boards of a kind"), which
    ranks by its kind's metric in its kind's zone.

    `name` identifies it everywhere a season is stored (Redis keys, the
    seasons and archive tables, a heal's set): the period's name (`label`)
    for `global`, as always; for a board, `board/metric/zone/label`
    (`course:python-101/points/Europe/Paris/2026-W49`), so parsing it needs
    nothing but the name, and a kind defined again with another metric or
    zone names other seasons, never a stale board of the old one."""

    period: Period
    start: date  # its first local day (for `all`, EPOCH)
    zone: str = "UTC"  # the IANA time zone of its calendar
    board: str = GLOBAL
    metric: Metric = "points"

    @cached_property
    def name(self) -> str:
        if self.board == GLOBAL:
            return self.label
        return f"{self.board}/{self.metric}/{self.zone}/{self.label}"

    @property
    def kind(self) -> str | None:  # its board's kind; None for `global`
        return None if self.board == GLOBAL else kind_of(self.board)

    @property
    def shown(self) -> str:
        """How a message names it: `2026-W49`, or `2026-W49 of course:python-101`."""
        return self.label if self.board == GLOBAL else f"{self.label} of {self.board}"

    @cached_property
    def label(self) -> str:
        """The period's name of the season (`2026-W49`), whatever its board."""
        if self.period == "week":
            year, week, _ = self.start.isocalendar()
            return f"{year:04d}-W{week:02d}"
        if self.period == "day":
            return self.start.isoformat()
        if self.period == "month":
            return f"{self.start.year:04d}-{self.start.month:02d}"
        if self.period in WINDOW_DAYS:
            return f"last-{self.period}"
        return "all"

    @property
    def bounded(self) -> bool:  # False for `all` and windows: no end, never closes
        return self.period not in UNBOUNDED

    @property
    def window(self) -> bool:  # a rolling window (`last-7d`, `last-30d`)
        return self.period in WINDOW_DAYS

    def window_from(self, today: date) -> date:
        """A window's first local day on `today` (local to its zone): the
        last WINDOW_DAYS days, today included."""
        return today - timedelta(days=WINDOW_DAYS[self.period] - 1)

    @cached_property
    def starts_at(self) -> datetime:
        """The first instant; for `all` and a window, year 1 (where their
        tie times count from)."""
        if self.period in UNBOUNDED:
            return datetime(self.start.year, self.start.month, self.start.day, tzinfo=UTC)
        return local_midnight(self.start, self.zone)

    @cached_property
    def ends_at(self) -> datetime:
        """The end (exclusive); for `all`, the end of year 9999."""
        try:
            nxt = self.later(1).start
        except (OverflowError, ValueError):  # past year 9999
            return END_OF_TIME
        if self.period in UNBOUNDED:
            return END_OF_TIME
        try:
            return local_midnight(nxt, self.zone)
        except OverflowError:  # the last local day of year 9999
            return END_OF_TIME

    def closes_at(self, grace_seconds: int) -> datetime:
        return shifted(self.ends_at, timedelta(seconds=grace_seconds))

    def is_closed(self, now: datetime, grace_seconds: int, close_seasons: bool = True) -> bool:
        return close_seasons and self.bounded and now >= self.closes_at(grace_seconds)

    def contains(self, at: datetime) -> bool:
        return self.starts_at <= at < self.ends_at

    def offset_us(self, at: datetime) -> int:
        """Microseconds since the season started (fits the period's width)."""
        delta = at - self.starts_at
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds

    @property
    def ts_width(self) -> int:
        return TS_WIDTHS[self.period]

    def pad_ts(self, at: datetime) -> str:
        """The `first` policy's tie time of a completion at `at` on this board
        (offset_us and ranking.pad_ts in one call: every entry an apply or a
        rebuild sends makes one)."""
        d, width = at - self.starts_at, TS_WIDTHS[self.period]
        return f"{(d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds:0{width}d}"

    def later(self, n: int) -> Season:
        """The season n periods later (earlier for n < 0); `all` and a
        window are themselves.
        OverflowError (or ValueError) beyond year 1 or 9999."""
        if self.period == "week":
            start = self.start + n * WEEK
        elif self.period == "day":
            start = self.start + n * DAY
        elif self.period == "month":
            start = _add_months(self.start, n)
        else:
            return self
        return _season(self.period, start, self.zone, self.board, self.metric)

    def on(self, board: str, metric: Metric) -> Season:
        """The same period's season on `board` (ranking by `metric`)."""
        return _season(self.period, self.start, self.zone, board,
                       "points" if board == GLOBAL else metric)

    def previous(self) -> Season:
        return self.later(-1)

    def next(self) -> Season:
        return self.later(1)

    def __str__(self) -> str:
        return self.name

    def __lt__(self, other: Season) -> bool:
        """Seasons sort by name, as their rows and locks do (the lock order
        takes archives in name order)."""
        return self.name < other.name


UNBOUNDED: frozenset[Period] = frozenset({"all", *WINDOW_DAYS})


def _season(period: Period, start: date, zone: str, board: str = GLOBAL,
            metric: Metric = "points") -> Season:
    """One object per season: its boundaries are computed once (ingest asks
    for them for every item of a batch). `all` has no calendar: its zone is
    always UTC, so one all-time board is one season whatever the zone."""
    return _one(period, start, "UTC" if period == "all" else zone, board, metric)


# Seasons kept (10,000 courses' weeks, days and all time: 30,000); past this
# the least recently used is made again, its boundaries computed again.
@lru_cache(maxsize=32_768)
def _one(period: Period, start: date, zone: str, board: str, metric: Metric) -> Season:
    return Season(period, start, zone, board, metric)


def week(year: int, number: int, zone: str = "UTC") -> Season:
    return _season("week", date.fromisocalendar(year, number, 1), zone)


def season_of(at: datetime, period: Period, *, zone: str) -> Season:
    """The season of `period`, in the calendar of `zone`, that holds `at`."""
    if at.tzinfo is None:
        raise ValueError("completed_at needs an offset")
    if period == "all":
        return _season("all", EPOCH, "UTC")
    if period in WINDOW_DAYS:
        return _season(period, EPOCH, zone)
    day = local_date(at, zone)
    if period == "week":
        start = day - timedelta(days=day.weekday())
    elif period == "day":
        start = day
    else:
        start = day.replace(day=1)
    season = _season(period, start, zone)
    while at < season.starts_at:  # (a gap across midnight not on the hour)
        season = season.previous()
    while at >= season.ends_at:  # (the day before a skipped one)
        season = season.next()
    return season


def parse_periods(text: str) -> tuple[Period, ...]:
    """`LAURELS_PERIODS`: a comma list of periods; `week` is always on. In
    the canonical order (week, day, month, all, 7d, 30d)."""
    names = {p.strip() for p in text.split(",") if p.strip()}
    unknown = names - set(PERIODS)
    if unknown:
        raise ValueError(f"unknown period {sorted(unknown)[0]!r}: "
                         "use week, day, month, all, 7d, 30d")
    return tuple(p for p in PERIODS if p in names or p == "week")


def label_of(name: str) -> str:
    """A season's name as the API shows it (a board's: its period's name)."""
    return name.rpartition("/")[2]


WINDOW_NAMES: dict[str, Period] = {f"last-{p}": p for p in WINDOW_DAYS}


def period_of(name: str) -> Period:
    """The period of a season's name (not validated: see parse_season)."""
    name = label_of(name)
    if name == "all":
        return "all"
    if name in WINDOW_NAMES:
        return WINDOW_NAMES[name]
    if "-W" in name:
        return "week"
    return "day" if name.count("-") == 2 else "month"


def is_board_season(name: str) -> bool:
    """Whether a season's name is one of a board of a kind (Season.name)."""
    return "/" in name


def whole_week(name: str) -> bool:
    """Whether a season is a week of the whole board: the boards with rank
    events, `season_final` and leagues (and, for the first two, the weeks of
    a kind that notifies: notifier.notifies)."""
    return period_of(name) == "week" and not is_board_season(name)


def parse_season(text: str, now: datetime | None = None, *, zone: str) -> Season:
    """A season's name (`2026-W49`, `2026-11-30`, `2026-11`, `all`) or an
    alias by the clock (`current`, `current-day`, `current-month`), in the
    calendar of `zone`. A board's season name (Season.name) carries its own
    zone, and so is read in that one."""
    if "/" in text:
        return _parse_board_season(text)
    if text in ALIASES:
        return season_of(now or datetime.now(UTC), ALIASES[text], zone=zone)
    if text == "all":
        return _season("all", EPOCH, "UTC")
    if text in WINDOW_NAMES:
        return _season(WINDOW_NAMES[text], EPOCH, zone)
    try:
        if m := _WEEK_RE.fullmatch(text):
            year, number = int(m.group(1)), int(m.group(2))
            try:
                start = date.fromisocalendar(year, number, 1)
            except ValueError:
                raise BadSeason(f"{year} has no ISO week {number}") from None
            return _season("week", start, zone)
        if m := _DAY_RE.fullmatch(text):
            return _season("day", date(int(m.group(1)), int(m.group(2)), int(m.group(3))), zone)
        if m := _MONTH_RE.fullmatch(text):
            return _season("month", date(int(m.group(1)), int(m.group(2)), 1), zone)
    except ValueError as exc:
        if isinstance(exc, BadSeason):
            raise
        raise BadSeason(f"{text} is not a date ({exc})") from None
    raise BadSeason(SEASON_FORMS)


@lru_cache(maxsize=32_768)
def season_named(name: str, zone: str) -> Season:
    """A stored season's name (a row's, a key's, a hint's) as its Season, in
    the calendar of `zone` (a board's season name carries its own): the
    text form read back at an edge, once."""
    return parse_season(name, zone=zone)


def _parse_board_season(text: str) -> Season:
    board, _, rest = text.partition("/")
    metric, _, rest = rest.partition("/")
    zone, _, label = rest.rpartition("/")
    if not BOARD_RE.fullmatch(board) or metric not in METRICS or label in ALIASES:
        raise BadSeason(f"{text!r} is not a board's season")
    try:
        zone_info(zone)
    except BadZone:
        raise BadSeason(f"{text!r} is not a board's season") from None
    return parse_season(label, zone=zone).on(board, metric)


def configured_season(text: str, periods: tuple[Period, ...], now: datetime | None = None,
                      *, zone: str) -> Season:
    """`parse_season` of a name from outside (a URL, the CLI), refusing
    (PeriodOff) a period not in `periods`; a board is named apart
    (`?board=`), never inside a season's name."""
    if is_board_season(text):
        raise BadSeason(SEASON_FORMS)
    season = parse_season(text, now, zone=zone)
    if season.period not in periods:
        raise PeriodOff(f"the {season.period} boards are not configured (LAURELS_PERIODS)")
    return season
