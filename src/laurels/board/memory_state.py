"""One season's board held in memory (memory.py's), kept as the Lua scripts
keep it in Redis: a public and a hidden sorted set of minus each
learner's score, a users hash of stored profiles (`_common.lua`'s text,
none for a default learner under `shared`), the applied seqs and the
corrections' states. Each function below is its script's, step for step
(its name says which): the same stored strings, the same quirks (a tie
time not kept under `shared` reads back as ON_BOARD), so that every read
answers what Redis would (tests/integration/test_memory_board.py holds
them together). Pure: no Redis, no I/O.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from laurels.board.values import Delta, Profile, Standing
from laurels.core.ranking import TiePolicy
from laurels.core.seasons import Season

ON_BOARD = "-"  # a tie time not kept (`_common.lua`): below every stored one
Member = tuple[int, str]  # (stored score: minus the total, member), the sets' order


class SortedSet:
    """A Redis sorted set: members ordered by (score, member), the member
    compared as bytes (ASCII digits here, so as strings)."""

    def __init__(self) -> None:
        self.scores: dict[str, int] = {}
        self._order: list[Member] | None = None

    def __len__(self) -> int:
        return len(self.scores)

    def add(self, member: str, score: int) -> None:  # ZADD
        self.scores[member] = score
        self._order = None

    def remove(self, member: str) -> None:  # ZREM
        if self.scores.pop(member, None) is not None:
            self._order = None

    def score(self, member: str) -> int | None:  # ZSCORE
        return self.scores.get(member)

    def order(self) -> list[Member]:
        if self._order is None:
            self._order = sorted((s, m) for m, s in self.scores.items())
        return self._order

    def below(self, score: int) -> int:  # ZCOUNT -inf (score
        return bisect_left(self.order(), (score, ""))

    def place(self, score: int, member: str) -> int:
        """The index of (score, member), or where it would stand (ZRANK)."""
        return bisect_left(self.order(), (score, member))

    def after(self, score: int, member: str) -> int:
        """The first index strictly after (score, member) (read_top's cursor)."""
        return bisect_right(self.order(), (score, member))

    def range(self, start: int, stop: int) -> list[Member]:
        """ZRANGE start stop: inclusive, negative indexes from the end."""
        n = len(self.scores)
        start, stop = start + n if start < 0 else start, stop + n if stop < 0 else stop
        start = max(start, 0)
        if start > stop or start >= n:
            return []
        return self.order()[start:min(stop, n - 1) + 1]


@dataclass
class Loaded:
    """A learner's profile as load_profile reads it (`_common.lua`)."""

    ver: str
    vis: str
    ts: str  # '' off the board
    name: str
    stored: str | None = None  # the users hash's entry, as stored
    score: int | None = None  # read already (ON_BOARD's)

    def text(self) -> str:  # format_profile
        return f"{self.ver}\t{self.vis}\t{self.ts}\t{self.name}"


def parse_stored(stored: str) -> Loaded:  # parse_profile
    ver, vis, ts, name = stored.split("\t", 3)
    return Loaded(ver, vis, ts, name, stored)


def merge_profile(p: Loaded | None, version: str, visibility: str, name: str,
                  ts: str) -> Loaded:
    """`_common.lua`'s merge_profile: a newer profile wins, the tie time
    becomes the latest."""
    if p is None:
        p = Loaded(version, visibility, "", name)
    elif int(version) > int(p.ver):
        p.ver, p.vis, p.name = version, visibility, name
    if ts > p.ts:
        p.ts = ts
    return p


def raise_best(p: Loaded, score: int, on_board: bool, points: int, ts: str) -> int:
    """apply.lua's raise_best: on a `best` board the higher, and the
    earlier tie time on a tie."""
    if not on_board or -points < score:
        p.ts = ts
        return -points
    if -points == score and ts < p.ts:
        p.ts = ts
    return score


class SeasonBoard:
    """One version of a season's board (the current one: memory.py builds
    no other)."""

    def __init__(self, season: Season, policy: TiePolicy) -> None:
        self.season = season
        self.policy = policy
        self.best = season.metric == "best"
        self.public = SortedSet()
        self.hidden = SortedSet()
        self.users: dict[str, str] = {}  # padded uid -> stored profile
        self.bits: set[int] = set()  # the applied seqs (the idempotency record)
        self.corrections: dict[int, tuple[int, bool]] = {}  # seq -> (number, counts)

    # -- `_common.lua` --------------------------------------------------

    def member_of(self, ts: str, uid: str) -> str:
        return ts + uid if self.policy == "first" else uid

    def zset_of(self, vis: str) -> SortedSet:
        return self.hidden if vis == "hidden" else self.public

    def load_profile(self, uid: str) -> Loaded | None:
        stored = self.users.get(uid)
        if stored is not None:
            return parse_stored(stored)
        score = self.public.score(uid) if self.policy == "shared" else None
        if score is not None:
            return Loaded("0", "public", ON_BOARD, "", score=score)
        return None

    def store_profile(self, uid: str, p: Loaded) -> None:
        if self.policy == "shared" and int(p.ver) == 0 and p.vis == "public" and p.name == "":
            if p.stored is not None:
                self.users.pop(uid, None)
        else:
            self.users[uid] = p.text()

    def score_of(self, p: Loaded, uid: str) -> tuple[SortedSet, str, int | None]:
        zset, member = self.zset_of(p.vis), self.member_of(p.ts, uid)
        return zset, member, p.score if p.score is not None else zset.score(member)

    def remove_learner(self, uid: str) -> bool:
        p = self.load_profile(uid)
        if p is None:
            return False
        if p.ts != "":
            self.zset_of(p.vis).remove(self.member_of(p.ts, uid))
        if p.stored is not None:
            self.users.pop(uid, None)
        return True

    def board_rank(self, p: Loaded, member: str, score: int) -> int:  # scores.lua's
        if self.policy == "shared":
            return self.public.below(score) + 1
        return self.public.place(score, member) + 1

    # -- apply.lua ------------------------------------------------------

    def apply_one(self, d: Delta, uid: str, erased: bool) -> tuple[int, str]:
        """A completion as recorded: (1 if newly applied, the learner's
        visibility after it), or (0, '') for a duplicate (an erased
        learner's too: its bit is set all the same)."""
        if d.seq in self.bits:
            return 0, ""
        self.bits.add(d.seq)
        if erased:
            return 0, ""
        ts = self.season.pad_ts(d.completed_at)
        version, vis, name = _carried(d.profile)
        p = self.load_profile(uid)
        score, on_board = 0, p is not None and p.ts != ""
        removed: tuple[SortedSet, str] | None = None
        if p is not None and on_board:
            zset, member, stored = self.score_of(p, uid)
            score, removed = stored or 0, (zset, member)
        if self.best:
            p = merge_profile(p, version, vis, name, "")
            new_score = raise_best(p, score, on_board, d.points, ts)
        else:
            p = merge_profile(p, version, vis, name, ts)
            new_score = score - d.points
        new_zset, new_member = self.zset_of(p.vis), self.member_of(p.ts, uid)
        if removed is not None and removed != (new_zset, new_member):
            removed[0].remove(removed[1])
        new_zset.add(new_member, new_score)
        self.store_profile(uid, p)
        return 1, p.vis

    def correct_one(self, d: Delta, uid: str, erased: bool) -> tuple[int, str]:
        """A correction (void, restore): (1 if its state is newly recorded,
        the learner's visibility when their score changed, else ''), or
        (0, '') for an older correction than the one recorded."""
        ts = self.season.pad_ts(d.completed_at)
        stored = self.corrections.get(d.seq)
        if stored is not None and stored[0] >= d.correction:
            return 0, ""
        was_applied = d.seq in self.bits
        self.bits.add(d.seq)
        self.corrections[d.seq] = (d.correction, d.counted)
        counted = stored[1] if stored is not None else was_applied
        if erased or counted == d.counted:
            return 1, ""
        version, vis, name = _carried(d.profile)
        p = self.load_profile(uid)
        score, on_board = 0, p is not None and p.ts != ""
        if p is not None and on_board:
            zset, member, stored_score = self.score_of(p, uid)
            score = stored_score or 0
            zset.remove(member)
        if d.counted:  # restored: it counts again (and may be the best or the latest)
            p = merge_profile(p, version, vis, name, "" if self.best else ts)
            score = raise_best(p, score, on_board, d.points, ts) if self.best else (
                score - d.points)
        else:
            p = merge_profile(p, version, vis, name, "")
            reset_ts = self.season.pad_ts(d.reset_at) if d.reset_at else ""
            if self.best:  # voided: the next best, as PostgreSQL has it
                score, p.ts = -(d.reset_score or 0), reset_ts
            else:  # voided: the tie time falls back when it was this completion's
                if p.ts == ts:
                    p.ts = reset_ts
                score += d.points
        if score >= 0:
            p.ts = ""  # nothing counts: off the board
        elif p.ts == "":
            p.ts = ts
        if p.ts != "":
            self.zset_of(p.vis).add(self.member_of(p.ts, uid), score)
        self.store_profile(uid, p)
        return 1, p.vis

    # -- set_profile.lua, load_board.lua --------------------------------

    def set_profile(self, uid: str, profile: Profile) -> None:
        version, vis, name = _carried(profile)
        p = self.load_profile(uid)
        if p is None:
            self.store_profile(uid, Loaded(version, vis, "", name))
        elif profile.version > int(p.ver):
            source, target = self.zset_of(p.vis), self.zset_of(vis)
            if p.ts != "" and source is not target:
                member = self.member_of(p.ts, uid)
                score = source.score(member)
                if score is not None:
                    source.remove(member)
                    target.add(member, score)
            p.ver, p.vis, p.name = version, vis, name
            self.store_profile(uid, p)

    def load(self, row: Standing, uid: str) -> None:
        """A build's learner (Builder.load_standings): added to what the
        version holds, as load_board.lua adds it."""
        _, points, tie, profile_version, visibility, name = row
        width = self.season.ts_width
        ts = "" if tie is None else (f"{tie:0{width}d}" if isinstance(tie, int)
                                     else self.season.pad_ts(tie))
        p = self.load_profile(uid)
        score, on_board = 0, p is not None and p.ts != ""
        if p is not None and on_board:
            zset, member, stored = self.score_of(p, uid)
            score = stored or 0
            zset.remove(member)
        if self.best:
            p = merge_profile(p, str(profile_version), visibility, name, "")
            if not on_board or -points < score:
                score, p.ts = -points, ts
            elif -points == score and ts < p.ts:
                p.ts = ts
            points = 0
        else:
            p = merge_profile(p, str(profile_version), visibility, name, ts)
        if score - points >= 0:
            p.ts = ""
        else:
            self.zset_of(p.vis).add(self.member_of(p.ts, uid), score - points)
        self.store_profile(uid, p)


def _carried(profile: Profile) -> tuple[str, str, str]:
    """A profile as a script receives it: (version, visibility, name) as text."""
    return str(profile.version), profile.visibility, profile.display_name
