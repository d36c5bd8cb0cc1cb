"""The values each Lua script takes, named once.

A script's ARGV is a row of positional strings; here each script's are
named, as a NamedTuple per script: its head (ARGV[1], ARGV[2], ...) and, for
a script that takes a list, one item of the list (repeated after the head;
apply.lua instead takes four lists, named SEASON, ITEM, ENTRY and RESET, as
JSON arrays in its head read by the same offsets: `ITEMS[i + ITEM.uid]`).
Python builds every call's arguments from these tuples, by name; `Scripts`
(base.py) puts above each script the positions of the same names,
generated from the same tuples:

    local ARG = {version = 1, policy = 2, metric = 3}
    local HEAD = 3                           -- values before the list
    local EACH = {uid = 0, points = 1, ...}  -- offsets within one item
    local EACH_WIDTH = 6

so a script reads `ARGV[ARG.policy]` and `ARGV[i + EACH.points]`, never a
number that Python and Lua must agree on by hand. The constants both sides
use (CONSTANTS) are written into every script the same way.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

from laurels.board.keys import BOARD_CHUNK_BITS

ROUTES_MAX = 100  # learners a hint may route by (hints.py, apply.lua)
TOP = 100  # the rank events' horizon: passing learners in the top 100 (apply.lua)
NOTIFY_MAX = 10  # entering the top 10 notifies (apply.lua)
OVERTAKEN_MAX = 10  # at most this many learners passed, per completion (apply.lua)
# A completion taken out of a rolling window at the midnight its day leaves
# it: a correction numbered above every real one (apply.lua, "Windows").
WINDOW_LEFT = 2 ** 50
CONSTANTS = {"ROUTES_MAX": ROUTES_MAX, "TOP": TOP, "NOTIFY_MAX": NOTIFY_MAX,
             "OVERTAKEN_MAX": OVERTAKEN_MAX, "BOARD_CHUNK_BITS": BOARD_CHUNK_BITS,
             "WINDOW_LEFT": WINDOW_LEFT}

Arg = str | int


class ApplyHead(NamedTuple):
    """apply.lua's ARGV, whole: after the policy, the hint's command and
    the number of seasons, its four lists (the seasons' heads with their
    chunk ids, the items, the entries, the resets), each one JSON array of
    their values in turn (`json_list`), one argument each, where a value an
    argument cost about 0.15 us to pack and take in (apply.lua)."""

    policy: str
    hint_command: str  # 'PUBLISH', 'SPUBLISH' or '' (no hint)
    seasons: int  # S
    heads: bytes  # S ApplySeason's values, then each season's C chunk ids in turn, a JSON array
    items: bytes  # N ApplyItem's values, a JSON array (json_list)
    entries: bytes  # E ApplyEntry's values, each season's in turn, a JSON array
    resets: bytes  # ApplyReset's values of the entries that carry one, a JSON array


class ApplySeason(NamedTuple):
    """One season a call applies to, as this process believes it."""

    expected_current: str
    expected_building: str
    on_current: str  # '1' rank events on target 0, 'h' current without them, '0' not current
    targets: int  # T, the number of target versions
    chunks: int  # C, the number of its chunk ids
    season: str
    hint_channel: str
    metric: str  # the board's (kinds.Metric): 'best' keeps a learner's highest
    bits: str  # 'h': the version's bits in one hash (keys.hashed_bits), 's': a bitmap a chunk
    chunk_bits: int  # the low bits of a seq that are its offset in its chunk (keys.chunk_bits)
    origin: int  # the season's start, seconds since 1970 (its tie times count from it)
    width: int  # a tie time's digits (seasons.TS_WIDTHS)
    entries: int  # its entries, the next this many of the call's (in turn)
    window: str  # '1' a rolling window (its marker filters by day: apply.lua, "Windows")


class ApplyItem(NamedTuple):
    """A completion as recorded or corrected, once per call whatever the
    number of boards it counts on."""

    seq: int
    uid: str  # padded user id
    ts_s: int  # completed_at: seconds since 1970
    ts_us: int  # and microseconds
    profile_version: str  # (a string in the JSON: apply.lua concatenates it)
    visibility: str
    name: str  # display name ('' = none)
    correction: int  # 0: as recorded
    counts: str  # '1' counts, '0' voided


class ApplyEntry(NamedTuple):
    """An item on one season's board (its season: the entries come a season
    at a time, ApplySeason.entries of each in turn)."""

    item: int  # its index among the call's items (0-based)
    points: int  # what it scores there (1 on a `completions` board)
    part: str  # a long board's closed-able part (week, day) of it, else ''


class ApplyReset(NamedTuple):
    """What a correction's entry falls back to (apply.lua, Ties and Best),
    sent only for an entry that carries any: most entries are completions
    as recorded, and carry none."""

    entry: int  # its entry's index among the call's (0-based)
    reset_ts: str  # a correction's fallback tie time ('' when none counts)
    reset_score: int  # a void's fallback score on a `best` board (0: none counts)
    tie_token: str  # a void's ties token under `first` or on `best` ('' for none)


class SetProfileArgs(NamedTuple):
    expected_current: str
    expected_building: str
    uid: str
    profile_version: int
    visibility: str
    name: str
    policy: str


class EraseArgs(NamedTuple):
    expected_current: str
    expected_building: str
    uid: str
    policy: str
    erased_until_ms: int  # when the season's erased set may expire


class ReadTopArgs(NamedTuple):
    expected_current: str
    limit: int
    after_score: str
    after_member: str


class ReadAroundArgs(NamedTuple):
    expected_current: str
    uid: str
    radius: int
    policy: str


class ScoresArgs(NamedTuple):
    expected_current: str
    policy: str
    with_rank: str  # 'rank': each with its board rank too


class ProfileVersionsArgs(NamedTuple):
    expected_current: str
    policy: str


class VersionArgs(NamedTuple):
    """begin_build, switch, abort_build: the version."""

    version: str


class MergeBitsArgs(NamedTuple):
    version: str
    chunk: int
    bits: bytes


class MergeFieldsArgs(NamedTuple):
    version: str


class Field(NamedTuple):
    """One item of merge_fields' list: a chunk id and its bitmap."""

    chunk: int
    bits: bytes


class LoadBoardArgs(NamedTuple):
    version: str
    policy: str
    metric: str  # 'best': keep the higher of what is there and the row's


class LoadRow(NamedTuple):
    uid: str
    points: int
    ts: str
    profile_version: int
    visibility: str
    name: str


class LoadErasedArgs(NamedTuple):
    version: str
    current: str
    policy: str


class LoadCorrection(NamedTuple):
    seq: int
    correction: int
    counts: str


class MarkTiesArgs(NamedTuple):
    ttl_ms: int


class WindowArgs(NamedTuple):
    op: str  # 'state', 'begin', 'advance', 'done', 'forgot' (window.lua)
    day: str  # a local day, 'YYYY-MM-DD' ('' for 'state')


class TeamArgs(NamedTuple):
    op: str  # 'state', 'begin', 'finish', 'drop' (team.lua)
    version: str
    kind: str
    aggregate: str  # 'sum', 'mean', 'top'
    top: int  # N of a `top` kind, else 0
    applied: int  # the kind's membership changes the board holds (team_kinds.members_version)


class TeamMembersArgs(NamedTuple):
    op: str  # 'fill', 'move' (team_members.lua)
    version: str
    kind: str
    policy: str
    expected: int  # the membership changes the board must hold before a move
    applied: int  # and after it


class TeamMember(NamedTuple):
    uid: str  # padded user id
    groups: str  # their groups of the kind, comma-joined ('' for none)


class TeamReadArgs(NamedTuple):
    op: str  # 'top', 'of' (team_read.lua)
    version: str
    kind: str
    offset: int
    limit: int
    uid: str  # padded user id ('of')


class Learner(NamedTuple):
    """One item of a list of learners (scores, profile_versions, load_erased,
    mark_ties): a padded user id."""

    uid: str


class Part(NamedTuple):
    """One item of begin_build's list: a season the version counts from its archive."""

    season: str


# Each script: its head, and one item of its list (None: it takes none), or
# the items of its lists by name (apply.lua's four).
SCRIPTS: dict[str, tuple[type[Any], type[Any] | dict[str, type[Any]] | None]] = {
    "apply": (ApplyHead, {"SEASON": ApplySeason, "ITEM": ApplyItem, "ENTRY": ApplyEntry,
                          "RESET": ApplyReset}),
    "set_profile": (SetProfileArgs, None),
    "erase": (EraseArgs, None),
    "read_top": (ReadTopArgs, None),
    "read_around": (ReadAroundArgs, None),
    "scores": (ScoresArgs, Learner),
    "profile_versions": (ProfileVersionsArgs, Learner),
    "begin_build": (VersionArgs, Part),
    "switch": (VersionArgs, None),
    "abort_build": (VersionArgs, None),
    "merge_bits": (MergeBitsArgs, None),
    "merge_fields": (MergeFieldsArgs, Field),
    "load_board": (LoadBoardArgs, LoadRow),
    "load_erased": (LoadErasedArgs, Learner),
    "load_corrections": (VersionArgs, LoadCorrection),
    "mark_ties": (MarkTiesArgs, Learner),
    "window": (WindowArgs, None),
    "team": (TeamArgs, None),
    "team_members": (TeamMembersArgs, TeamMember),
    "team_read": (TeamReadArgs, None),
}


def preamble(script: str) -> str:
    """The Lua lines that bind a script's argument names (and the shared
    constants), generated from its tuples above."""
    head, each = SCRIPTS[script]
    lists = {"EACH": each} if isinstance(each, type) else dict(each or {})
    named = ", ".join(t.__name__ for t in (head, *lists.values()))
    lines = [f"-- ARGV by name: board/lua_args.py ({named}); generated, never by hand",
             "local ARG = {" + ", ".join(f"{n} = {i}" for i, n in
                                         enumerate(head._fields, 1)) + "}",
             f"local HEAD = {len(head._fields)}"]
    for name, item in lists.items():
        lines += [f"local {name} = {{" + ", ".join(f"{n} = {i}" for i, n in
                                                   enumerate(item._fields)) + "}",
                  f"local {name}_WIDTH = {len(item._fields)}"]
    lines += [f"local {name} = {value}" for name, value in CONSTANTS.items()]
    return "\n".join(lines) + "\n"


def json_list(values: list[Any]) -> bytes:
    """A list's values in turn, as one JSON array: a script decodes it with
    cjson, whose numbers are Lua's (exact below 2^53). None is refused here,
    as redis-py refuses it as an argument: a script failing half-way keeps
    what it wrote before (the text `null` is looked for first, in C)."""
    blob = orjson.dumps(values)
    if b"null" in blob and any(v is None for v in values):
        raise ValueError("a script's argument list holds None")
    return blob


def flat(head: tuple[Any, ...], items: list[Any] | tuple[Any, ...] = ()) -> list[Any]:
    """A call's ARGV: the head, then each item's values in order."""
    out = list(head)
    for item in items:
        out += item
    return out
