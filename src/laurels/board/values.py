"""The values the board deals in: a delta to apply, the entries it reads,
a learner's stored profile. Pure: no Redis here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from laurels.core.ranking import Position, TiePolicy, ranks_beside
from laurels.core.seasons import Season, season_named


class BoardMissing(Exception):
    """The season has no board in Redis (never built, or lost): rebuild it."""

    def __init__(self, season: Season) -> None:
        super().__init__(season)
        self.season = season


# A learner's row a build loads (Builder.load_standings): user id, points,
# tie time (a datetime, or microseconds since the season began; None: no
# completion counts), profile version, visibility, name.
Standing = tuple[int, int, datetime | int | None, int, str, str]


@dataclass(frozen=True)
class Profile:
    version: int
    visibility: str
    display_name: str  # '' when never set


class Delta(NamedTuple):
    """A change to one board: a completion of a learner, as recorded (its
    points count) or as corrected (a void or a restore), to be applied to
    one season's board (apply.lua) exactly once. A tuple: a batch makes
    one for each board a completion counts on (a completion with three tags
    is five), and a tuple is made in a third of a frozen dataclass's time
    (tests/unit/test_values.py holds on_board to `_replace`)."""

    seq: int
    user_id: int
    points: int
    completed_at: datetime
    season: Season
    profile: Profile
    # A correction (void, restore): the completion's correction number (0: as
    # recorded), whether it counts, and what a void falls back to in this
    # board's season: the learner's tie time from the completions that
    # still count (the `first` policy's; None when none counts) and, on a
    # `best` board, their next best (reset_score). apply.lua converges to
    # the newest.
    correction: int = 0
    counted: bool = True
    reset_at: datetime | None = None
    reset_score: int | None = None
    # A void under `first` or on a `best` board: the learner's mark in the
    # season's ties hash, taken before the fallback was read (apply.lua,
    # "Ties"); '' for none.
    tie_token: str = ""
    # On a long board (all time, a month): the closed-able season of a
    # shorter period it belongs to (its week, its day): a version built from
    # that part's archive counts it already (apply.lua, "Parts"); '' else.
    part: str = ""
    # The completion's tags (`kind:value`): the boards of kinds it counts on
    # besides the whole board's (kind_rules.tagged_boards).
    tags: tuple[str, ...] = ()
    # On the weekly board of a kind whose `notify` is on: its apply makes
    # rank events, as the whole board's weeks do (seasons.whole_week).
    notify: bool = False

    @classmethod
    def recorded(cls, seq: int, user_id: int, points: int, completed_at: datetime, season: Season,
                 profile: Profile, tags: tuple[str, ...] = ()) -> Delta:
        """A completion as recorded: its other fields at their defaults."""
        return cls(seq, user_id, points, completed_at, season, profile, tags=tags)

    def on_board(self, season: Season, points: int, notify: bool, part: str = "") -> Delta:
        """This completion on one other board (the whole board's other
        periods: projector.boards_of): its fields in order, four of them
        changed, as `_replace` would. (on_boards of one board costs a fifth
        more: its list and its loop, a period a completion.)"""
        (seq, user_id, _, completed_at, _, profile, correction, counted, reset_at,
         reset_score, tie_token, _, tags, _) = self
        return _new(Delta, (seq, user_id, points, completed_at, season, profile, correction,
                            counted, reset_at, reset_score, tie_token, part, tags, notify))

    def on_boards(self, boards: Iterable[tuple[Season, int | None, bool, str]]) -> list[Delta]:
        """This completion on other boards (kind_rules.tagged_boards: its
        tags'): each board's season, its score there (None: the
        completion's points), whether it makes rank events, and its part.
        Its fields are read once for them all and each copy made whole
        (`_replace` costs four times this, and a batch makes several copies
        a completion)."""
        (seq, user_id, own, completed_at, _, profile, correction, counted, reset_at,
         reset_score, tie_token, _, tags, _) = self
        copies = []
        for season, points, notify, part in boards:  # (a comprehension's frame cost more)
            copies.append(_new(Delta, (seq, user_id, own if points is None else points,
                                       completed_at, season, profile, correction, counted,
                                       reset_at, reset_score, tie_token, part, tags, notify)))
        return copies

    @classmethod
    def from_row(cls, row: Mapping[str, Any], zone: str) -> Delta:
        """A completion row joined with its learner's profile, as the
        projector and a catch-up read it (db/queries/): on its week's
        board, the row's season, in the calendar of `zone`."""
        return cls(row["seq"], row["user_id"], row["points"], row["completed_at"],
                   season_named(row["season"], zone),
                   Profile(row["profile_version"], row["visibility"], row["display_name"]),
                   int(row.get("correction") or 0), bool(row.get("counted", True)),
                   tags=tuple(row.get("tags") or ()))


_new = tuple.__new__


class Scored(NamedTuple):
    """A learner's standing on a season's board, read by id (group and
    friends boards): `last_ts` orders ties under the `first` policy."""

    user_id: int
    score: int
    visibility: str
    name: str
    last_ts: int
    board_rank: int | None = None


@dataclass(frozen=True)
class Entry:
    rank: int
    user_id: int
    display_name: str
    visibility: str
    score: int


@dataclass(frozen=True)
class Top:
    total: int
    entries: list[Entry]
    next: Position | None = None  # where the next page starts after, if there is one


@dataclass(frozen=True)
class Around:
    me: Entry
    index: int  # position of `me` inside `neighbors`
    neighbors: list[Entry]



def beside(neighbors: list[Entry], index: int, policy: TiePolicy) -> list[Entry]:
    """A hidden learner's neighbourhood, ranked as if they were on the board
    (ranking.ranks_beside)."""
    ranks = ranks_beside([e.rank for e in neighbors], [e.score for e in neighbors], index,
                         policy)
    return [e if e.rank == r else Entry(r, e.user_id, e.display_name, e.visibility, e.score)
            for e, r in zip(neighbors, ranks, strict=True)]


def default_name(user_id: int) -> str:
    return f"Learner {user_id}"


class StoredProfile(NamedTuple):
    """A learner's entry in a version's users hash, as the Lua scripts write
    it (`_common.lua`, format_profile): the one place Python reads it."""

    version: str
    visibility: str
    last_ts: str  # '' until the learner has scored in this version; '-' not kept (`shared`)
    name: str  # '' when the learner set none

    @property
    def tie_time(self) -> int | None:
        """The stored offset of the latest completion (the `first` policy's
        tie time); None when not on the board or not kept (`shared` keeps
        none for a learner stored without an entry: `_common.lua`, ON_BOARD)."""
        return int(self.last_ts) if self.last_ts.isdigit() else None

    @classmethod
    def parse(cls, text: str) -> StoredProfile:
        """A stored profile; '' (no entry) is the default profile, which
        under `shared` is stored for nobody (`_common.lua`, load_profile)."""
        if not text:
            return DEFAULT_PROFILE
        version, visibility, last_ts, name = text.split("\t", 3)
        return cls(version, visibility, last_ts, name)


DEFAULT_PROFILE = StoredProfile("0", "public", "", "")


def parse_profile(text: str, user_id: int) -> tuple[str, str]:
    """(visibility, display name) of a stored profile string."""
    profile = StoredProfile.parse(text)
    return profile.visibility, profile.name or default_name(user_id)

