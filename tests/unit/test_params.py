"""The lane's path and query parsing keeps its answers (api/params.py): a
season's name for good, an alias until its season ends by the clock, a query
string's fields per string; what is malformed is refused every time."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from laurels.api import params
from laurels.api.params import path_season, query_cursor, query_int
from laurels.api.problems import Problem

pytestmark = pytest.mark.once

PERIODS = ("week", "day", "all")


class Clock:
    at = datetime(2026, 12, 6, 23, 59, 59, tzinfo=UTC)  # the last second of 2026-W49

    @classmethod
    def now(cls, tz: object = None) -> datetime:
        return cls.at


def test_an_alias_is_kept_until_its_season_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(params, "datetime", Clock)
    assert path_season("current", PERIODS, "UTC").name == "2026-W49"
    assert path_season("current-day", PERIODS, "UTC").name == "2026-12-06"
    Clock.at = datetime(2026, 12, 7, 0, 0, 0, tzinfo=UTC)  # a new week and day
    assert path_season("current", PERIODS, "UTC").name == "2026-W50"
    assert path_season("current-day", PERIODS, "UTC").name == "2026-12-07"
    Clock.at = datetime(2026, 12, 6, 12, tzinfo=UTC)  # a clock set back: not the later one
    assert path_season("current", PERIODS, "UTC").name == "2026-W49"
    with pytest.raises(Problem) as off:  # a period not configured, alias or not
        path_season("current-month", PERIODS, "UTC")
    assert off.value.code == "not_found"


def test_a_name_is_parsed_once_and_a_malformed_one_refused_each_time() -> None:
    path_season("2026-W48", PERIODS, "UTC")
    hits = params._named.cache_info().hits
    assert path_season("2026-W48", PERIODS, "UTC").name == "2026-W48"
    assert params._named.cache_info().hits == hits + 1
    for _ in range(2):
        with pytest.raises(Problem) as bad:
            path_season("2026-W54", PERIODS, "UTC")
        assert bad.value.code == "validation_error"
        with pytest.raises(Problem) as off:
            path_season("2026-11", PERIODS, "UTC")
        assert off.value.code == "not_found"


def test_query_fields_are_shared_per_string_and_checked_per_name() -> None:
    query = b"limit=7&after=abc_-9&limit=8"
    assert query_int(query, "limit", 100, 1, 1000) == 8  # the last of repeated values
    assert query_cursor(query) == "abc_-9"
    assert query_int(b"", "limit", 100, 1, 1000) == 100
    assert query_int(b"radius=3", "limit", 100, 1, 1000) == 100
    for _ in range(2):
        with pytest.raises(Problem):
            query_int(b"limit=", "limit", 100, 1, 1000)
        with pytest.raises(Problem):
            query_cursor(b"after=a%21")
    assert query_int(b"limit=%35", "limit", 100, 1, 1000) == 5  # percent-decoded
    # Kept per string, up to KEPT_QUERY_BYTES; a longer one is parsed each time.
    assert params._kept_fields(query) is params._kept_fields(query)
    long = b"limit=9&" + b"x=1&" * 100
    size = params._kept_fields.cache_info().currsize
    assert query_int(long, "limit", 100, 1, 1000) == 9
    assert params._kept_fields.cache_info().currsize == size
