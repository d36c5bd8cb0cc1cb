"""What an erasure asks of the challenges (erasure.Forgets; docs/concurrency.md,
`challenge`): every undecided challenge's row, shared, after the learner's
row, so a join or decision in flight has committed (and is undone here) or
waits and then finds them erased; then their joins, results, place in a
watch and name in every `challenge.decided` event go. Decided results of the
others keep their ranks (CONTRACT.md: "erasure aside")."""

from __future__ import annotations

from laurels.db import Database, Tx


class ChallengeErasure:
    holds = "challenge"

    def __init__(self, db: Database) -> None:
        self.db = db

    async def hold(self, tx: Tx, user_id: int) -> None:
        await self.db.fetch("share_undecided_challenges", tx)

    async def forget(self, tx: Tx, user_id: int) -> list[str]:
        await self.db.run("forget_challenge_learner", tx, user_id=user_id)
        return []
