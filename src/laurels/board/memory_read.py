"""Reading a season's board held in memory (memory_state.py): what
read_top.lua, read_around.lua and scores.lua answer, then what read.py
makes of their replies, in one step. Pure."""

from __future__ import annotations

from collections.abc import Container

from laurels.board.memory_state import Member, SeasonBoard
from laurels.board.values import (
    Around,
    Entry,
    Scored,
    StoredProfile,
    Top,
    beside,
    default_name,
    parse_profile,
)
from laurels.core.ranking import UID_WIDTH, Position, assign_ranks, member_uid, pad_ts, pad_uid


def entries(board: SeasonBoard, items: list[Member], erased: Container[str], first_rank: int,
            first_index: int) -> list[Entry]:
    """A slice of the public set as entries: an erased learner left out
    (`_common.lua`, append_entries), ranks as read.py gives them."""
    kept = [(score, member) for score, member in items if member[-UID_WIDTH:] not in erased]
    scores = [-score for score, _ in kept]
    ranks = assign_ranks(scores, first_rank, first_index, board.policy)
    out = []
    for (_, member), rank, score in zip(kept, ranks, scores, strict=True):
        uid = member_uid(member)
        vis, name = parse_profile(board.users.get(member[-UID_WIDTH:], ""), uid)
        out.append(Entry(rank, uid, name, vis, score))
    return out


def top(board: SeasonBoard, limit: int, after: Position | None, erased: Container[str]) -> Top:
    """read_top.lua and Reading.top: `limit` public entries from the top, or
    strictly after the position `after`."""
    public = board.public
    start = 0
    if after is not None:
        score, ts, uid = after
        head = pad_ts(ts, board.season.ts_width) if board.policy == "first" else ""
        start = public.after(score, head + pad_uid(uid))
    items = public.range(start, start + limit - 1)
    better = public.below(items[0][0]) if items else 0
    total = len(public)
    more = start + limit < total and bool(items)
    following: Position | None = None
    if more:
        last_score, last_member = items[-1]
        ts = int(last_member[:-UID_WIDTH]) if board.policy == "first" else 0
        following = (last_score, ts, member_uid(last_member))
    return Top(total, entries(board, items, erased, better + 1, start), following)


def around(board: SeasonBoard, user_id: int, radius: int, erased: Container[str]
           ) -> Around | None:
    """read_around.lua and Reading.around: a learner's entry and neighbours
    (a hidden one placed where they would stand), or None."""
    uid = pad_uid(user_id)
    p = board.load_profile(uid)
    if p is None or p.ts == "" or uid in erased:
        return None
    own, member, score = board.score_of(p, uid)
    if score is None:
        return None
    public = board.public
    better, index = public.below(score), public.place(score, member)
    first = max(index - radius, 0)
    last = index + radius - (0 if own is public else 1)
    items = public.range(first, last) if last >= first else []
    first_better = public.below(items[0][0]) if items else 0
    vis, name = parse_profile(p.text(), user_id)
    rank = better + 1 if board.policy == "shared" else index + 1
    me = Entry(rank, user_id, name, vis, -score)
    neighbors = entries(board, items, erased, first_better + 1, first)
    if vis == "hidden":
        pos = index - first
        neighbors.insert(pos, me)
        neighbors = beside(neighbors, pos, board.policy)
    else:
        pos = next(i for i, e in enumerate(neighbors) if e.user_id == user_id)
        neighbors[pos] = me
    return Around(me, pos, neighbors)


def stored_scores(board: SeasonBoard, user_ids: list[int], with_rank: bool
                  ) -> list[tuple[int | None, str, int | None]]:
    """scores.lua: each learner's stored score (None: none on this board),
    stored profile ('' for none) and, `with_rank`, rank on the public board."""
    out: list[tuple[int | None, str, int | None]] = []
    for user_id in user_ids:
        uid = pad_uid(user_id)
        p = board.load_profile(uid)
        score, rank = None, None
        if p is not None and p.ts != "":
            _, member, score = board.score_of(p, uid)
            if score is not None and with_rank:
                rank = board.board_rank(p, member, score)
        out.append((score, p.stored or "" if p is not None else "", rank))
    return out


def standings_of(board: SeasonBoard, user_ids: list[int], board_rank: bool) -> list[Scored]:
    """Reading.standings_of of one call's ids."""
    out = []
    for uid, (score, raw, rank) in zip(user_ids, stored_scores(board, user_ids, board_rank),
                                       strict=True):
        if score is None:
            continue
        profile = StoredProfile.parse(raw)
        out.append(Scored(uid, -score, profile.visibility, profile.name or default_name(uid),
                          profile.tie_time or 0, rank if board_rank else None))
    return out


def scores(board: SeasonBoard, user_ids: list[int]
           ) -> dict[int, tuple[int | None, str, str, int | None]]:
    """Reading.scores: (total or None, visibility, name, tie time or None)."""
    out: dict[int, tuple[int | None, str, str, int | None]] = {}
    for uid, (score, raw, _) in zip(user_ids, stored_scores(board, user_ids, False),
                                    strict=True):
        parsed = StoredProfile.parse(raw)
        out[uid] = (-score if score is not None else None, parsed.visibility, parsed.name,
                    parsed.tie_time)
    return out
