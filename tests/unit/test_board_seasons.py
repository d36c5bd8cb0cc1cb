"""A board's seasons (docs/design.md, "Boards of a kind"): named by board,
metric, zone and period so that the name alone reads back to the same
season; keys tagged by that name; each query's text for its season."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from laurels.board.keys import Keys, tag
from laurels.core.seasons import BadSeason, parse_season, period_of, season_of
from laurels.db import q
from laurels.db.variants import variant

pytestmark = pytest.mark.once

PARIS = "Europe/Paris"


def test_a_board_season_is_named_by_board_metric_zone_and_period() -> None:
    w = parse_season("2026-W49", zone=PARIS).on("course:python-101", "completions")
    assert w.name == "course:python-101/completions/Europe/Paris/2026-W49"
    assert w.label == "2026-W49" and str(w) == w.name
    assert parse_season(w.name, zone="UTC") is w  # its own zone, whatever the caller's
    assert period_of(w.name) == "week"
    assert w.next().name == "course:python-101/completions/Europe/Paris/2026-W50"
    assert w.starts_at == datetime(2026, 11, 29, 23, tzinfo=UTC)
    everything = parse_season("all", zone=PARIS).on("track:data", "best")
    assert everything.name == "track:data/best/UTC/all"
    assert parse_season(everything.name, zone=PARIS) is everything
    spring = datetime(2026, 3, 29, 12, tzinfo=UTC)  # the day Paris moves its clocks forward
    day = season_of(spring, "day", zone=PARIS).on("skill:sql", "points")
    assert parse_season(day.name, zone="UTC").ends_at - day.starts_at == (
        datetime(2026, 3, 30, tzinfo=UTC) - datetime(2026, 3, 29, 1, tzinfo=UTC))  # 23 hours


def test_the_global_board_keeps_its_names() -> None:
    w = parse_season("2026-W49", zone=PARIS)
    assert w.on("global", "best") is w and w.name == "2026-W49" and w.metric == "points"
    assert tag("2026-W49") == "{weekly:2026-W49}" and tag("all") == "{all}"


@pytest.mark.parametrize("name", [
    "course/points/UTC/2026-W49", "course:x/sum/UTC/2026-W49", "course:x/points/Mars/2026-W49",
    "course:x/points/UTC/current", "course:x/points/UTC/2026-W99", "Course:x/points/UTC/all"])
def test_a_malformed_board_season_is_refused(name: str) -> None:
    with pytest.raises(BadSeason):
        parse_season(name, zone="UTC")


def test_every_key_of_a_board_season_shares_its_tag() -> None:
    w = parse_season("2026-W49", zone=PARIS).on("course:python-101", "points")
    assert tag(w.name) == "{course:python-101/points/Europe/Paris/weekly:2026-W49}"
    keys = Keys("laurels", "shared")
    season = keys.season(w.name)
    names = [season.current, season.erased, season.version("3").public,
             season.version("3").applied(0)]
    assert {n.split("}")[0] + "}" for n in names} == {"laurels:" + tag(w.name)}
    assert keys.holds(season.version("3").public) == "learners"
    assert keys.holds(season.erased) == "tombstones"


def text_for(name: str, season: Any) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {"season": season, "user_id": 1}
    return variant(q(name), name, params, "UTC"), params


def test_a_board_counts_its_tagged_completions_by_its_metric() -> None:
    week = parse_season("2026-W49", zone=PARIS)
    text, params = text_for("season_aggregates", week)
    assert "c.season = %(season)s" in text and "sum(c.points)" in text and "tags" not in text
    assert params["season"] == "2026-W49"
    text, params = text_for("season_aggregates", week.on("course:a", "completions"))
    assert "c.tags @> ARRAY[%(board)s]::text[]" in text and "c.season =" not in text
    assert "sum(1)" in text and params["board"] == "course:a"
    assert params["season"] == "course:a/completions/Europe/Paris/2026-W49"
    assert params["season_starts"] == datetime(2026, 11, 29, 23, tzinfo=UTC)
    text, _ = text_for("long_aggregates", parse_season("all", zone="UTC").on("skill:x", "best"))
    assert "max(h.score)" in text and "SELECT c.user_id, c.points" in text
    assert "completed_at >= %(season_starts)s" not in text  # all time: no range


def test_a_stream_shows_a_board_season_by_its_period_name_and_board() -> None:
    from laurels.live.hub import shown_season

    name = parse_season("2026-W49", zone=PARIS).on("course:python-101", "points").name
    assert shown_season({"season": name, "user_id": 7}) == {
        "season": "2026-W49", "board": "course:python-101", "user_id": 7}
    assert shown_season({"season": "2026-W49"}) == {"season": "2026-W49"}
