"""The board in memory: a door to no Redis, playing the roles services take
(board/roles.py), so a fast tier runs the services' rules in milliseconds
beside the store-backed tiers (tests/fast/; issue 66, point 7).

`MemoryBoard` answers as `Board` answers, to the Lua scripts' rules
(memory_state.py holds a season's board as Redis does, memory_read.py reads
it): apply exactly once per (season, seq) with "applied", "duplicate",
"missing" and a void's "retry"; both tie policies, the three metrics,
corrections converging to the newest, profiles (hidden learners ranked but
never listed, anonymous ones listed as stored), erasure's tombstones.
tests/integration/test_memory_board.py applies the same steps to a Board
on Redis and to this, and holds every answer and read equal.

What it does not do: versions and builds beyond `create` (a building
version, its deferred corrections, parts from archives), rank events and
their stream, expiry (recorded, never run), the trust of a server, Redis
Cluster's calls. A hint is recorded in `hints` (and heard by `signals`),
never published.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from laurels.board import memory_read
from laurels.board.base import APPLY_BATCH, MEMBERS_PER_CALL
from laurels.board.hints import Hint, hint_of
from laurels.board.lua_args import ROUTES_MAX
from laurels.board.memory_state import SeasonBoard
from laurels.board.signals import Signals
from laurels.board.values import Around, BoardMissing, Delta, Profile, Scored, Standing, Top
from laurels.core.ranking import Position, TiePolicy, member_uid, pad_uid
from laurels.core.seasons import Season
from laurels.core.states import ApplyResult

if TYPE_CHECKING:
    from laurels.board.roles import (
        Applier,
        Keeper,
        MemberReader,
        Presence,
        Profiles,
        Reader,
        Scanner,
    )


class _Changes:
    """What one call's entries changed on a season's board, for its hint
    (apply.lua's note_change and the hint it builds)."""

    def __init__(self, name: str) -> None:
        self.name = name  # the season's
        self.changed = self.shown = 0
        self.last_uid, self.last_vis = "", ""
        self.routes: list[int] = []
        self.routed: set[str] = set()
        self.routable = True

    def note(self, uid: str, vis: str) -> None:
        if vis == "" or self.last_uid == uid:
            return
        self.changed += 1
        if vis != "hidden":
            self.shown += 1
        self.last_uid, self.last_vis = uid, vis
        if vis != "public":
            self.routable = False
        elif self.routable and uid not in self.routed:
            self.routed.add(uid)
            self.routes.append(int(uid))
            if len(self.routes) > ROUTES_MAX:
                self.routable = False

    def hint(self) -> Hint | None:
        if not self.changed:
            return None
        message: dict[str, object] = {"season": self.name}
        if self.changed == 1:
            message["user_id"] = int(self.last_uid) if self.last_vis == "public" else None
        elif self.routable:
            message["routes"] = self.routes
        if self.shown == 0:
            message["quiet"] = True
        return hint_of(message)


class MemoryBoard:
    """Seasons' boards in this process's memory, by season name: a board
    exists once `create` made it (as a build would); a season's tombstones
    and ties outlive its board, as the season's keys do in Redis."""

    def __init__(self, policy: TiePolicy = "shared", signals: Signals | None = None) -> None:
        self.policy: TiePolicy = policy
        self.signals = signals or Signals()
        self.hints: list[Hint] = []  # every hint, applies' and publish_hint's, in order
        self.group_changes: list[str] = []
        self.expiries: dict[str, datetime] = {}  # season name -> when it would expire
        self.rewrites = 0
        self._boards: dict[str, SeasonBoard] = {}
        self._erased: dict[str, dict[str, datetime]] = {}  # season -> padded uid -> until
        self._ties: dict[str, dict[str, int]] = {}  # season -> padded uid -> count

    # -- making boards (in place of a build) ----------------------------

    def create(self, season: Season, standings: Sequence[Standing] = (),
               applied: Iterable[int] = ()) -> int:
        """Make the season's board anew, as a rebuild switches to a new
        version: its learners' `standings` (load_board.lua: erased ones
        skipped) and the seqs already counted in them (`applied`: applying
        one again is a duplicate). How many learners it loaded or skipped."""
        board = SeasonBoard(season, self.policy)
        erased = self._erased.get(season.name, {})
        for row in standings:
            uid = pad_uid(row[0])
            if uid not in erased:
                board.load(row, uid)
        board.bits.update(applied)
        self._boards[season.name] = board
        return len(standings)

    def drop(self, season: Season) -> None:
        """Lose the season's board, as a heal finds it: an apply answers
        "missing", a read raises BoardMissing. Its tombstones stay, as a
        rebuild puts them back from PostgreSQL (load_erased.lua)."""
        self._boards.pop(season.name, None)

    def erased(self, season: Season) -> set[int]:
        """The learners the season's tombstones keep off its board."""
        return {int(uid) for uid in self._erased.get(season.name, {})}

    def _board(self, season: Season) -> SeasonBoard:
        board = self._boards.get(season.name)
        if board is None:
            raise BoardMissing(season)
        return board

    def _gone(self, season: Season) -> dict[str, datetime]:
        return self._erased.get(season.name, {})

    # -- Applier ----------------------------------------------------------

    async def apply(self, deltas: list[Delta], only_version: str | None = None
                    ) -> list[ApplyResult]:
        """Apply deltas; per delta 'applied', 'duplicate', 'missing' (or a
        void's 'retry'), in the calls Board.apply makes (a hint a season a
        call). No version is ever being built here: with `only_version`,
        every delta is 'missing', as for a builder whose version is gone."""
        if only_version is not None:
            return ["missing"] * len(deltas)
        results: list[ApplyResult] = ["missing"] * len(deltas)
        for call in _calls(deltas):
            for name, idxs in call:
                board = self._boards.get(name)
                if board is None:
                    continue  # (its deltas stay 'missing': nothing is written)
                changes = _Changes(name)
                for i in idxs:
                    results[i] = self._apply_entry(board, deltas[i], changes)
                hint = changes.hint()
                if hint is not None:
                    self.hints.append(hint)
                    self.signals.hint_caches(hint)
        return results

    def _apply_entry(self, board: SeasonBoard, d: Delta, changes: _Changes) -> ApplyResult:
        """apply.lua's apply_entry, on a board's one (current) version."""
        name = board.season.name
        uid = pad_uid(d.user_id)
        ties = self._ties.get(name, {})
        if d.tie_token and str(ties.get(uid, "")) != d.tie_token:
            return "retry"  # the void's fallback may be stale (apply.lua, "Ties")
        erased = uid in self._erased.get(name, {})
        if d.correction > 0:
            got, vis = board.correct_one(d, uid, erased)
        else:
            got, vis = board.apply_one(d, uid, erased)
        if got and (self.policy == "first" or board.best) and uid in ties:
            ties[uid] += 1  # a void in flight for them must read again
        changes.note(uid, vis)
        return "applied" if got else "duplicate"

    async def mark_ties(self, season: Season, user_ids: list[int]) -> list[str]:
        """mark_ties.lua: each learner's token ('' for an erased one)."""
        ties = self._ties.setdefault(season.name, {})
        erased = self._gone(season)
        start = time.time_ns() // 1000
        out = []
        for user_id in user_ids:
            uid = pad_uid(user_id)
            if uid in erased:
                out.append("")
            else:
                out.append(str(ties.setdefault(uid, start)))
        return out

    # -- Hinting, GroupHinting ----------------------------------------

    async def publish_hint(self, hint: Hint) -> None:
        self.signals.hint_caches(hint)
        self.hints.append(hint)

    async def publish_group_change(self, group_id: str) -> None:
        self.signals.group_changed(group_id)
        self.group_changes.append(group_id)

    # -- Reader, MemberReader, Scanner ----------------------------------

    async def top(self, season: Season, limit: int, after: Position | None = None) -> Top:
        return memory_read.top(self._board(season), limit, after, self._gone(season))

    async def around(self, season: Season, user_id: int, radius: int) -> Around | None:
        return memory_read.around(self._board(season), user_id, radius, self._gone(season))

    async def standings_of(self, season: Season, user_ids: list[int],
                           board_rank: bool = False) -> list[Scored]:
        out: list[Scored] = []
        for i in range(0, len(user_ids), MEMBERS_PER_CALL):  # (none: no call, no check)
            chunk = user_ids[i:i + MEMBERS_PER_CALL]
            out += memory_read.standings_of(self._board(season), chunk, board_rank)
        return out

    async def scores(self, season: Season, user_ids: list[int]
                     ) -> dict[int, tuple[int | None, str, str, int | None]]:
        return memory_read.scores(self._board(season), user_ids)

    async def scan_scored(self, season: Season, count: int = 2000
                          ) -> AsyncIterator[list[int]]:
        """Batches of the learners scored: the public set's, then the
        hidden set's (in their order; ZSCAN's is the server's)."""
        board = self._boards.get(season.name)
        if board is None:
            return
        for zset in (board.public, board.hidden):
            members = [member for _, member in zset.order()]
            for i in range(0, len(members), count):
                yield [member_uid(m) for m in members[i:i + count]]

    # -- Profiles, Keeper -----------------------------------------------

    async def set_profile(self, season: Season, user_id: int, profile: Profile) -> bool:
        """set_profile.lua: False when the season has no board; an erased
        learner's profile changes nothing."""
        board = self._boards.get(season.name)
        if board is None:
            return False
        uid = pad_uid(user_id)
        if uid not in self._gone(season):
            board.set_profile(uid, profile)
        return True

    async def erase(self, season: Season, user_id: int, tombstone_until: datetime) -> bool:
        """erase.lua: the tombstone is written whether or not the season has
        a board (False when it has none); the learner leaves the board and
        the ties."""
        uid = pad_uid(user_id)
        self._erased.setdefault(season.name, {}).setdefault(uid, tombstone_until)
        self._ties.get(season.name, {}).pop(uid, None)
        board = self._boards.get(season.name)
        if board is None:
            return False
        board.remove_learner(uid)
        return True

    async def expire(self, season: Season, at: datetime) -> int:
        """Recorded, never run; 1 when the season holds a board, else 0
        (Redis answers how many keys took the expiry)."""
        self.expiries[season.name] = at
        return int(season.name in self._boards)

    async def expire_many(self, seasons: dict[Season, datetime]) -> int:
        return sum([await self.expire(season, at) for season, at in seasons.items()])

    async def rewrite_files(self) -> bool:
        self.rewrites += 1  # (no files: nothing of an erased learner is left anywhere)
        return True

    # -- Presence -------------------------------------------------------

    async def present(self, season: Season) -> bool:
        return season.name in self._boards

    async def wait_present(self, season: Season, timeout_seconds: float) -> bool:
        deadline = asyncio.get_running_loop().time() + timeout_seconds
        while not await self.present(season):
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True


def _calls(deltas: list[Delta]) -> list[list[tuple[str, list[int]]]]:
    """The apply.lua calls Board.apply makes of `deltas` on one node
    (apply.py, `_batches`): each season's deltas in order and together, at
    most APPLY_BATCH to a call; each call's seasons in turn."""
    by_season: dict[str, list[int]] = {}
    for i, d in enumerate(deltas):
        by_season.setdefault(d.season.name, []).append(i)
    calls: list[list[tuple[str, list[int]]]] = [[]]
    for name, idxs in by_season.items():
        for k in range(0, len(idxs), APPLY_BATCH):
            part = idxs[k:k + APPLY_BATCH]
            if sum(len(p) for _, p in calls[-1]) + len(part) > APPLY_BATCH:
                calls.append([])
            calls[-1].append((name, part))
    return [call for call in calls if call]


if TYPE_CHECKING:  # mypy holds the door to each role it plays, as `wire()` does the Board
    _door = MemoryBoard()
    _applier: Applier = _door
    _reader: Reader = _door
    _member_reader: MemberReader = _door
    _profiles: Profiles = _door
    _keeper: Keeper = _door
    _presence: Presence = _door
    _scanner: Scanner = _door
