"""Challenges: defined, listed, joined and deleted (CONTRACT.md, "Challenges:
boards with a start and an end"; docs/challenges.md).

A challenge is a row of `challenges` (migration 039); its joins are rows of
`challenge_joins`, numbered in the order they commit. Lock order
(docs/concurrency.md, `challenge`): every writer of a challenge (a
definition, a join, the decision, a deletion) holds its row FOR UPDATE
(`lock_challenge`); an erasure, after the learner's row, holds every
undecided challenge's row FOR SHARE (challenges/erasure.py). A join reads
whether the learner is erased only under the challenge's row, so a join
either commits before an erasure (which then deletes it) or finds them
erased.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from laurels.challenges.rules import Challenge, check_change, check_id, parse_definition, utc
from laurels.core import challenge_shapes as cs
from laurels.core import failpoints
from laurels.core.errors import DomainError
from laurels.db import Database, Jsonb, Row, Tx

log = logging.getLogger("laurels.challenges")


class Challenges:
    def __init__(self, db: Database, grace_max: int, clock: Callable[[], datetime]) -> None:
        self.db = db
        self.grace_max = grace_max  # LAURELS_LATE_GRACE_SECONDS: a challenge's grace at most
        self.clock = clock

    async def _locked(self, tx: Tx, challenge_id: str) -> tuple[Challenge, Row] | None:
        row = await self.db.fetch_one("lock_challenge", tx, challenge_id=challenge_id)
        return (Challenge.from_row(row), row) if row else None

    async def define(self, challenge_id: str, body: dict[str, Any]
                     ) -> tuple[cs.Challenge, bool]:
        """Define a challenge (True: created) or change one (CONTRACT.md:
        `challenge_conflict` for what may no longer change)."""
        check_id(challenge_id)
        new = parse_definition(challenge_id, body, self.grace_max)
        async with self.db.transaction() as tx:
            found = await self._locked(tx, challenge_id)
            now = self.clock()  # under the row (a decision waiting before us has run)
            if found is None:
                if new.ends_at <= now:
                    raise DomainError("validation_error", "ends_at must be in the future")
                # Two creations at once: the second waits for the first's
                # row, then finds it (challenge_conflict, or a change).
                await self.db.fetch("lock_challenge_creation", tx, challenge_id=challenge_id)
                found = await self._locked(tx, challenge_id)
            if found is None:
                await self.db.run("insert_challenge", tx, **self._params(new))
                await self._audit(tx, new)
                created = True
            else:
                was, row = found
                check_change(was, new, now, int(row["joined"]))
                if new.row() != was.row():
                    await self.db.run("update_challenge", tx, **self._params(new))
                    await self._audit(tx, new)
                created = False
            await failpoints.pause("challenge_defined")
        log.info("challenge %s %s", challenge_id, "defined" if created else "changed")
        return await self.get(challenge_id), created

    @staticmethod
    def _params(c: Challenge) -> dict[str, Any]:
        params = c.row()
        params["rewards"] = Jsonb(params["rewards"])
        return params

    async def _audit(self, tx: Tx, c: Challenge) -> None:
        details = {k: (utc(v) if isinstance(v, datetime) else v) for k, v in c.row().items()
                   if k != "challenge_id"}
        await self.db.run("insert_audit", tx, action="challenge_define", target=c.challenge_id,
                          reason=None, details=Jsonb(details))

    async def delete(self, challenge_id: str) -> None:
        """Delete a challenge: its joins, results and watch go with it."""
        check_id(challenge_id)
        async with self.db.transaction() as tx:
            if await self._locked(tx, challenge_id) is None:
                raise DomainError("not_found", f"no challenge {challenge_id}")
            await self.db.run("delete_challenge", tx, challenge_id=challenge_id)
            await self.db.run("insert_audit", tx, action="challenge_delete",
                              target=challenge_id, reason=None, details=None)
        log.info("challenge %s deleted", challenge_id)

    async def find(self, challenge_id: str) -> Challenge:
        """A challenge (404 if there is none)."""
        check_id(challenge_id)
        row = await self.db.fetch_one("challenge_row", challenge_id=challenge_id)
        if row is None:
            raise DomainError("not_found", f"no challenge {challenge_id}")
        return Challenge.from_row(row)

    async def get(self, challenge_id: str) -> cs.Challenge:
        check_id(challenge_id)
        rows = await self._rows(None, challenge_id=challenge_id, after="", limit=1)
        if not rows:
            raise DomainError("not_found", f"no challenge {challenge_id}")
        return Challenge.from_row(rows[0]).shape(self.clock(), int(rows[0]["participants"]))

    async def page(self, status: str | None, limit: int, after: str | None
                   ) -> cs.Challenges:
        """The challenges (of a status at the clock), by id, `limit` after
        the id `after` (the `next` of the page before)."""
        rows = await self._rows(status, challenge_id=None, after=after or "", limit=limit + 1)
        now = self.clock()
        shown = rows[:limit]
        return {"challenges": [Challenge.from_row(r).shape(now, int(r["participants"]))
                               for r in shown],
                "next": shown[-1]["challenge_id"] if len(rows) > limit else None}

    async def _rows(self, status: str | None, *, challenge_id: str | None, after: str,
                    limit: int) -> list[Row]:
        return await self.db.fetch("challenge_rows", status=status, challenge_id=challenge_id,
                                   after=after, limit=limit, now=self.clock())

    async def join(self, challenge_id: str, user_id: int) -> cs.Joined:
        """A learner joins (CONTRACT.md): the first join's `joined_at` again
        for a second; `challenge_full` once `max_size` have joined;
        `challenge_ended` after the end; an open challenge needs none
        (`joined_at` null); an erased learner is `not_found`."""
        check_id(challenge_id)
        async with self.db.transaction() as tx:
            found = await self._locked(tx, challenge_id)
            if found is None:
                raise DomainError("not_found", f"no challenge {challenge_id}")
            challenge, row = found
            now = self.clock()  # under the row: joins are numbered in time order
            erased = await self.db.fetch_one("learner_erased", tx, user_id=user_id)
            if erased and erased["erased"]:
                raise DomainError("not_found", f"no learner {user_id}")
            mine = await self.db.fetch_one("challenge_join_of", tx, challenge_id=challenge_id,
                                           user_id=user_id)
            if mine is not None:
                return {"challenge_id": challenge_id, "user_id": user_id,
                        "joined_at": utc(mine["joined_at"])}
            if now >= challenge.ends_at:
                raise DomainError("challenge_ended", f"challenge {challenge_id} has ended")
            if challenge.join == "open":
                return {"challenge_id": challenge_id, "user_id": user_id, "joined_at": None}
            if challenge.max_size is not None and int(row["joined"]) >= challenge.max_size:
                raise DomainError("challenge_full",
                                  f"challenge {challenge_id} is full ({challenge.max_size})")
            await failpoints.pause("challenge_joining")
            joined = await self.db.fetch_one("insert_challenge_join", tx,
                                             challenge_id=challenge_id, user_id=user_id,
                                             joined_at=now)
        return {"challenge_id": challenge_id, "user_id": user_id,
                "joined_at": utc(joined["joined_at"]) if joined else None}
