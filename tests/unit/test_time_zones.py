"""Seasons in a time zone (CONTRACT.md, `LAURELS_TIME_ZONE`; core/seasons.py):
days, weeks and months of the local calendar, 23- and 25-hour days across
daylight saving, instants in UTC; every instant in exactly one season of
each period, whatever the zone's rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laurels.core.seasons import PERIODS, parse_season, season_of
from laurels.core.time_zones import BadZone, zone_info
from laurels.process.settings import Settings
from tests import deadlines

pytestmark = pytest.mark.once

PARIS = "Europe/Paris"
HOUR = timedelta(hours=1)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_a_week_starts_at_local_midnight_on_monday() -> None:
    w49 = parse_season("2026-W49", zone=PARIS)
    assert w49.starts_at == utc(2026, 11, 29, 23)  # Monday 00:00 in Paris (UTC+1)
    assert w49.ends_at == utc(2026, 12, 6, 23)
    # Sunday 23:30 UTC is Monday 00:30 in Paris: the next week there
    sunday_late = utc(2026, 12, 6, 23, 30)
    assert season_of(sunday_late, "week", zone="UTC").name == "2026-W49"
    assert season_of(sunday_late, "week", zone=PARIS).name == "2026-W50"
    assert season_of(sunday_late, "day", zone=PARIS).name == "2026-12-07"
    assert season_of(utc(2026, 11, 30, 23, 30), "month", zone=PARIS).name == "2026-12"
    assert season_of(utc(2026, 11, 30, 23, 30), "month", zone="UTC").name == "2026-11"


def test_days_across_daylight_saving_last_23_and_25_hours() -> None:
    spring, autumn = parse_season("2026-03-29", zone=PARIS), parse_season("2026-10-25",
                                                                           zone=PARIS)
    assert spring.ends_at - spring.starts_at == 23 * HOUR
    assert autumn.ends_at - autumn.starts_at == 25 * HOUR
    assert spring.starts_at == utc(2026, 3, 28, 23) and spring.ends_at == utc(2026, 3, 29, 22)
    week13 = parse_season("2026-W13", zone=PARIS)  # Monday 23 March to Sunday 29 March
    assert week13.ends_at - week13.starts_at == (7 * 24 - 1) * HOUR
    october = parse_season("2026-10", zone=PARIS)
    assert october.ends_at - october.starts_at == (31 * 24 + 1) * HOUR
    # the hour repeated in autumn: both passes of 02:30 belong to that day
    for at in (utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 1, 30)):
        assert season_of(at, "day", zone=PARIS) == autumn
    # the tie time counts real microseconds from the local start
    assert autumn.offset_us(autumn.ends_at - timedelta(microseconds=1)) == 25 * 3600 * 10**6 - 1


def test_a_skipped_midnight_starts_the_day_at_the_end_of_the_gap() -> None:
    # Chile springs forward at 24:00 on Saturday 5 September 2026: Sunday
    # starts at 01:00 local, 04:00 UTC, and Saturday lasts 24 hours.
    santiago = "America/Santiago"
    sunday = parse_season("2026-09-06", zone=santiago)
    assert sunday.starts_at == utc(2026, 9, 6, 4)
    saturday = parse_season("2026-09-05", zone=santiago)
    assert saturday.ends_at == sunday.starts_at
    assert saturday.ends_at - saturday.starts_at == 24 * HOUR
    assert sunday.ends_at - sunday.starts_at == 23 * HOUR
    assert season_of(utc(2026, 9, 6, 3, 59), "day", zone=santiago) == saturday
    assert season_of(utc(2026, 9, 6, 4), "day", zone=santiago) == sunday


def test_a_date_the_zone_skipped_is_an_empty_season() -> None:
    # Samoa skipped Friday 30 December 2011: Thursday 23:59 was followed by
    # Saturday 00:00 (UTC-10 to UTC+14).
    apia = "Pacific/Apia"
    thursday, friday = parse_season("2011-12-29", zone=apia), parse_season("2011-12-30",
                                                                            zone=apia)
    assert friday.starts_at == friday.ends_at == thursday.ends_at
    assert thursday.ends_at - thursday.starts_at == 24 * HOUR
    for at in (utc(2011, 12, 30, 9, 59), utc(2011, 12, 29, 15)):
        assert season_of(at, "day", zone=apia) == thursday
    assert season_of(utc(2011, 12, 30, 10), "day", zone=apia).name == "2011-12-31"


def test_the_all_time_board_is_one_season_in_every_zone() -> None:
    assert parse_season("all", zone=PARIS) == parse_season("all", zone="UTC")
    assert season_of(utc(2026, 1, 1), "all", zone=PARIS).name == "all"


def test_seasons_of_another_zone_are_other_seasons() -> None:
    assert parse_season("2026-W49", zone=PARIS) != parse_season("2026-W49", zone="UTC")
    assert parse_season("2026-W49", zone=PARIS).next() == parse_season("2026-W50", zone=PARIS)
    assert parse_season("current", utc(2026, 12, 6, 23, 30), zone=PARIS).name == "2026-W50"


ZONES = ["UTC", PARIS, "America/Santiago", "America/St_Johns", "Australia/Lord_Howe",
         "Pacific/Chatham", "Asia/Kolkata", "Pacific/Kiritimati", "America/Havana",
         "Asia/Beirut", "Africa/Casablanca", "Pacific/Apia", "Pacific/Kwajalein"]


@settings(max_examples=400, deadline=deadlines.PURE)
@given(at=st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2040, 1, 1),
                       timezones=st.just(UTC)),
       zone=st.sampled_from(ZONES), period=st.sampled_from(PERIODS))
def test_every_instant_is_in_exactly_one_season(at: datetime, zone: str, period: str) -> None:
    season = season_of(at, period, zone=zone)  # type: ignore[arg-type]
    assert season.contains(at)
    assert parse_season(season.name, zone=zone) == season  # its name names it
    if season.bounded:
        before, after = season.previous(), season.next()
        assert before.ends_at == season.starts_at and season.ends_at == after.starts_at
        assert not before.contains(at) and not after.contains(at)
        local = at.astimezone(zone_info(zone)).date()
        assert season.start <= local < after.start or at < season.starts_at + 2 * HOUR \
            or at >= season.ends_at - 2 * HOUR


@pytest.mark.parametrize("name", ["", "Mars/Olympus", "../../etc/passwd", "/etc/localtime",
                                  "localtime", "UTC+1", "Europe/Paris\n", "europe/paris "])
def test_a_zone_must_be_an_iana_name(name: str) -> None:
    with pytest.raises(BadZone):
        zone_info(name)


def test_the_setting_refuses_an_unknown_zone() -> None:
    assert Settings(time_zone=PARIS).time_zone == PARIS
    with pytest.raises(ValueError, match="IANA"):
        Settings(time_zone="Mars/Olympus")
