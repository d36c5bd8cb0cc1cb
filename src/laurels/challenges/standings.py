"""A challenge's board, a learner's neighbourhood on it, and a learner's
challenges, as they are read (CONTRACT.md, "Challenges").

Until it is decided, a challenge's board is read from PostgreSQL, the
source of truth, by one statement (`laurels_challenge_standings_v1`,
migration 039: what counts, by the metric, ranked by the tie policy among
the learners a public board shows); it has no projection of its own to
drift, heal or rebuild, so a Redis restart, a lost key or a rebuild of the
season boards leaves it exact (docs/challenges.md says why and what it
costs). A read takes the whole board in order and pages through it here; a
board that took more than `SLOW_SECONDS` to read is kept `KEEP_SECONDS` (or
as long as it took to read) for the reads that follow, and one reading at a
time runs per challenge and process: a challenge of 200,000 learners costs
at most one statement at a time, not one a read.

Once decided it is read from its frozen results (`challenge_results`), each
entry with its reward. Who may be shown is checked again at every read (the
statement, and at the boundary the process's own copy of who is private,
reads/privacy.py, as every board's read does), so a learner who turns
hidden, is suspended or erased leaves the board at once (the others keep
their decided ranks).
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any

from laurels.board import default_name
from laurels.challenges.definitions import Challenges
from laurels.challenges.rules import Challenge, check_status, utc
from laurels.core import challenge_shapes as cs
from laurels.core.errors import DomainError
from laurels.core.ranking import Position, TiePolicy
from laurels.db import Database, Row
from laurels.reads.boards import HIDDEN
from laurels.reads.privacy import Privacy

SLOW_SECONDS = 0.05  # a live board slower to read than this is kept...
KEEP_SECONDS = 1.0  # ...this long for the reads that follow (or as long as it took)
KEPT_MAX = 16  # live boards kept at most (the oldest goes)
BATCH = 20_000
Key = tuple[int, int, int]  # (-score, tie time in us under `first` else 0, user id)


@dataclass
class Live:
    """A live board as read at `made`: its shown learners in board order
    (`keys`), and every learner's row (user_id, score, last_us, visibility,
    display_name, shown, rank), the hidden ones' too."""

    made: float
    took: float
    definition: tuple[Any, ...]
    keys: list[Key] = field(default_factory=list)
    rows: dict[int, tuple[Any, ...]] = field(default_factory=dict)


class Standings:
    def __init__(self, db: Database, challenges: Challenges, policy: TiePolicy,
                 privacy: Privacy) -> None:
        self.db = db
        self.challenges = challenges
        self.policy = policy
        self.privacy = privacy
        self._kept: dict[str, Live] = {}
        self._reading: dict[str, asyncio.Future[Live]] = {}

    def cursor_board(self, challenge: Challenge) -> str:
        """What a page's cursor is sealed to: the challenge, live or decided."""
        return f"challenge:{challenge.challenge_id}:{'decided' if challenge.decided else 'live'}"

    # -- the live board -------------------------------------------------------------------

    def _key(self, score: int, last_us: int, uid: int) -> Key:
        return (-score, last_us if self.policy == "first" else 0, uid)

    async def live(self, challenge: Challenge) -> Live:
        """The live board: kept if it is large and fresh, else read (once,
        for every read waiting for it)."""
        cid = challenge.challenge_id
        definition = (challenge.starts_at, challenge.ends_at, challenge.board, challenge.metric,
                      challenge.join)
        kept = self._kept.get(cid)
        if (kept is not None and kept.definition == definition and kept.took >= SLOW_SECONDS
                and time.monotonic() - kept.made < max(KEEP_SECONDS, kept.took)):
            return kept
        reading = self._reading.get(cid)
        if reading is None:
            reading = self._reading[cid] = asyncio.ensure_future(self._read(cid, definition))
            reading.add_done_callback(lambda _: self._reading.pop(cid, None))
        return await asyncio.shield(reading)

    async def _read(self, cid: str, definition: tuple[Any, ...]) -> Live:
        started = time.monotonic()
        live = Live(started, 0.0, definition)
        async with self.db.transaction() as tx:
            async for rows in self.db.stream_tuples("challenge_live_all", tx, BATCH,
                                                    challenge_id=cid, policy=self.policy):
                for uid, score, last_us, vis, name, shown, rank in rows:
                    live.rows[uid] = (uid, score, last_us, vis, name, shown, rank)
                    if shown:
                        live.keys.append(self._key(score, last_us, uid))
        live.made = time.monotonic()
        live.took = live.made - started
        if live.took >= SLOW_SECONDS:
            self._kept[cid] = live
            while len(self._kept) > KEPT_MAX:
                self._kept.pop(next(iter(self._kept)))
        else:
            self._kept.pop(cid, None)
        return live

    def _entry(self, row: tuple[Any, ...], rank: int | None = None
               ) -> cs.ChallengeEntry | None:
        """A live row as the public sees it, through the boundary's privacy
        check (None: not to be shown)."""
        uid, score, _, vis, name, _, stored_rank = row
        vis = self.privacy.visibility(uid, vis)
        if vis in HIDDEN:
            return None
        anonymous = vis == "anonymous"
        return {"rank": int(rank if rank is not None else stored_rank),
                "user_id": None if anonymous else uid,
                "display_name": "Anonymous" if anonymous else (name or default_name(uid)),
                "score": int(score), "reward": None}

    # -- reads ---------------------------------------------------------------------------

    async def board(self, challenge_id: str, limit: int, after: Position | None
                    ) -> tuple[cs.ChallengeBoard, Position | None]:
        """A page of the board after a position (the route seals the next
        one into its cursor): frozen once decided, live before, empty before
        the start."""
        challenge = await self.challenges.find(challenge_id)
        now = self.challenges.clock()
        body: cs.ChallengeBoard = {
            "challenge_id": challenge_id, "title": challenge.title, "board": challenge.board,
            "metric": challenge.metric, "starts_at": utc(challenge.starts_at),
            "ends_at": utc(challenge.ends_at), "status": challenge.status(now),
            "decided": challenge.decided, "tie_policy": self.policy, "total": 0,
            "entries": [], "next": None}
        if challenge.decided:
            return await self._decided_page(challenge_id, body, limit, after)
        if now < challenge.starts_at:
            return body, None
        live = await self.live(challenge)
        start = bisect_right(live.keys, (-after[0], after[1], after[2])) if after else 0
        page = live.keys[start:start + limit]
        for key in page:
            entry = self._entry(live.rows[key[2]])
            if entry is not None:
                body["entries"].append(entry)
        body["total"] = len(live.keys)
        if start + limit >= len(live.keys) or not page:
            return body, None
        last = page[-1]
        return body, (-last[0], last[1], last[2])

    async def _decided_page(self, challenge_id: str, body: cs.ChallengeBoard, limit: int,
                            after: Position | None
                            ) -> tuple[cs.ChallengeBoard, Position | None]:
        rows = await self.db.fetch(
            "challenge_result_page", challenge_id=challenge_id, limit=limit + 1,
            after_rank=after[0] if after else None, after_user=after[2] if after else None)
        total = await self.db.fetch_one("challenge_result_total", challenge_id=challenge_id)
        body["total"] = int(total["total"]) if total else 0
        shown = rows[:limit]
        body["entries"] = [e for r in shown if (e := self._decided_entry(r)) is not None]
        if len(rows) <= limit:
            return body, None
        return body, (int(shown[-1]["rank"]), 0, int(shown[-1]["user_id"]))

    def _decided_entry(self, r: Row) -> cs.ChallengeEntry | None:
        uid = int(r["user_id"])
        vis = self.privacy.visibility(uid, r["visibility"] or "public")
        if vis in HIDDEN:
            return None
        anonymous = vis == "anonymous"
        return {"rank": int(r["rank"]), "user_id": None if anonymous else uid,
                "display_name": "Anonymous" if anonymous else
                (r["display_name"] or default_name(uid)),
                "score": int(r["score"]), "reward": r["reward"]}

    async def around(self, challenge_id: str, user_id: int, radius: int) -> cs.ChallengeAround:
        """A learner's neighbourhood: `radius` shown learners each side of
        them; a hidden learner stands where they would (`not_ranked` without a
        counted completion, or without a result once decided)."""
        challenge = await self.challenges.find(challenge_id)
        if challenge.decided:
            mine, neighbors, visibility = await self._decided_around(challenge_id, user_id,
                                                                      radius)
        elif self.challenges.clock() >= challenge.starts_at:
            mine, neighbors, visibility = await self._live_around(challenge, user_id, radius)
        else:
            raise DomainError("not_ranked", f"learner {user_id} has no standing on "
                                            f"{challenge_id}")
        return {"challenge_id": challenge_id, "board": challenge.board,
                "metric": challenge.metric, "decided": challenge.decided,
                "user": {"rank": mine["rank"], "user_id": user_id,
                         "display_name": mine["display_name"], "score": mine["score"],
                         "visibility": visibility, "reward": mine["reward"]},
                "neighbors": neighbors}

    async def _live_around(self, challenge: Challenge, user_id: int, radius: int
                           ) -> tuple[cs.ChallengeNeighbor, list[cs.ChallengeNeighbor], Any]:
        live = await self.live(challenge)
        row = live.rows.get(user_id)
        if row is None:
            raise DomainError("not_ranked", f"learner {user_id} has no standing on "
                                            f"{challenge.challenge_id}")
        _, score, last_us, vis, name, shown, rank = row
        key = self._key(score, last_us, user_id)
        at = bisect_left(live.keys, key)  # their place (a hidden one's: where they would be)
        if not shown:
            rank = at + 1 if self.policy == "first" else 1 + bisect_left(
                live.keys, (-score, -1, -1))
        mine: cs.ChallengeNeighbor = {"rank": int(rank), "user_id": user_id,
                                      "display_name": name or default_name(user_id),
                                      "score": int(score), "reward": None, "self": True}
        before = live.keys[max(0, at - radius):at]
        after = live.keys[at + (1 if shown else 0):at + (1 if shown else 0) + radius]
        out: list[cs.ChallengeNeighbor] = []
        for k in before:
            if (e := self._entry(live.rows[k[2]])) is not None:
                out.append({**e, "self": False})
        out.append(mine)
        for k in after:
            if (e := self._entry(live.rows[k[2]])) is not None:
                out.append({**e, "self": False})
        return mine, out, vis

    async def _decided_around(self, challenge_id: str, user_id: int, radius: int
                              ) -> tuple[cs.ChallengeNeighbor, list[cs.ChallengeNeighbor], Any]:
        me = await self.db.fetch_one("challenge_result_of", challenge_id=challenge_id,
                                     user_id=user_id)
        if me is None:
            raise DomainError("not_ranked", f"learner {user_id} has no result on {challenge_id}")
        at = int(me["at"])
        places = await self.db.fetch("challenge_result_places", challenge_id=challenge_id,
                                     first=max(1, at - radius),
                                     last=at + radius - (0 if me["shown"] else 1))
        mine: cs.ChallengeNeighbor = {
            "rank": int(me["rank"]), "user_id": user_id,
            "display_name": me["display_name"] or default_name(user_id),
            "score": int(me["score"]), "reward": me["reward"], "self": True}
        out: list[cs.ChallengeNeighbor] = []
        for r in places:
            if int(r["user_id"]) == user_id:
                continue
            if int(r["pos"]) >= at and mine not in out:
                out.append(mine)
            if (e := self._decided_entry(r)) is not None:
                out.append({**e, "self": False})
        if mine not in out:
            out.append(mine)
        return mine, out, me["visibility"]

    async def of_learner(self, user_id: int, status: str | None) -> cs.LearnerChallenges:
        """The challenges a learner joined or took part in, newest end first,
        with their rank and score (and reward, once decided)."""
        check_status(status)
        now = self.challenges.clock()
        rows = await self.db.fetch("learner_challenges", user_id=user_id, status=status,
                                   now=now)
        out: list[cs.LearnerChallenge] = []
        for r in rows:
            c = Challenge.from_row(r)
            rank, score = r["rank"], r["score"]
            if c.decided:
                participants = int(r["participants"])
            else:
                live = await self.live(c) if now >= c.starts_at else None
                mine = live.rows.get(user_id) if live else None
                if mine is not None:
                    score, rank = mine[1], mine[6]
                participants = (int(r["joined"]) if c.join == "required" else
                                len(live.rows) if live else 0)
            out.append({**c.shape(now, participants),
                        "joined_at": utc(r["joined_at"]) if r["joined_at"] else None,
                        "rank": rank, "score": score,
                        "reward": r["reward"] if c.decided else None})
        return {"user_id": user_id, "challenges": out}
