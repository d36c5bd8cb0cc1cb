"""A challenge's end: decided once, from PostgreSQL (CONTRACT.md,
"Challenges", The end); and, while one that notifies runs, its `top10` and
`overtaken` notifications.

The decision holds the challenge's row (`lock_challenge`, docs/concurrency.md
`challenge`) and finds it undecided, or does nothing: two processes racing
it, or one killed half-way and its successor, decide it exactly once (the
transaction that commits `decided_at` also commits every result, every
`challenge_result` notification and the `challenge.decided` event). It runs
at `ends_at` plus the challenge's grace, or as soon after as a process
with the projector runs (the `challenges` loop, runtime.background_loops).

The watch: a look at the top 100 of each running challenge that notifies,
after completions were recorded since the last look (a process's high-water
mark of `completions.seq`: idle challenges cost nothing), compared with the
last look (`challenge_watch`): who entered the top 10, and who was passed
by whom.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from laurels.board.roles import ChallengeAnnouncer
from laurels.challenges.rules import Challenge
from laurels.core import failpoints
from laurels.core.ranking import TiePolicy
from laurels.core.registry import Overtaken, Ranked
from laurels.core.seasons import season_of
from laurels.db import Database, Jsonb, Row, Tx

log = logging.getLogger("laurels.challenges")


class Decider:
    def __init__(self, db: Database, board: ChallengeAnnouncer, policy: TiePolicy,
                 clock: Callable[[], datetime], zone: str = "UTC") -> None:
        self.db = db
        self.zone = zone  # LAURELS_TIME_ZONE: the week a decided challenge's stream follows
        self.board = board
        self.policy = policy
        self.clock = clock
        self._seen_seq = -1  # the watch's high-water mark of completions.seq

    async def decide(self, challenge_id: str, now: datetime | None = None) -> bool:
        """Decide a challenge once if it is due at `now`; True if this call did."""
        now = now or self.clock()
        async with self.db.transaction() as tx:
            row = await self.db.fetch_one("lock_challenge", tx, challenge_id=challenge_id)
            if row is None:
                return False
            challenge = Challenge.from_row(row)
            if challenge.decided or now < challenge.decides_at:
                return False
            await failpoints.pause("challenge_deciding")
            done = await self.db.fetch_one("decide_challenge", tx, challenge_id=challenge_id,
                                           policy=self.policy, label=challenge.label)
            await failpoints.pause("challenge_decided")
        if done is not None:
            log.info("challenge %s decided: %d ranked of %d participants", challenge_id,
                     done["ranked"], done["participants"])
        await self.board.announce_challenge_result(challenge.label)
        # Its stream (api/streams.py) follows the whole board's week of its
        # end by then: a hint there tells its readers to fetch the result.
        await self.board.publish_hint(
            {"season": season_of(challenge.ends_at, "week", zone=self.zone).name})
        return True

    async def decide_due(self, now: datetime | None = None) -> list[str]:
        """Decide every challenge due at `now`, oldest end first."""
        now = now or self.clock()
        return [r["challenge_id"] for r in await self.db.fetch("challenges_due", now=now)
                if await self.decide(r["challenge_id"], now)]

    async def tick(self) -> None:
        """The challenges' background work: decide what is due, then look at
        the running ones that notify if completions came since."""
        await self.decide_due()
        await self.watch()

    async def watch(self, now: datetime | None = None) -> int:
        """Look at every running challenge that notifies, once completions
        were recorded since the last look; how many were looked at."""
        high = await self.db.fetch_one("completions_high_water")
        seq = int(high["seq"]) if high else 0
        if seq == self._seen_seq:
            return 0
        looked, skipped = 0, False
        for row in await self.db.fetch("watched_challenges", now=now or self.clock()):
            done = await self.look(row["challenge_id"], row["board"], row["metric"])
            looked += done
            skipped |= not done
        if not skipped:  # a challenge held by another writer is looked at next tick
            self._seen_seq = seq
        return looked

    async def look(self, challenge_id: str, board: str, metric: str = "points") -> int:
        """One look at a challenge's top 100 (0: not now, another writer holds
        the challenge), its notifications written in the look's transaction."""
        created: list[tuple[int, int]] = []
        async with self.db.transaction() as tx:
            if await self.db.fetch_one("lock_challenge_watch", tx,
                                       challenge_id=challenge_id) is None:
                return 0
            rows = await self.db.fetch("challenge_watch_look", tx, challenge_id=challenge_id,
                                       policy=self.policy)
            await failpoints.pause("challenge_looked")
            extra: dict[str, Any] = {"challenge_id": challenge_id}
            if board != "global":  # (its metric: how the page words a board of a kind's)
                extra["board"], extra["metric"] = board, metric
            label = f"challenge:{challenge_id}"
            created += await self._top10(tx, rows, label, extra)
            if rows and int(rows[0]["looked"]) > 0:
                created += await self._overtaken(tx, rows, label, extra)
        for uid, nid in created:
            await self.board.publish_notification(uid, nid)
        return 1

    async def _top10(self, tx: Tx, rows: list[Row], label: str, extra: dict[str, Any]
                     ) -> list[tuple[int, int]]:
        out = []
        for r in rows:
            rank, was = r["rank"], r["was_rank"]
            if rank is None or rank > 10 or (was is not None and was <= 10):
                continue
            data: Ranked = {"rank": int(rank), "score": int(r["score"]), **extra}  # type: ignore[typeddict-item]
            row = await self.db.fetch_one(
                "insert_notification", tx, user_id=int(r["user_id"]), kind="top10",
                season=label, data=Jsonb(data), dedup_key=f"top10:{label}")
            if row:
                out.append((int(r["user_id"]), int(row["id"])))
        return out

    async def _overtaken(self, tx: Tx, rows: list[Row], label: str, extra: dict[str, Any]
                         ) -> list[tuple[int, int]]:
        """Each learner of both looks passed since by one who was behind them
        then (or not in the top 100) and is ahead now: told who (the best
        placed of them), at most one unread per learner and challenge."""
        out = []
        for a in rows:
            was, now_a = a["was_rank"], a["rank"]
            if was is None or now_a is None:  # told only while in the top 100, shown
                continue
            movers = [b for b in rows if b["rank"] is not None and b["rank"] < now_a
                      and (b["was_rank"] is None or b["was_rank"] > was)]
            if not movers:
                continue
            by = min(movers, key=lambda b: (b["rank"], b["user_id"]))
            data: Overtaken = {"season": label, "by_user_id": int(by["user_id"]), **extra}  # type: ignore[typeddict-item]
            uid = int(a["user_id"])
            key = f"overtaken:{label}:{by['user_id']}:{by['rank']}"
            row = await self.db.fetch_one("refresh_overtaken", tx, user_id=uid, season=label,
                                          data=Jsonb(data), dedup_key=key)
            if row is None:
                row = await self.db.fetch_one("insert_notification", tx, user_id=uid,
                                              kind="overtaken", season=label,
                                              data=Jsonb(data), dedup_key=key)
            if row:
                out.append((uid, int(row["id"])))
        return out
