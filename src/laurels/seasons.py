"""Periods and their seasons, in UTC, chosen by completed_at (pure functions).

A period is one way of cutting time into boards (docs/contract.md, Domain):

| period | season name  | boundaries                     | closes          | tie time width |
|--------|--------------|--------------------------------|-----------------|----------------|
| week   | `2026-W49`   | ISO-8601 week, Monday 00:00    | end + grace     | 12 digits      |
| day    | `2026-11-30` | 00:00 to 24:00                 | end + grace     | 12 digits      |
| month  | `2026-11`    | the 1st 00:00 to the next 1st  | end + grace     | 13 digits      |
| all    | `all`        | none                           | never           | 18 digits      |

Every completion counts on the season of each configured period that holds
its `completed_at`. `week` is always on. A season's board keys carry the
period in their hash tag (keys.py), and the `first` policy's tie time is the
microseconds since the season's start, zero-padded to the period's width, so
members of one board always compare in time order (a month holds at most
2.7e12 us; all time, from year 1, at most 3.2e17).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import cached_property, lru_cache
from typing import Literal, get_args

from laurels.ranking import pad_ts

Period = Literal["week", "day", "month", "all"]
PERIODS: tuple[Period, ...] = get_args(Period)
WEEK = timedelta(days=7)
DAY = timedelta(days=1)
EPOCH = date(1, 1, 1)  # the `all` season's tie times count from here
END_OF_TIME = datetime.max.replace(tzinfo=UTC)
START_OF_TIME = datetime.min.replace(tzinfo=UTC)
TS_WIDTHS: dict[Period, int] = {"week": 12, "day": 12, "month": 13, "all": 18}
ALIASES: dict[str, Period] = {"current": "week", "current-day": "day",
                              "current-month": "month"}

_WEEK_RE = re.compile(r"([0-9]{4})-W([0-9]{2})")
_DAY_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_MONTH_RE = re.compile(r"([0-9]{4})-([0-9]{2})")
SEASON_FORMS = ("season must be YYYY-Www (e.g. 2026-W49), YYYY-MM-DD, YYYY-MM, all, "
                "current, current-day or current-month")


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


@dataclass(frozen=True, order=True)
class Season:
    period: Period
    start: date  # its first day (for `all`, EPOCH)

    @cached_property
    def name(self) -> str:
        if self.period == "week":
            year, week, _ = self.start.isocalendar()
            return f"{year:04d}-W{week:02d}"
        if self.period == "day":
            return self.start.isoformat()
        if self.period == "month":
            return f"{self.start.year:04d}-{self.start.month:02d}"
        return "all"

    @property
    def bounded(self) -> bool:
        """False for `all`: no end, never closes."""
        return self.period != "all"

    @cached_property
    def starts_at(self) -> datetime:
        return datetime(self.start.year, self.start.month, self.start.day, tzinfo=UTC)

    @cached_property
    def ends_at(self) -> datetime:
        """The end (exclusive); for `all`, the end of year 9999."""
        try:
            nxt = self.later(1).start
        except (OverflowError, ValueError):  # past year 9999
            return END_OF_TIME
        if self.period == "all":
            return END_OF_TIME
        return datetime(nxt.year, nxt.month, nxt.day, tzinfo=UTC)

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
        """The `first` policy's tie time of a completion at `at` on this board."""
        return pad_ts(self.offset_us(at), self.ts_width)

    def later(self, n: int) -> Season:
        """The season n periods later (earlier for n < 0); `all` is itself.
        OverflowError (or ValueError) beyond year 1 or 9999."""
        if self.period == "week":
            return _season("week", self.start + n * WEEK)
        if self.period == "day":
            return _season("day", self.start + n * DAY)
        if self.period == "month":
            return _season("month", _add_months(self.start, n))
        return self

    def previous(self) -> Season:
        return self.later(-1)

    def next(self) -> Season:
        return self.later(1)

    def __str__(self) -> str:
        return self.name


@lru_cache(maxsize=8192)
def _season(period: Period, start: date) -> Season:
    """One object per season: its boundaries are computed once (ingest asks
    for them for every item of a batch)."""
    return Season(period, start)


def week(year: int, number: int) -> Season:
    return _season("week", date.fromisocalendar(year, number, 1))


def season_of(at: datetime, period: Period = "week") -> Season:
    """The season of `period` that holds the instant `at`."""
    if at.tzinfo is None:
        raise ValueError("completed_at needs an offset")
    day = at.astimezone(UTC).date()
    if period == "week":
        return _season("week", day - timedelta(days=day.weekday()))
    if period == "day":
        return _season("day", day)
    if period == "month":
        return _season("month", day.replace(day=1))
    return _season("all", EPOCH)


def seasons_of(at: datetime, periods: tuple[Period, ...]) -> list[Season]:
    """The season of each period in `periods` that holds `at`."""
    return [season_of(at, p) for p in periods]


def part_period(period: Period, periods: tuple[Period, ...]) -> Period | None:
    """The shorter period whose closed seasons make up a long board's history
    (docs/operations.md, "A year of history"): weeks for `all`; days for a
    month, when days are configured (weeks straddle months); else none."""
    if period == "all":
        return "week"
    if period == "month" and "day" in periods:
        return "day"
    return None


def parse_periods(text: str) -> tuple[Period, ...]:
    """`LAURELS_PERIODS`: a comma list of periods; `week` is always on. In
    the canonical order (week, day, month, all)."""
    names = {p.strip() for p in text.split(",") if p.strip()}
    unknown = names - set(PERIODS)
    if unknown:
        raise ValueError(f"unknown period {sorted(unknown)[0]!r}: use week, day, month, all")
    return tuple(p for p in PERIODS if p in names or p == "week")


def period_of(name: str) -> Period:
    """The period of a season's name (not validated: see parse_season)."""
    if name == "all":
        return "all"
    if "-W" in name:
        return "week"
    return "day" if name.count("-") == 2 else "month"


def parse_season(text: str, now: datetime | None = None) -> Season:
    """A season's name (`2026-W49`, `2026-11-30`, `2026-11`, `all`) or an
    alias by the clock (`current`, `current-day`, `current-month`)."""
    if text in ALIASES:
        return season_of(now or datetime.now(UTC), ALIASES[text])
    if text == "all":
        return _season("all", EPOCH)
    try:
        if m := _WEEK_RE.fullmatch(text):
            year, number = int(m.group(1)), int(m.group(2))
            try:
                start = date.fromisocalendar(year, number, 1)
            except ValueError:
                raise BadSeason(f"{year} has no ISO week {number}") from None
            return _season("week", start)
        if m := _DAY_RE.fullmatch(text):
            return _season("day", date(int(m.group(1)), int(m.group(2)), int(m.group(3))))
        if m := _MONTH_RE.fullmatch(text):
            return _season("month", date(int(m.group(1)), int(m.group(2)), 1))
    except ValueError as exc:
        if isinstance(exc, BadSeason):
            raise
        raise BadSeason(f"{text} is not a date ({exc})") from None
    raise BadSeason(SEASON_FORMS)


def configured_season(text: str, periods: tuple[Period, ...], now: datetime | None = None
                      ) -> Season:
    """`parse_season`, refusing (PeriodOff) a period not in `periods`."""
    season = parse_season(text, now)
    if season.period not in periods:
        raise PeriodOff(f"the {season.period} boards are not configured (LAURELS_PERIODS)")
    return season
