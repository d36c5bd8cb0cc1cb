"""A named query's text for its season: which completions count on the
season's board, and what each of them adds to a learner's score there.

- `SEASON_FILTER(c)` selects the completions of the season named by the
  `season` parameter (on table alias `c`). On the whole platform's board
  (`global`), by the season's period: the week's indexed column; a day's
  or a month's range of `completed_at` (indexed, migration 006);
  everything for `all`; for a rolling window, from the first instant of
  the first day it holds (the caller's `window_starts`). On a board of a
  kind (seasons.Season, `board`),
  the completions tagged with it, in the range of its season in its kind's
  zone (the week column is the deployment zone's week).
- `ON_BOARDS(c)` deals each completion `c` to the boards of kinds it counts
  on among several (fill_many: the `boards`, `starts` and `ends` arrays,
  each board's tag and the range of its season, numbered from 1 as `b.i`),
  and `IN_BOARDS(c)` keeps the completions of any of them (their tags,
  within `boards_from` and `boards_until`): many boards from one scan.
- `METRIC(x)` is what the scores `x` of a learner's completions (or of
  archived standings) add up to on the season's board (kinds.Metric):
  their sum (`points`, and `completions`, whose `SCORE(c)` is 1), or
  their highest (`best`).
- `SCORE(c)` is what one completion `c` scores on it: its points, or 1.
- `TIE_AT(score, at)` is a learner's tie time (the `first` policy) among
  rows of scores `score` at times `at`: the latest `at` on a sum, and on
  `best` the earliest `at` of a row giving the highest score (CONTRACT.md,
  "Boards of a course, a track or a skill").

For `global` the text is exactly what the file says with `sum` and
`c.points`, so the whole board's statements are what they always were.
"""

from __future__ import annotations

import re
from typing import Any, LiteralString, assert_never

from laurels.core.registry import Metric
from laurels.core.seasons import GLOBAL, START_OF_TIME, Season, parse_season

_SEASON_FILTER = re.compile(r"SEASON_FILTER\((\w*)\)")
_ON_BOARDS = re.compile(r"ON_BOARDS\((\w+)\)")
_IN_BOARDS = re.compile(r"IN_BOARDS\((\w+)\)")
_METRIC = re.compile(r"METRIC\(")
_SCORE = re.compile(r"SCORE\((\w+)\)")
_TIE_AT = re.compile(r"TIE_AT\(([^,()]+), ([^,()]+)\)")
_VARIANTS: dict[tuple[str, str, bool, str], str] = {}


def _filter(season: Season, alias: str) -> str:
    col = f"{alias}." if alias else ""
    on_board = "" if season.board == GLOBAL else f"{col}tags @> ARRAY[%(board)s]::text[]"
    if season.period == "all":
        return on_board or "true"
    if season.window:  # from its first day on (`window_starts`: variant)
        since = f"{col}completed_at >= %(season_starts)s"
        return f"{since} AND {on_board}" if on_board else since
    if season.period == "week" and not on_board:
        return f"{col}season = %(season)s"
    in_range = f"{col}completed_at >= %(season_starts)s AND {col}completed_at < %(season_ends)s"
    return f"{in_range} AND {on_board}" if on_board else in_range


def _on_boards(c: str) -> str:
    return (f"CROSS JOIN LATERAL unnest({c}.tags) AS t(tag) "
            "JOIN unnest(%(boards)s::text[], %(starts)s::timestamptz[], "
            "%(ends)s::timestamptz[]) WITH ORDINALITY AS b(board, starts, ends, i) "
            f"ON b.board = t.tag AND {c}.completed_at >= b.starts AND {c}.completed_at < b.ends")


def _in_boards(c: str) -> str:
    return (f"{c}.tags && %(boards)s::text[] AND {c}.completed_at >= %(boards_from)s "
            f"AND {c}.completed_at < %(boards_until)s")


def _metric(metric: Metric) -> tuple[str, str]:
    """(how a learner's scores add up, what one completion `{c}` scores) on
    a board of `metric` (a new metric fails mypy here until it says;
    kind_rules.score_of says it in Python)."""
    if metric == "points":
        return "sum(", "{c}.points"
    if metric == "completions":
        return "sum(", "1"
    if metric == "best":
        return "max(", "{c}.points"
    assert_never(metric)


def _tie_at(metric: Metric, score: str, at: str) -> str:
    if metric == "best":
        return f"(array_agg({at} ORDER BY {score} DESC, {at}))[1]"
    return f"max({at})"


def _build(text: str, season: Season) -> str:
    total, score = _metric(season.metric)
    text = _SEASON_FILTER.sub(lambda m: _filter(season, m.group(1)), text)
    text = _ON_BOARDS.sub(lambda m: _on_boards(m.group(1)), text)
    text = _IN_BOARDS.sub(lambda m: _in_boards(m.group(1)), text)
    text = _METRIC.sub(total, text)
    text = _SCORE.sub(lambda m: score.format(c=m.group(1)), text)
    return _TIE_AT.sub(lambda m: _tie_at(season.metric, m.group(1), m.group(2)), text)


def variant(text: LiteralString, name: str, params: dict[str, Any], zone: str
            ) -> LiteralString:
    """The text of named query `name` for these parameters (its season's
    variant). A `season` parameter is a `Season` (parsed once, at the edge)
    or a name (a stored row's), read in the calendar of `zone`
    (LAURELS_TIME_ZONE; a board's season name carries its own), as is a
    local date SQL computes; SQL gets the name."""
    if "%(zone)s" in text:
        params.setdefault("zone", zone)
    season: Season | None = None
    if isinstance(params.get("season"), Season):
        season = params["season"]
        params["season"] = season.name
    if not any(macro in text for macro in ("SEASON_FILTER(", "ON_BOARDS(", "IN_BOARDS(",
                                           "METRIC(", "SCORE(", "TIE_AT(")):
        return text
    if season is None:
        season = parse_season(str(params["season"]), zone=zone)
    params["season_starts"], params["season_ends"] = season.starts_at, season.ends_at
    if season.window:  # its range is its marker's, not its name's (lifecycle/windows.py)
        # (unsaid, from the beginning: whether it has any completion at all,
        # a learner's latest on a sum, which no earlier day changes)
        params["season_starts"] = params.pop("window_starts", START_OF_TIME)
    if season.board != GLOBAL:
        params["board"] = season.board
    key = (name, season.period, season.board == GLOBAL, season.metric)
    built = _VARIANTS.get(key)
    if built is None:
        built = _VARIANTS[key] = _build(text, season)
    return built  # built from our own files only
