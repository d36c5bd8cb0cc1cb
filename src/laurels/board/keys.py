"""Every Redis key and channel name, built here and nowhere else.

All keys of one season share a cluster hash tag naming its period and season
(`{weekly:2026-W49}`, `{day:2026-11-30}`, `{month:2026-11}`, `{all}`), so each
script touches one slot and runs unchanged on Redis Cluster. The tie policy is
part of the name because a board ordered under one policy is useless under the
other: changing the policy finds no board, and the service rebuilds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from laurels.core.seasons import Season, is_board_season, period_of

CHUNK_BITS = 16  # one idempotency bitmap per 65,536 seqs: at most 8 KiB each
# A board of a kind holds few of a deployment's seqs, spread over all of them:
# a bitmap key per 65,536 seqs cost 1,600 B per (learner, board) entry with
# 10,000 boards (bench/boards.py). Its bits live in one hash per version
# instead (VersionKeys.bits), a field per 256 seqs holding at most 32 bytes:
# a small board's hash stays in Redis's compact encoding. (apply.lua holds a
# field as a table of its bytes, through string.byte and unpack: past about
# 8,000 bytes a field, 16 bits here, Lua's stack would not take it.)
BOARD_CHUNK_BITS = 8

# What each kind of key holds of learners, declared beside its name: the
# erasure and visibility invariants (tests/invariants.py) enumerate the keys
# that exist, read each by what it holds here, and refuse a key that is not
# declared, so a new kind of key is covered the moment it exists.
# - "learners": a sorted set's members, a hash's fields, a set's members are
#   learners (padded ids);
# - "events": a stream of rank events naming learners (`uid`, `passed`);
# - "tombstones": erased learners, kept on purpose (never shown);
# - "none": no learner.
Holds = Literal["learners", "events", "tombstones", "none"]
SEASON_KEYS: dict[str, Holds] = {
    "current": "none", "building": "none", "nextver": "none", "notify": "events",
    "erased": "tombstones", "ties": "learners", "versions": "none", "window": "none"}
VERSION_KEYS: dict[str, Holds] = {
    "public": "learners", "hidden": "learners", "users": "learners", "chunks": "none",
    "applied": "none", "bits": "none", "corrections": "none", "parts": "none",
    "scratch": "none", "teams": "none"}
# A team kind's keys on a version (TeamKeys), by their last letter.
TEAM_KEYS: dict[str, Holds] = {"m": "learners", "p": "learners", "t": "learners",
                               "z": "none", "s": "none", "c": "none"}
_KEY = re.compile(r"^\{[^}]*\}:(?:shared|first):"
                  r"(?:v\d+:team:[a-z][a-z0-9_-]*:(?P<team>[mpzsc]|t:.+)"
                  r"|v\d+:(?P<version>[a-z]+)(?::\d+)?|(?P<season>[a-z]+))$")


@dataclass(frozen=True)
class VersionKeys:
    version: str
    public: str  # zset: public and anonymous learners
    hidden: str  # zset: hidden learners (never read publicly)
    # hash: padded user_id -> "profile_version\tvisibility\tlast_ts\tname"; under
    # `shared`, no entry for a learner whose profile was never set (_common.lua)
    users: str
    chunks: str  # set: ids of the idempotency bitmaps this version uses
    applied_prefix: str  # + chunk id: bitmap, bit (seq mod 2^16) set once applied
    # hash, on a board of a kind instead of the two above: chunk id (seq >>
    # BOARD_CHUNK_BITS) -> its bitmap (bit: seq mod 256), set once applied
    bits: str
    corrections: str  # hash: seq -> "correction:1|0" of voided/restored completions
    # set: the closed seasons (weeks of `all`, days of a month) this version
    # was built from their archived standings: their completions count on it
    # already (apply.lua, "Parts")
    parts: str

    @property
    def teams(self) -> str:
        """Hash: team kind -> "aggregate:top:applied:ready" of each team
        board this version keeps (board/teams.py; apply.lua keeps them)."""
        return f"{self.applied_prefix.removesuffix(':applied:')}:teams"

    def team(self, kind: str) -> TeamKeys:
        return TeamKeys(f"{self.applied_prefix.removesuffix(':applied:')}:team:{kind}")

    def applied(self, chunk: int) -> str:
        return f"{self.applied_prefix}{chunk}"

    def every(self, chunks: Iterable[Any]) -> list[str]:
        """Every key of this version, given its chunk ids (`chunks`' members):
        the idempotency chunks first, the chunk index last (so a cleanup cut
        short still finds what is left)."""
        return [*(self.applied(int(c)) for c in chunks), self.bits, self.public, self.hidden,
                self.users, self.corrections, self.parts, self.teams, self.chunks]

    def scratch(self, n: int) -> str:
        """A temporary key of a rebuild (deleted by the script that writes it)."""
        return f"{self.applied_prefix.removesuffix(':applied:')}:scratch:{n}"


@dataclass(frozen=True)
class TeamKeys:
    """A team kind's board on one version of a season's board (board/teams.py,
    lua/_common.lua "Teams", which makes the same names from `base`)."""

    base: str

    @property
    def members(self) -> str:  # hash: learner -> their groups of the kind, comma-joined
        return f"{self.base}:m"

    @property
    def points(self) -> str:  # hash: learner -> their points as the teams count them
        return f"{self.base}:p"

    @property
    def scores(self) -> str:  # zset: group -> minus its aggregate (ties by group id)
        return f"{self.base}:z"

    @property
    def sums(self) -> str:  # hash: group -> its members' points, summed
        return f"{self.base}:s"

    @property
    def counts(self) -> str:  # hash: group -> how many members count in it
        return f"{self.base}:c"

    def top(self, group_id: str) -> str:  # zset (a `top` kind's): learner -> points
        return f"{self.base}:t:{group_id}"


@dataclass(frozen=True)
class SeasonKeys:
    base: str

    @property
    def current(self) -> str:
        """The season marker: the version readers use. Missing means no board."""
        return f"{self.base}:current"

    @property
    def building(self) -> str:
        return f"{self.base}:building"

    @property
    def next_version(self) -> str:
        return f"{self.base}:nextver"

    @property
    def notify_stream(self) -> str:
        """Stream of rank events (top 10 entered, learners passed) for notifications."""
        return f"{self.base}:notify"

    @property
    def erased(self) -> str:
        """Set of learners erased while this season's board existed."""
        return f"{self.base}:erased"

    @property
    def ties(self) -> str:
        """Hash: padded user id -> apply count, for learners a void is being
        projected for under the `first` policy (apply.lua: the void's fallback
        tie time, read from PostgreSQL, is written only if no apply touched
        the learner since it was read). Short-lived: it expires by itself."""
        return f"{self.base}:ties"

    @property
    def versions(self) -> str:
        """Set of the versions whose keys exist (so none is ever leaked)."""
        return f"{self.base}:versions"

    @property
    def window(self) -> str:
        """Hash, a rolling window's marker: `from`, the first local day it
        holds (an entry of an earlier day changes nothing: apply.lua,
        "Windows"); `done`, the first day not yet taken out of it (the days
        from `done` to `from` are leaving); `forgot`, the first whose
        leaving marks are not yet dropped (lifecycle/windows.py)."""
        return f"{self.base}:window"

    def own(self) -> list[str]:
        """The season's keys outside its versions."""
        return [self.current, self.building, self.next_version, self.versions, self.erased,
                self.notify_stream, self.ties, self.window]

    def version(self, v: str) -> VersionKeys:
        b = f"{self.base}:v{v}"
        return VersionKeys(v, f"{b}:public", f"{b}:hidden", f"{b}:users", f"{b}:chunks",
                           f"{b}:applied:", f"{b}:bits", f"{b}:corrections", f"{b}:parts")


class Keys:
    def __init__(self, prefix: str, policy: str) -> None:
        self.prefix = prefix
        self.policy = policy

    def season(self, season: Season | str) -> SeasonKeys:
        return SeasonKeys(f"{self.prefix}:{tag(season)}:{self.policy}")

    def hint_channel(self) -> str:
        """Pub/Sub channel of refresh hints (season, maybe a user id: never a score)."""
        return f"{self.prefix}:hints"

    def shard_hint_channel(self, season: Season | str) -> str:
        """On Redis Cluster: a season's hints, on the shard of its board (SPUBLISH)."""
        return f"{self.prefix}:{tag(season)}:hints"

    def team_boards(self) -> str:
        """Set: "kind\tseason" of every team board filled (board/teams.py): where
        a membership change must reach. Of no season (no hash tag)."""
        return f"{self.prefix}:teamboards"

    def notification_channel(self) -> str:
        """Pub/Sub channel telling API processes a learner has a new notification."""
        return f"{self.prefix}:notifications"

    def boards_pattern(self, kind: str | None = None) -> str:
        """The SCAN pattern of every key of a board of `kind` (or of every
        kind: their hash tags name a board, `kind:value/...`)."""
        head = f"{glob_escape(self.prefix)}:{{"
        return f"{head}{glob_escape(kind)}:*" if kind is not None else f"{head}*/*"

    def season_of_key(self, key: str) -> str | None:
        """The season whose hash tag a key under this prefix carries (tag()
        read back), or None for a key of no season."""
        head = f"{self.prefix}:{{"
        if not key.startswith(head) or "}" not in key[len(head):]:
            return None
        board, _, label = key[len(head):].partition("}")[0].rpartition("/")
        label = label.partition(":")[2] or label  # weekly:2026-W49, day:..., month:..., all
        return f"{board}/{label}" if board else label

    def holds(self, key: str) -> Holds | None:
        """What a key under this prefix holds of learners (SEASON_KEYS,
        VERSION_KEYS); None for a key no name here builds."""
        head = f"{self.prefix}:"
        if key == self.team_boards():
            return "none"  # (kinds and seasons)
        m = _KEY.match(key[len(head):]) if key.startswith(head) else None
        if m is None:
            return None
        if m["team"] is not None:
            return TEAM_KEYS[m["team"][0]]
        if m["version"] is not None:
            return VERSION_KEYS.get(m["version"])
        return SEASON_KEYS.get(m["season"])


def glob_escape(text: str) -> str:
    """`text` matched literally in a SCAN pattern."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def tag(season: Season | str) -> str:
    """The cluster hash tag of a season's keys (weeks keep the name they had
    before there were other periods); a board's seasons (seasons.Season.name)
    put their board, metric and zone before it. Keys are the text form's
    edge: a season here is a Season, or a name read back from Redis."""
    board, _, label = str(season).rpartition("/")
    head = f"{board}/" if board else ""
    period = period_of(label)
    if period == "all":
        return f"{{{head}all}}"
    return f"{{{head}{'weekly' if period == 'week' else period}:{label}}}"


def hashed_bits(season: Season | str) -> bool:
    """Whether a season's idempotency bits live in one hash per version
    (a board of a kind's: VersionKeys.bits) rather than a bitmap per chunk."""
    return is_board_season(str(season))


def chunk_bits(season: Season | str) -> int:
    """How many low bits of a seq are its offset in its chunk, on this season."""
    return BOARD_CHUNK_BITS if hashed_bits(season) else CHUNK_BITS


def chunk_of(seq: int, bits: int = CHUNK_BITS) -> tuple[int, int]:
    """(bitmap id, bit offset) of a completion's idempotency bit."""
    return seq >> bits, seq & ((1 << bits) - 1)


class ChunkBits:
    """Ascending seqs -> each chunk's bitmap (chunks of `width` bits; a
    byte's bits from its high end, as SETBIT numbers them)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.chunk, self.bits = -1, bytearray()

    def add_many(self, seqs: Iterable[int]) -> list[tuple[int, bytes]]:
        """Mark ascending `seqs` (a rebuild marks every completion of its
        board, a fetch at a time); the chunks they finished, each with its
        bitmap. The last chunk stays open until `rest`."""
        done: list[tuple[int, bytes]] = []
        width, mask = self.width, (1 << self.width) - 1
        chunk, bits = self.chunk, self.bits
        for seq in seqs:
            if seq >> width != chunk:
                if chunk >= 0:
                    done.append((chunk, bytes(bits)))
                chunk, bits = seq >> width, bytearray((1 << width) // 8)
            offset = seq & mask
            bits[offset >> 3] |= 0x80 >> (offset & 7)
        self.chunk, self.bits = chunk, bits
        return done

    def rest(self) -> tuple[int, bytes] | None:
        return (self.chunk, bytes(self.bits)) if self.chunk >= 0 else None

