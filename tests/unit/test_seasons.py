"""Seasons: ISO-8601 weeks in UTC (docs/contract.md, Domain)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from laurels.core.seasons import BadSeason, parse_season, season_of, week

pytestmark = pytest.mark.once

WEEK_US = 7 * 86400 * 1_000_000


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


# --- season_of ---------------------------------------------------------------

def test_last_microsecond_of_sunday_is_still_the_old_week() -> None:
    s = season_of(datetime(2026, 12, 6, 23, 59, 59, 999000, tzinfo=UTC), "week", zone="UTC")
    assert s == week(2026, 49)
    assert s.name == "2026-W49"
    assert str(s) == "2026-W49"


def test_very_last_microsecond_of_the_week() -> None:
    assert season_of(datetime(2026, 12, 6, 23, 59, 59, 999999, tzinfo=UTC), "week",
                     zone="UTC").name == "2026-W49"


def test_monday_midnight_utc_starts_the_next_week() -> None:
    assert season_of(utc(2026, 12, 7, 0, 0), "week", zone="UTC").name == "2026-W50"


def test_negative_offset_moves_into_next_week() -> None:
    # 23:30 at -01:00 is 00:30 UTC on Monday.
    at = datetime(2026, 12, 6, 23, 30, tzinfo=timezone(timedelta(hours=-1)))
    assert season_of(at, "week", zone="UTC").name == "2026-W50"


def test_positive_offset_moves_into_previous_week() -> None:
    # 00:30 Monday at +01:00 is 23:30 UTC on Sunday.
    at = datetime(2026, 12, 7, 0, 30, tzinfo=timezone(timedelta(hours=1)))
    assert season_of(at, "week", zone="UTC").name == "2026-W49"


def test_naive_datetime_is_refused() -> None:
    with pytest.raises(ValueError):
        season_of(datetime(2026, 12, 6, 12, 0), "week", zone="UTC")


def test_new_year_belongs_to_week_53_of_the_old_year() -> None:
    assert season_of(utc(2027, 1, 1, 12), "week", zone="UTC").name == "2026-W53"
    assert season_of(utc(2027, 1, 3, 23, 59, 59), "week", zone="UTC").name == "2026-W53"


def test_first_week_of_2027() -> None:
    assert season_of(utc(2027, 1, 4), "week", zone="UTC").name == "2027-W01"


def test_start_of_week_53() -> None:
    assert season_of(utc(2026, 12, 28), "week", zone="UTC").name == "2026-W53"
    assert season_of(utc(2026, 12, 27, 23, 59, 59), "week", zone="UTC").name == "2026-W52"


# --- parse_season ------------------------------------------------------------

def test_parse_roundtrips_name() -> None:
    assert parse_season("2026-W49", zone="UTC") == week(2026, 49)
    assert parse_season("2027-W01", zone="UTC") == week(2027, 1)
    assert parse_season("2026-W49", zone="UTC").name == "2026-W49"


def test_week_53_exists_in_2026() -> None:
    assert parse_season("2026-W53", zone="UTC") == week(2026, 53)


def test_week_53_does_not_exist_in_2027() -> None:
    with pytest.raises(BadSeason) as exc:
        parse_season("2027-W53", zone="UTC")
    assert str(exc.value)


def test_week_54_never_exists() -> None:
    with pytest.raises(BadSeason):
        parse_season("2026-W54", zone="UTC")


@pytest.mark.parametrize("text", [
    "2026-49", "2026-W00", "2026-W1", "abc", "", "2026-w49", "26-W49", "2026-W049",
    " 2026-W49", "2026-W49 ", "2026W49", "2026-W4a", "CURRENT",
])
def test_malformed_seasons(text: str) -> None:
    with pytest.raises(BadSeason) as exc:
        parse_season(text, zone="UTC")
    assert str(exc.value)


@pytest.mark.parametrize(
    "text", ["2026-W49\n", "\u0662\u0660\u0662\u0666-W49", "\uff12\uff10\uff12\uff16-W49"])
def test_season_must_be_ascii_and_exact(text: str) -> None:
    # The contract writes seasons as YYYY-Www. A trailing newline (Python's `$`
    # matches before it) or non-ASCII digits (`\d` is Unicode-aware) are not that
    # format and must be refused like any other malformed season (422).
    with pytest.raises(BadSeason):
        parse_season(text, zone="UTC")


def test_bad_season_is_a_value_error() -> None:
    assert issubclass(BadSeason, ValueError)


def test_current_uses_given_clock() -> None:
    assert parse_season("current", now=utc(2026, 12, 7, 0, 0), zone="UTC") == week(2026, 50)
    assert parse_season("current", now=utc(2027, 1, 2), zone="UTC") == week(2026, 53)
    at = datetime(2026, 12, 6, 23, 30, tzinfo=timezone(timedelta(hours=-1)))
    assert parse_season("current", now=at, zone="UTC") == week(2026, 50)


def test_current_defaults_to_the_real_clock() -> None:
    before = season_of(datetime.now(UTC), "week", zone="UTC")
    got = parse_season("current", zone="UTC")
    after = season_of(datetime.now(UTC), "week", zone="UTC")
    assert got in (before, after)


# --- starts_at / ends_at / closing ---------------------------------------------

def test_starts_and_ends() -> None:
    s = week(2026, 49)
    assert s.starts_at == utc(2026, 11, 30)
    assert s.ends_at == utc(2026, 12, 7)
    assert s.starts_at.utcoffset() == timedelta(0)
    assert s.ends_at - s.starts_at == timedelta(days=7)


def test_week_53_bounds_and_neighbours() -> None:
    s = week(2026, 53)
    assert s.starts_at == utc(2026, 12, 28)
    assert s.ends_at == utc(2027, 1, 4)
    assert s.next() == week(2027, 1)
    assert week(2027, 1).previous() == s
    assert week(2026, 49).next() == week(2026, 50)
    assert week(2026, 50).previous() == week(2026, 49)


def test_every_instant_of_a_week_maps_back_to_it() -> None:
    for name in ("2026-W49", "2026-W53", "2027-W01", "2020-W53"):
        s = parse_season(name, zone="UTC")
        assert season_of(s.starts_at, "week", zone="UTC") == s
        assert season_of(s.ends_at - timedelta(microseconds=1), "week", zone="UTC") == s
        assert season_of(s.ends_at, "week", zone="UTC") == s.next()


def test_is_closed_respects_grace() -> None:
    s = week(2026, 49)
    grace = 172800
    closes = utc(2026, 12, 9)
    assert s.closes_at(grace) == closes
    assert not s.is_closed(utc(2026, 12, 6, 23, 59), grace)
    assert not s.is_closed(s.ends_at, grace)
    assert not s.is_closed(closes - timedelta(microseconds=1), grace)
    assert s.is_closed(closes, grace)
    assert s.is_closed(closes + timedelta(days=365), grace)


def test_is_closed_without_grace() -> None:
    s = week(2026, 49)
    assert not s.is_closed(s.ends_at - timedelta(microseconds=1), 0)
    assert s.is_closed(s.ends_at, 0)


def test_is_closed_with_offset_clock() -> None:
    s = week(2026, 49)
    # 2026-12-08T23:30-01:00 == 2026-12-09T00:30Z: past the 2-day grace.
    now = datetime(2026, 12, 8, 23, 30, tzinfo=timezone(timedelta(hours=-1)))
    assert s.is_closed(now, 172800)


def test_seasons_never_close_when_disabled() -> None:
    s = week(2026, 49)
    assert not s.is_closed(utc(2030, 1, 1), 0, close_seasons=False)
    assert not s.is_closed(utc(2030, 1, 1), 172800, close_seasons=False)
    assert s.is_closed(utc(2030, 1, 1), 0, close_seasons=True)


# --- offset_us -----------------------------------------------------------------

def test_offset_us() -> None:
    s = week(2026, 49)
    assert s.offset_us(s.starts_at) == 0
    assert s.offset_us(s.starts_at + timedelta(microseconds=1)) == 1
    assert s.offset_us(utc(2026, 11, 30, 0, 0, 1)) == 1_000_000
    assert s.offset_us(utc(2026, 12, 1)) == 86400 * 1_000_000
    assert s.offset_us(s.ends_at - timedelta(microseconds=1)) == WEEK_US - 1
    assert s.offset_us(datetime(2026, 12, 6, 23, 59, 59, 999000, tzinfo=UTC)) == WEEK_US - 1000


def test_offset_us_is_offset_independent() -> None:
    s = week(2026, 49)
    plus1 = datetime(2026, 11, 30, 1, 0, tzinfo=timezone(timedelta(hours=1)))
    assert s.offset_us(plus1) == 0
    minus530 = datetime(2026, 11, 30, 5, 0, 0, 7, tzinfo=timezone(timedelta(hours=-5, minutes=-30)))
    assert s.offset_us(minus530) == (10 * 3600 + 30 * 60) * 1_000_000 + 7


def test_offset_us_before_start_is_negative() -> None:
    s = week(2026, 49)
    assert s.offset_us(s.starts_at - timedelta(microseconds=1)) == -1


def test_season_ordering() -> None:
    assert week(2026, 53) < week(2027, 1) < week(2027, 2)
    assert sorted([week(2027, 1), week(2026, 49), week(2026, 53)]) == [
        week(2026, 49), week(2026, 53), week(2027, 1)]


# --- periods (issue 14): day, month, all ----------------------------------------

from laurels.core.seasons import (  # noqa: E402
    PERIODS,
    PeriodOff,
    configured_season,
    parse_periods,
    period_of,
)
from laurels.core.spans import seasons_of  # noqa: E402


def names(at: datetime) -> list[str]:
    """Every period's season of `at` (the windows' are one each, whatever `at`)."""
    found = [s.name for s in seasons_of(at, PERIODS, zone="UTC")]
    assert found[-2:] == ["last-7d", "last-30d"]
    return found[:-2]


@pytest.mark.parametrize(("at", "want"), [
    # the last microsecond of a month, and the first of the next
    (utc(2026, 11, 30, 23, 59, 59, 999999), ["2026-W49", "2026-11-30", "2026-11", "all"]),
    (utc(2026, 12, 1), ["2026-W49", "2026-12-01", "2026-12", "all"]),
    # year change inside week 53
    (utc(2026, 12, 31, 23, 59, 59, 999999), ["2026-W53", "2026-12-31", "2026-12", "all"]),
    (utc(2027, 1, 1), ["2026-W53", "2027-01-01", "2027-01", "all"]),
    # leap day
    (utc(2028, 2, 29, 12), ["2028-W09", "2028-02-29", "2028-02", "all"]),
    (utc(2028, 3, 1), ["2028-W09", "2028-03-01", "2028-03", "all"]),
])
def test_a_completion_lands_on_the_right_season_of_every_period(at: datetime,
                                                                 want: list[str]) -> None:
    assert names(at) == want


def test_offsets_move_the_instant_into_utc_for_every_period() -> None:
    at = datetime(2026, 12, 1, 0, 30, tzinfo=timezone(timedelta(hours=1)))  # 23:30 UTC Nov 30
    assert names(at) == ["2026-W49", "2026-11-30", "2026-11", "all"]
    at = datetime(2026, 11, 30, 23, 30, tzinfo=timezone(timedelta(hours=-1)))  # Dec 1 UTC
    assert names(at) == ["2026-W49", "2026-12-01", "2026-12", "all"]


@pytest.mark.parametrize("name", ["2026-11-30", "2028-02-29", "2026-11", "2026-12", "2028-02",
                                  "all", "2026-W53", "last-7d", "last-30d"])
def test_every_period_parses_its_names_and_its_instants_map_back(name: str) -> None:
    s = parse_season(name, zone="UTC")
    assert s.name == name and period_of(name) == s.period
    assert season_of(s.starts_at, s.period, zone="UTC") == s
    if s.bounded:
        assert season_of(s.ends_at - timedelta(microseconds=1), s.period, zone="UTC") == s
        assert season_of(s.ends_at, s.period, zone="UTC") == s.next() and s.next().previous() == s


def test_boundaries_and_closing() -> None:
    day, month = parse_season("2028-02-29", zone="UTC"), parse_season("2028-02", zone="UTC")
    every = parse_season("all", zone="UTC")
    assert (day.starts_at, day.ends_at) == (utc(2028, 2, 29), utc(2028, 3, 1))
    assert (month.starts_at, month.ends_at) == (utc(2028, 2, 1), utc(2028, 3, 1))
    assert parse_season("2026-12", zone="UTC").next().name == "2027-01"
    assert parse_season("2027-01", zone="UTC").previous().name == "2026-12"
    assert parse_season("2026-12-31", zone="UTC").next().name == "2027-01-01"
    grace = 172800
    assert day.closes_at(grace) == utc(2028, 3, 3)  # the end, then 48 hours
    assert not day.is_closed(utc(2028, 3, 2, 23, 59), grace)
    assert day.is_closed(utc(2028, 3, 3), grace)
    assert not every.bounded and not every.is_closed(utc(9999, 12, 31), 0)


def test_the_tie_time_keeps_its_order_over_every_period() -> None:
    """The `first` policy's member prefix: fixed width per period, so string
    order is time order over a whole month and over all time."""
    month = parse_season("2026-12", zone="UTC")
    first, last = month.starts_at, month.ends_at - timedelta(microseconds=1)
    assert len(month.pad_ts(first)) == len(month.pad_ts(last)) == 13
    second = first + timedelta(microseconds=1)
    assert month.pad_ts(first) < month.pad_ts(second) < month.pad_ts(last)
    every = parse_season("all", zone="UTC")
    earliest = datetime(1, 1, 1, tzinfo=UTC)
    latest = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    stamps = [every.pad_ts(t) for t in (earliest, utc(2026, 11, 30), utc(2026, 11, 30, 0, 0, 1),
                                         latest)]
    assert len({len(s) for s in stamps}) == 1 and stamps == sorted(stamps)
    for name in ("2026-W53", "2026-11-30"):
        s = parse_season(name, zone="UTC")
        assert len(s.pad_ts(s.ends_at - timedelta(microseconds=1))) == 12


@pytest.mark.parametrize("text", ["2026-13", "2026-02-30", "2027-02-29", "2026-00", "2026-1",
                                  "2026-11-1", "ALL", "current-week", "2026-11-30T00"])
def test_malformed_names_of_other_periods(text: str) -> None:
    with pytest.raises(BadSeason):
        parse_season(text, zone="UTC")


def test_aliases_by_the_clock() -> None:
    now = utc(2026, 11, 30, 15)
    assert parse_season("current-day", now, zone="UTC").name == "2026-11-30"
    assert parse_season("current-month", now, zone="UTC").name == "2026-11"
    assert parse_season("all", now, zone="UTC").name == "all"


def test_periods_setting() -> None:
    assert parse_periods("week") == ("week",)
    assert parse_periods("all, day") == ("week", "day", "all")
    assert parse_periods("") == ("week",)
    with pytest.raises(ValueError, match="year"):
        parse_periods("week,year")
    assert configured_season("2026-W49", ("week",), zone="UTC").name == "2026-W49"
    with pytest.raises(PeriodOff):
        configured_season("2026-11", ("week", "day"), zone="UTC")


# --- rolling windows (issue 68): one season each, its days moving ---------------


def test_a_window_is_one_season_whatever_the_instant() -> None:
    week = parse_season("last-7d", zone="Europe/Paris")
    assert (week.period, week.label, week.name, week.bounded, week.window) == (
        "7d", "last-7d", "last-7d", False, True)
    assert season_of(utc(2026, 12, 1), "7d", zone="Europe/Paris") == week
    assert season_of(utc(1999, 1, 1), "7d", zone="Europe/Paris") == week
    assert week.later(3) == week and not week.is_closed(utc(9000, 1, 1), 0)
    # its tie times count from one origin whatever its days (as all time's)
    assert week.starts_at == parse_season("all", zone="UTC").starts_at
    assert week.on("course:sql", "best").name == "course:sql/best/Europe/Paris/last-7d"
    assert parse_season("course:sql/best/Europe/Paris/last-30d", zone="UTC").period == "30d"


def test_a_window_s_first_day_is_n_local_days_back_today_included() -> None:
    week, month = (parse_season(n, zone="UTC") for n in ("last-7d", "last-30d"))
    assert week.window_from(date(2026, 12, 9)) == date(2026, 12, 3)
    assert month.window_from(date(2026, 3, 1)) == date(2026, 1, 31)


def test_windows_are_periods_of_their_own() -> None:
    assert parse_periods("30d, 7d, day") == ("week", "day", "7d", "30d")
    with pytest.raises(PeriodOff):
        configured_season("last-30d", ("week", "7d"), zone="UTC")
    assert configured_season("last-7d", ("week", "7d"), zone="UTC").period == "7d"
    with pytest.raises(ValueError, match="7d, 30d"):
        parse_periods("14d")
