"""What an erasure asks of the leagues (erasure.Forgets; docs/concurrency.md,
`league`): the lock of every week the learner joined, taken before their
seasons, so that a placement, zone pass or decision of theirs has committed
(and is undone here) or waits and then finds them gone; then their league
rows, the others of their cohorts moving up."""

from __future__ import annotations

from laurels.db import Database, Tx
from laurels.leagues.rules import Cohort


class LeagueErasure:
    holds = "league"

    def __init__(self, db: Database) -> None:
        self.db = db

    async def hold(self, tx: Tx, user_id: int) -> None:
        for week in await self.db.fetch("learner_league_weeks", tx, user_id=user_id):
            await self.db.fetch("lock_league_weeks_of", tx, season=week["season"])

    async def forget(self, tx: Tx, user_id: int) -> list[str]:
        """Their cohorts touched (the zone pass reads them again), their league
        rows deleted: the streams of those cohorts."""
        await self.db.run("touch_learner_cohorts", tx, user_id=user_id, season=None, seq=None)
        rows = await self.db.fetch("delete_league_history", tx, user_id=user_id)
        return [Cohort(r["season"], r["tier"], r["cohort"]).stream_id for r in rows]
