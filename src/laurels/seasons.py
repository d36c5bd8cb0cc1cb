"""Seasons are ISO-8601 weeks in UTC, chosen by completed_at (pure functions)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property, lru_cache

_SEASON_RE = re.compile(r"([0-9]{4})-W([0-9]{2})")
WEEK = timedelta(days=7)


class BadSeason(ValueError):
    pass


@dataclass(frozen=True, order=True)
class Season:
    year: int
    week: int

    @property
    def name(self) -> str:
        return f"{self.year:04d}-W{self.week:02d}"

    @cached_property
    def starts_at(self) -> datetime:
        return datetime.fromisocalendar(self.year, self.week, 1).replace(tzinfo=UTC)

    @cached_property
    def ends_at(self) -> datetime:
        return self.starts_at + WEEK

    def closes_at(self, grace_seconds: int) -> datetime:
        return self.ends_at + timedelta(seconds=grace_seconds)

    def is_closed(self, now: datetime, grace_seconds: int, close_seasons: bool = True) -> bool:
        return close_seasons and now >= self.closes_at(grace_seconds)

    def offset_us(self, at: datetime) -> int:
        """Microseconds since the season started (0 <= x < 604800e6 for its own events)."""
        delta = at - self.starts_at
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds

    def previous(self) -> Season:
        return season_of(self.starts_at - WEEK)

    def next(self) -> Season:
        return season_of(self.ends_at)

    def __str__(self) -> str:
        return self.name


def season_of(at: datetime) -> Season:
    if at.tzinfo is None:
        raise ValueError("completed_at needs an offset")
    year, week, _ = at.astimezone(UTC).isocalendar()
    return _season(year, week)


@lru_cache(maxsize=4096)
def _season(year: int, week: int) -> Season:
    """One object per season: its boundaries are computed once (ingest asks
    for them for every item of a batch)."""
    return Season(year, week)


def parse_season(text: str, now: datetime | None = None) -> Season:
    """`YYYY-Www` (the week must exist in that year) or `current` by the clock."""
    if text == "current":
        return season_of(now or datetime.now(UTC))
    m = _SEASON_RE.fullmatch(text)
    if not m:
        raise BadSeason("season must be YYYY-Www (e.g. 2026-W49) or 'current'")
    year, week = int(m.group(1)), int(m.group(2))
    try:
        datetime.fromisocalendar(year, week, 1) + 2 * WEEK
    except (ValueError, OverflowError):
        raise BadSeason(f"{year} has no ISO week {week}") from None
    return _season(year, week)
