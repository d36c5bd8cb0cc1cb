"""A challenge checked (`laurels verify --all`; docs/challenges.md): its
board has no copy in Redis to compare, so it is checked against its rules
by a second reading.

- Running (or ended, not decided): the standings the boards read
  (`laurels_challenge_standings_v1`) against the completions that count,
  read plainly and added up here by the metric and ranked by the tie
  policy: every learner's score, and every shown learner's rank.
- Decided: the frozen results are a ranking (ranks follow the scores under
  the tie policy), each reward is the one of its rank, and no erased learner
  is among them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from laurels.challenges.rules import Challenge
from laurels.core.ranking import TiePolicy
from laurels.db import Database, Row


@dataclass
class Difference:
    user_id: int
    difference: str


@dataclass
class ChallengeCheck:
    challenge_id: str
    players_checked: int = 0
    mismatches: list[Difference] = field(default_factory=list)

    @property
    def consistent(self) -> bool:
        return not self.mismatches

    @property
    def mismatch_count(self) -> int:
        return len(self.mismatches)


def expected(rows: list[Row], metric: str, policy: TiePolicy
             ) -> dict[int, tuple[int, int | None]]:
    """(score, rank or None when not shown) of every learner, from the
    counted completions."""
    by: dict[int, list[tuple[int, datetime]]] = defaultdict(list)
    shown: dict[int, bool] = {}
    for r in rows:
        by[int(r["user_id"])].append((int(r["points"]), r["completed_at"]))
        shown[int(r["user_id"])] = bool(r["shown"])
    scored: dict[int, tuple[int, datetime]] = {}
    for uid, done in by.items():
        if metric == "best":
            best = max(p for p, _ in done)
            scored[uid] = (best, min(at for p, at in done if p == best))
        else:
            scored[uid] = (len(done) if metric == "completions" else sum(p for p, _ in done),
                           max(at for _, at in done))
    order = sorted((uid for uid in scored if shown[uid]), key=lambda u: (
        -scored[u][0], scored[u][1] if policy == "first" else 0, u))
    ranks: dict[int, int] = {}
    for i, uid in enumerate(order):
        ranks[uid] = i + 1 if policy == "first" else 1 + sum(
            1 for o in order if scored[o][0] > scored[uid][0])
    return {uid: (s, ranks.get(uid)) for uid, (s, _) in scored.items()}


class Checker:
    def __init__(self, db: Database, policy: TiePolicy) -> None:
        self.db = db
        self.policy = policy

    async def every(self) -> list[str]:
        return [r["challenge_id"] for r in await self.db.fetch("challenge_ids")]

    async def verify(self, challenge_id: str) -> ChallengeCheck:
        check = ChallengeCheck(challenge_id)
        row = await self.db.fetch_one("challenge_row", challenge_id=challenge_id)
        if row is None:
            return check
        challenge = Challenge.from_row(row)
        if challenge.decided:
            self._decided(check, challenge, await self.db.fetch(
                "challenge_results_checked", challenge_id=challenge_id))
            return check
        async with self.db.transaction() as tx:  # one snapshot for both readings
            counted = await self.db.fetch("challenge_counted", tx, challenge_id=challenge_id,
                                          board=challenge.board)
            read = await self.db.fetch("challenge_standings_now", tx,
                                       challenge_id=challenge_id, policy=self.policy)
        want = expected(counted, challenge.metric, self.policy)
        got = {int(r["user_id"]): (int(r["score"]), r["rank"]) for r in read}
        check.players_checked = len(want.keys() | got.keys())
        for uid in sorted(want.keys() | got.keys()):
            if want.get(uid) != got.get(uid):
                check.mismatches.append(Difference(uid, f"(score, rank): board {got.get(uid)}, "
                                                        f"completions {want.get(uid)}"))
        return check

    def _decided(self, check: ChallengeCheck, challenge: Challenge, rows: list[Row]) -> None:
        """Rows in rank order: scores never rise down the ranks; under
        `shared` equal scores share their rank, under `first` no two rows
        share one."""
        check.players_checked = len(rows)
        before: Row | None = None
        for r in rows:
            uid, rank, score = int(r["user_id"]), int(r["rank"]), int(r["score"])
            if r["erased"]:
                check.mismatches.append(Difference(uid, "an erased learner in the results"))
            if r["reward"] != challenge.reward_of(rank):
                check.mismatches.append(Difference(uid, f"reward {r['reward']!r} at rank {rank}"))
            if before is not None:
                b_rank, b_score = int(before["rank"]), int(before["score"])
                if b_score < score:
                    check.mismatches.append(Difference(uid, f"rank {rank} below a lower score"))
                elif self.policy == "shared" and (b_score == score) != (b_rank == rank):
                    check.mismatches.append(Difference(uid, f"rank {rank}: ties share a rank"))
                elif self.policy == "first" and b_rank == rank:
                    check.mismatches.append(Difference(uid, f"rank {rank} given twice"))
            before = r
