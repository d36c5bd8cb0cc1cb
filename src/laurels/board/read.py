"""Reading a season's board: the top, a learner's neighbourhood, some
learners' standings by id. One script call each, O(log N + M), never a scan
(but `scan_scored`, verify's walk of the whole board, a batch at a time)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from laurels.board.base import MEMBERS_PER_CALL, BoardBase
from laurels.board.lua_args import Learner, ReadAroundArgs, ReadTopArgs, ScoresArgs, flat
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
from laurels.core.seasons import Season


class Reading(BoardBase):
    def _entries(self, flat: list[Any], first_rank: int, first_index: int) -> list[Entry]:
        triples = [flat[i:i + 3] for i in range(0, len(flat), 3)]
        scores = [-int(float(t[1])) for t in triples]
        ranks = assign_ranks(scores, first_rank, first_index, self.policy)
        out = []
        for (member, _score, profile), rank, score in zip(triples, ranks, scores, strict=True):
            uid = member_uid(member)
            vis, name = parse_profile(profile, uid)
            out.append(Entry(rank, uid, name, vis, score))
        return out

    async def top(self, season: Season, limit: int, after: Position | None = None
                  ) -> Top:
        """`limit` public entries from the top, or after the position `after`
        (an entry's (stored score, tie time, user id), as `Top.next` gives).
        The season as the edge parsed it (a name, from tests and tools, is
        parsed here)."""
        erased = self.season_keys(season).erased
        where = ["", ""] if after is None else [str(after[0]), self._member(season, after)]
        reply = await self._read(
            "read_top", season, lambda vk: [vk.public, vk.users, erased],
            lambda current: list(ReadTopArgs(expected_current=current, limit=limit,
                                             after_score=where[0], after_member=where[1])))
        total, start, better = int(reply[1]), int(reply[2]), int(reply[3])
        last_member, last_score = str(reply[4]), reply[5]
        more = start + limit < total and last_member != ""
        return Top(total, self._entries(reply[6:], better + 1, start),
                   self._position(last_member, last_score) if more else None)

    def _member(self, season: Season, position: Position) -> str:
        _score, ts, uid = position
        return (pad_ts(ts, season.ts_width) if self.policy == "first" else "") + pad_uid(uid)

    def _position(self, member: str, score: Any) -> Position:
        ts = int(member[:-UID_WIDTH]) if self.policy == "first" else 0
        return int(float(score)), ts, member_uid(member)

    async def around(self, season: Season, user_id: int, radius: int) -> Around | None:
        """A learner's entry and neighbours, or None when they have no score this season."""
        erased = self.season_keys(season).erased
        reply = await self._read(
            "read_around", season, lambda vk: [vk.public, vk.hidden, vk.users, erased],
            lambda current: list(ReadAroundArgs(expected_current=current, uid=pad_uid(user_id),
                                                radius=radius, policy=self.policy)))
        if reply[0] == "NOT_RANKED":
            return None
        _, profile, score_text, index, better, start, start_better = reply[:7]
        index, better, start, start_better = int(index), int(better), int(start), int(start_better)
        vis, name = parse_profile(profile, user_id)
        score = -int(float(score_text))
        rank = better + 1 if self.policy == "shared" else index + 1
        me = Entry(rank, user_id, name, vis, score)
        neighbors = self._entries(reply[7:], start_better + 1, start)
        if vis == "hidden":  # placed where they would stand, the others ranked beside them
            pos = index - start
            neighbors.insert(pos, me)
            neighbors = beside(neighbors, pos, self.policy)
        else:
            pos = next(i for i, e in enumerate(neighbors) if e.user_id == user_id)
            neighbors[pos] = me
        return Around(me, pos, neighbors)

    async def standings_of(self, season: Season, user_ids: list[int],
                           board_rank: bool = False) -> list[Scored]:
        """The learners among `user_ids` who have a score on the season's
        current board, with their stored profile (and, with `board_rank`, their
        rank on the whole public board): one script call per MEMBERS_PER_CALL
        ids, none of which scans the board."""
        width = 3 if board_rank else 2
        out: list[Scored] = []
        for i in range(0, len(user_ids), MEMBERS_PER_CALL):
            chunk = user_ids[i:i + MEMBERS_PER_CALL]
            reply = await self._read(
                "scores", season, lambda vk: [vk.public, vk.hidden, vk.users],
                lambda current, chunk=chunk: flat(  # type: ignore[misc]
                    ScoresArgs(expected_current=current, policy=self.policy,
                               with_rank="rank" if board_rank else ""),
                    [Learner(pad_uid(u)) for u in chunk]))
            for k, uid in enumerate(chunk):
                score, raw = reply[1 + width * k], reply[2 + width * k]
                if score == "":
                    continue
                profile = StoredProfile.parse(raw)
                rank = int(reply[3 + width * k]) if board_rank else None
                out.append(Scored(uid, -int(float(score)), profile.visibility,
                                  profile.name or default_name(uid),
                                  profile.tie_time or 0, rank))
        return out

    async def scores(self, season: Season, user_ids: list[int]
                     ) -> dict[int, tuple[int | None, str, str, int | None]]:
        """Each learner's (total or None, visibility, name, tie time or None)
        on the current board; the tie time is the stored offset of their
        latest completion (the `first` policy orders ties by it)."""
        reply = await self._read(
            "scores", season, lambda vk: [vk.public, vk.hidden, vk.users],
            lambda current: flat(ScoresArgs(expected_current=current, policy=self.policy,
                                            with_rank=""),
                                 [Learner(pad_uid(u)) for u in user_ids]))
        out: dict[int, tuple[int | None, str, str, int | None]] = {}
        for i, uid in enumerate(user_ids):
            score, profile = reply[1 + 2 * i], reply[2 + 2 * i]
            parsed = StoredProfile.parse(profile)
            out[uid] = (-int(float(score)) if score != "" else None, parsed.visibility,
                        parsed.name, parsed.tie_time)
        return out

    async def scan_scored(self, season: Season, count: int = 2000) -> AsyncIterator[list[int]]:
        """Batches of the learners scored on the current board: both sorted
        sets, ZSCAN (bounded memory; the users hash holds no entry for a
        learner with the default profile under `shared`)."""
        current = await self.redis.get(self.season_keys(season).current)
        if not current:
            return
        vk = self.season_keys(season).version(str(current))
        for zset in (vk.public, vk.hidden):
            cursor = 0
            while True:
                reply: Any = await self.redis.zscan(zset, cursor, count=count)
                cursor, batch = reply
                if batch:
                    yield [member_uid(str(member)) for member, _score in batch]
                if cursor == 0:
                    break
