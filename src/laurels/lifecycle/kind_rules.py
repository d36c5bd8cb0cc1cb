"""A board kind as a value (CONTRACT.md, "Boards of a course, a track or a
skill"): the rules of its definition (a PUT's body, checked), and the boards
a completion's tags put it on, in each kind's zone and metric. Pure: the
kinds' registry, its lock and its keys are lifecycle/board_kinds.py's."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, assert_never

from laurels.board import Delta
from laurels.core.errors import DomainError
from laurels.core.registry import METRICS, Metric
from laurels.core.seasons import BOARD_RE, GLOBAL, PERIODS, WINDOW_DAYS, Period, Season, kind_of
from laurels.core.spans import Found
from laurels.core.time_zones import BadZone, zone_info
from laurels.core.validation import unknown_field
from laurels.db import Row

KINDS_MAX = 100
TITLE_MAX = 100
KIND = re.compile(r"[a-z][a-z0-9_-]{0,31}")
BOARD = BOARD_RE


@dataclass(frozen=True)
class BoardKind:
    kind: str
    title: str
    metric: Metric
    periods: tuple[Period, ...]  # `week` first, then in PERIODS order
    time_zone: str
    notify: bool
    created_at: datetime

    @classmethod
    def from_row(cls, row: Row) -> BoardKind:
        return cls(row["kind"], row["title"], row["metric"], tuple(row["periods"]),
                   row["time_zone"], bool(row["notify"]), row["created_at"])

    def defines(self, season: Season) -> bool:
        """Whether `season` is one of this kind's boards as it is defined
        now (its metric, zone and periods)."""
        return (season.kind == self.kind and season.metric == self.metric
                and season.period in self.periods
                and season.zone == ("UTC" if season.period == "all" else self.time_zone))

    def same_board_as(self, other: BoardKind) -> bool:
        """Whether `other` defines the same boards (all but the title)."""
        return (self.metric, self.periods, self.time_zone, self.notify) == (
            other.metric, other.periods, other.time_zone, other.notify)


def kind_pattern(kind: str) -> str:
    """The LIKE prefix of every season of a kind's boards."""
    return kind.replace("_", "\\_") + ":%"


def check_kind(kind: str) -> str:
    if not KIND.fullmatch(kind):
        raise DomainError("validation_error", f"kind must match ^{KIND.pattern}$")
    return kind


def check_board(board: str) -> str:
    """A board's name: `global` or a tag `kind:value`."""
    if board != GLOBAL and not BOARD.fullmatch(board):
        raise DomainError("validation_error",
                          f"board must be {GLOBAL} or a tag kind:value matching ^{BOARD.pattern}$")
    return board


def _periods(raw: Any) -> tuple[Period, ...]:
    if not isinstance(raw, list) or not all(isinstance(p, str) for p in raw):
        raise DomainError("validation_error",
                          "periods must be a list of week, day, month, all, 7d, 30d")
    unknown = sorted(set(raw) - set(PERIODS))
    if unknown:
        raise DomainError("validation_error",
                          f"periods: unknown {', '.join(unknown)} "
                          "(week, day, month, all, 7d, 30d)")
    if len(set(raw)) != len(raw):
        raise DomainError("validation_error", "periods must be distinct")
    return tuple(p for p in PERIODS if p in {*raw, "week"})


def parse_definition(kind: str, body: dict[str, Any], was: BoardKind | None,
                     default_zone: str, now: datetime) -> BoardKind:
    """What a PUT's body makes of the kind: the fields given, checked; the
    others as the kind has them (`was`), or their defaults for a new kind."""
    unknown = sorted(set(body) - {"title", "metric", "periods", "time_zone", "notify"})
    if unknown:
        raise DomainError("validation_error", unknown_field(unknown[0]))
    title = body.get("title", was.title if was else kind.capitalize())
    if not isinstance(title, str) or not 1 <= len(title.strip()) <= TITLE_MAX:
        raise DomainError("validation_error", f"title must be 1 to {TITLE_MAX} characters")
    metric = body.get("metric", was.metric if was else "points")
    if metric not in METRICS:
        raise DomainError("validation_error", "metric must be points, completions or best")
    zone = body.get("time_zone", was.time_zone if was else default_zone)
    try:
        zone_info(zone if isinstance(zone, str) else "")
    except BadZone as exc:
        raise DomainError("validation_error", f"time_zone: {exc}") from None
    notify = body.get("notify", was.notify if was else False)
    if not isinstance(notify, bool):
        raise DomainError("validation_error", "notify must be true or false")
    periods = _periods(body["periods"]) if "periods" in body else (
        was.periods if was else ("week",))
    return BoardKind(kind, title.strip(), metric, periods, zone, notify,
                     was.created_at if was else now)


def fixed_score(metric: Metric) -> int | None:
    """What any completion scores on a board of `metric`, whatever its
    points; None: its points (a new metric fails mypy here until it says;
    db/variants.py says it in SQL). It adds that on a sum, and on `best`
    apply.lua keeps the highest."""
    if metric == "completions":
        return 1
    if metric == "points" or metric == "best":
        return None
    assert_never(metric)


def score_of(metric: Metric, points: int) -> int:
    """What one completion worth `points` scores on a board of `metric`."""
    fixed = fixed_score(metric)
    return points if fixed is None else fixed


def board_seasons(at: datetime, tags: Iterable[str], kinds: Mapping[str, BoardKind]
                  ) -> list[Season]:
    """The seasons of the boards of defined kinds a completion at `at` with
    these tags counts on (as tagged_boards puts it there)."""
    return [board[0] for board in _tags_boards(tuple(tags), at, kinds, Found()).boards]


def tagged_boards(deltas: list[Delta], kinds: Mapping[str, BoardKind]) -> list[list[Delta]]:
    """Each tagged completion once per board of a defined kind it counts on
    (a list for each of `deltas`): for each tag whose kind is defined, the
    season of each of the kind's periods that holds its `completed_at` in
    the kind's zone, scored by the kind's metric; on its week, with rank
    events when the kind notifies."""
    out: list[list[Delta]] = []
    # A batch's completions mostly share their tags and seasons: a list of
    # tags' boards (their seasons' bounds, names, scores, parts) is kept for
    # the call, made again only for a completion outside those bounds.
    found = Found()
    known: dict[tuple[str, ...], _TagBoards] = {}
    for d in deltas:
        tags = d.tags
        boards = known.get(tags)
        if boards is not None:
            at = d.completed_at
            for starts_at, ends_at in boards.bounds:  # (a loop: all() of a generator cost 3x)
                if not starts_at <= at < ends_at:
                    boards = None
                    break
        if boards is None:
            boards = known[tags] = _tags_boards(tags, d.completed_at, kinds, found)
        out.append(d.on_boards(boards.boards) if boards.boards else [])
    return out


class _TagBoards(NamedTuple):
    """A list of tags' boards at one instant: the bounds of the seasons
    that hold it ([starts_at, ends_at) of each period of each of their
    kinds but `all`), and each board's season name, score, whether it
    makes rank events, and its part (Delta.on_boards's)."""

    bounds: tuple[tuple[datetime, datetime], ...]
    boards: tuple[tuple[Season, int | None, bool, str], ...]


def _tags_boards(tags: tuple[str, ...], at: datetime, kinds: Mapping[str, BoardKind],
                 found: Found) -> _TagBoards:
    bounds: dict[tuple[datetime, datetime], None] = {}
    boards = []
    for tag in tags:
        kind = kinds.get(kind_of(tag))
        if kind is None:
            continue  # kept: it counts once the kind is defined
        score, week = fixed_score(kind.metric), ""
        for period in kind.periods:  # `week` first
            season = found.season(at, period, kind.time_zone)
            part = week if period == "all" else ""
            if period in WINDOW_DAYS:  # its entry carries its local day (a bound)
                day = found.season(at, "day", kind.time_zone)
                bounds[day.starts_at, day.ends_at] = None
                part = day.label
            elif period != "all":
                bounds[season.starts_at, season.ends_at] = None
            board = season.on(tag, kind.metric)
            # On the all-time board, its week: a part once its month was
            # retired (history.history_of).
            boards.append((board, score, kind.notify and period == "week", part))
            if period == "week":
                week = board.name
    return _TagBoards(tuple(bounds), tuple(boards))
