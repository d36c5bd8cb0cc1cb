"""Tie policies and how a learner is encoded in a sorted set (pure).

A board is a sorted set whose score is minus the learner's total, so that
ascending order (ZRANGE, ZRANK) is best-first; totals are integers far below
2^53, so doubles hold them exactly. Ties are broken by the *member* string,
which Redis orders lexicographically among equal scores:

- shared: member = user_id zero-padded to 19 digits: ties by ascending user_id.
- first:  member = microseconds of the learner's latest completion since the
  season start, zero-padded to 12 digits, then the padded user_id: the earlier
  latest completion first, then ascending user_id. Nothing is packed into the
  double, so no range of points can lose precision.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

TiePolicy = Literal["shared", "first"]
# A place on a board, in its order: (stored score, i.e. minus the total; the
# tie time of the `first` policy, else 0; user id). Cursors name one.
Position = tuple[int, int, int]
USER_ID_MAX = 2**63 - 1
UID_WIDTH = 19
TS_WIDTH = 12  # a week's and a day's tie times (core/seasons.py: each period's width)
UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # an instant's seconds count from here


_UID_FORMAT = f"%0{UID_WIDTH}d"  # (half the cost of an f-string's nested width)


def pad_uid(user_id: int) -> str:
    return _UID_FORMAT % user_id


def pad_ts(offset_us: int, width: int = TS_WIDTH) -> str:
    return f"{offset_us:0{width}d}"


def member_uid(member: str) -> int:
    return int(member[-UID_WIDTH:])


@dataclass(frozen=True)
class Standing:
    user_id: int
    score: int
    last_offset_us: int = 0


def sort_key(s: Standing, policy: TiePolicy) -> tuple[int, int, int]:
    if policy == "first":
        return (-s.score, s.last_offset_us, s.user_id)
    return (-s.score, 0, s.user_id)


def assign_ranks(scores: Sequence[int], first_rank: int, first_index: int,
                 policy: TiePolicy) -> list[int]:
    """Ranks for a best-first slice starting at board index `first_index`.

    `first_rank` is the rank of the slice's first entry (for `shared`, one
    more than the number of entries with a strictly better score).
    """
    ranks: list[int] = []
    for i, score in enumerate(scores):
        if policy == "first":
            ranks.append(first_index + i + 1)
        elif i == 0:
            ranks.append(first_rank)
        elif score == scores[i - 1]:
            ranks.append(ranks[-1])
        else:
            ranks.append(first_index + i + 1)
    return ranks


def ranks_beside(ranks: Sequence[int], scores: Sequence[int], index: int, policy: TiePolicy
                 ) -> list[int]:
    """The ranks of a hidden learner's neighbours (a best-first slice with
    the learner at `index`, placed where they would stand) as if the learner
    were on the board: everyone after them one lower (under `shared`, only
    those with a lower score: a tie shares the learner's rank). Their own
    view then never shows two learners on one unique rank."""
    mine = scores[index]
    return [rank + 1 if i > index and (policy == "first" or scores[i] < mine) else rank
            for i, rank in enumerate(ranks)]


def rank_all(standings: Iterable[Standing], policy: TiePolicy) -> list[tuple[int, Standing]]:
    """Reference ranking of a whole board: the model the tests check Redis and
    the archive against (production ranks in Lua and in SQL)."""
    ordered = sorted(standings, key=lambda s: sort_key(s, policy))
    ranks = assign_ranks([s.score for s in ordered], 1, 0, policy)
    return list(zip(ranks, ordered, strict=True))
