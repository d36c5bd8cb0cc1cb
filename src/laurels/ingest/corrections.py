"""Corrections an operator can trust: void and restore, with an audit trail.

A void (or a restore) is a durable fact in PostgreSQL: the completion's
`voided_at` and its `correction` number, changed in one transaction with the
audit entry and a fresh outbox row. It is projected like a completion, by
the same outbox and projector (and at once by this call's fast path), onto
every board the completion counts on (each configured period; group and
friends boards follow from those), converging by correction number
(apply.lua): applying it twice, or an older state after a newer, changes
nothing. Boards are never rebuilt to apply it.

In a finalized season the archive is corrected in the same transaction (the
learner's standing recomputed from what counts, ranks closed up); the
learner's final rank before and after is kept in the audit entry. Old
`season_final` notifications stay as they were.

Lock order (docs/concurrency.md): the board kinds' lock (shared: the kinds
whose boards the completion counts on are read under it), the learner's
row (FOR SHARE), the
completion's seasons of every period (FOR SHARE: a finalize waits), the
completion's row (FOR UPDATE), the archives' locks (re-rank), the outbox row.

A learner's completions are corrected together (`correct_learner`: every
one of a season, or every one kept), atomically, in the same order: the
learner, every season of every completion, the completions in seq order,
the archives, their outbox rows; one audit entry with the count. Each is
what its own void would be (boards, archives, league touches, webhooks).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from laurels.board import Delta, Profile
from laurels.core import failpoints, shapes
from laurels.core.errors import DomainError, StoreUnavailable
from laurels.core.registry import CompletionCorrected
from laurels.core.seasons import END_OF_TIME, GLOBAL, Period, Season, season_named
from laurels.core.spans import seasons_of
from laurels.db import Database, Jsonb, Tx
from laurels.lifecycle.closing import Lifecycle
from laurels.lifecycle.kind_rules import board_seasons
from laurels.projection.heal import REQUEST_HEAL_WAIT_SECONDS
from laurels.projection.projector import Projector
from laurels.reads.boards import iso

log = logging.getLogger("laurels.corrections")

BULK_RETRIES = 3  # a completion recorded between the search and the locks: read again
EPOCH_AT = datetime.min.replace(tzinfo=UTC)  # a bulk correction of every kept completion


class Corrections:
    def __init__(self, db: Database, projector: Projector, lifecycle: Lifecycle,
                 periods: tuple[Period, ...]) -> None:
        self.db = db
        self.projector = projector
        self.lifecycle = lifecycle
        self.periods = periods

    async def void(self, completion_id: str, reason: str) -> shapes.Correction:
        return (await self.correct(completion_id, voided=True, reason=reason))[0]

    async def restore(self, completion_id: str, reason: str | None = None
                      ) -> shapes.Correction:
        return (await self.correct(completion_id, voided=False, reason=reason))[0]

    async def correct_learner(self, user_id: int, voided: bool, reason: str | None,
                              season: Season | None, board: str = GLOBAL
                              ) -> shapes.LearnerCorrection:
        """Void (or restore) every completion of a learner that counts (or
        does not) in `season` (its range, whatever its period; on a board of
        a kind, that board's season in its zone, and its completions only:
        those tagged `board`), or every one kept (of `board`): all in one
        transaction, each as its own void would be, one audit entry with the
        count."""
        for _ in range(BULK_RETRIES):
            done = await self._correct_learner(user_id, voided, reason, season, board)
            if done is not None:
                return done
        raise StoreUnavailable("postgresql", RuntimeError(
            f"learner {user_id}'s completions kept changing during a bulk correction"))

    async def _correct_learner(self, user_id: int, voided: bool, reason: str | None,
                               season: Season | None, board: str
                               ) -> shapes.LearnerCorrection | None:
        span: dict[str, Any] = {"user_id": user_id, "counted": voided,
                                "starts_at": season.starts_at if season else EPOCH_AT,
                                "ends_at": season.ends_at if season else END_OF_TIME,
                                "tag": None if board == GLOBAL else board}
        found = await self.db.fetch("learner_completions", **span)
        async with self.db.transaction() as tx:
            # The kinds' lock shared first, the kinds read under it: a kind
            # defined meanwhile waits, and builds its boards from a snapshot
            # that holds this correction (docs/concurrency.md, `kinds`).
            await self.db.fetch("share_board_kinds", tx)
            seasons = await self._seasons_of(found, tx)
            users = await self.db.fetch("share_lock_users", tx, user_ids=[user_id])
            if any(u["erased"] for u in users):
                raise DomainError("user_erased", f"learner {user_id} was erased")
            locked = await self.db.fetch("lock_seasons", tx, seasons=sorted(seasons))
            rows = await self.db.fetch("lock_learner_completions", tx, **span)
            if not seasons >= await self._seasons_of(rows, tx):
                return None  # one recorded meanwhile, in a season not locked: again
            await failpoints.pause("correction_locked")
            numbers: dict[int, int] = {}
            if rows:
                numbers = await self._correct_rows(tx, rows, [
                    season_named(r["season"], self.db.zone) for r in locked if r["finalized"]],
                    voided)
                await self.db.run("insert_audit", tx, action="void" if voided else "restore",
                                  target=str(user_id) if board == GLOBAL
                                  else f"{user_id} on {board}", reason=reason, details=Jsonb({
                                      "count": len(rows),
                                      "season": season.label if season else None,
                                      "board": board,
                                      "seqs": [r["seq"] for r in rows]}))
            user = await self.db.fetch_one("get_user", tx, user_id=user_id)
        await failpoints.pause("correction_committed")
        if rows and user is not None:
            profile = Profile(user["profile_version"], user["visibility"],
                              user["display_name"] or "")
            deltas = [Delta(r["seq"], r["user_id"], r["points"], r["completed_at"],
                            season_named(r["season"], self.db.zone), profile,
                            numbers[r["seq"]], not voided, tags=tuple(r["tags"] or ()))
                      for r in rows]
            await self._apply_now(deltas, f"correction of learner {user_id}")
        if voided:
            return {"user_id": user_id, "voided": len(rows)}
        return {"user_id": user_id, "restored": len(rows)}

    async def _seasons_of(self, rows: list[Any], tx: Tx) -> set[Season]:
        """Every season (every period, every board of a kind) of completions,
        the kinds read in `tx` (under their lock, shared)."""
        kinds = (await self.projector.kinds.live(tx)
                 if self.projector.kinds is not None and any(r["tags"] for r in rows) else {})
        out: set[Season] = set()
        for r in rows:
            out.update(seasons_of(r["completed_at"], self.periods, zone=self.db.zone))
            if r["tags"] and kinds:
                out.update(board_seasons(r["completed_at"], r["tags"], kinds))
        return out

    async def _correct_rows(self, tx: Tx, rows: list[Any], finalized: list[Season],
                            voided: bool) -> dict[int, int]:
        """The writes of a bulk correction, each a statement for all rows;
        each completion's new correction number, by seq."""
        user_id = rows[0]["user_id"]
        seqs = [r["seq"] for r in rows]
        numbers = {int(r["seq"]): int(r["correction"]) for r in await self.db.fetch(
            "set_voided_many", tx, seqs=seqs, voided=voided,
            ats=sorted({r["completed_at"] for r in rows}))}
        await self._correct_archives(tx, finalized, user_id)
        await self.db.run("delete_outbox", tx, seqs=seqs)
        await self.db.run("insert_outbox", tx, seqs=seqs)
        await self.db.run("touch_corrected_cohorts", tx, user_id=user_id, seqs=seqs,
                          seasons=[r["season"] for r in rows])
        await self.db.run("enqueue_correction_webhooks", tx,
                          type="completion.voided" if voided else "completion.restored",
                          user_id=user_id, data=[Jsonb({
                              "completion_id": r["completion_id"], "seq": r["seq"],
                              "season": r["season"], "user_id": user_id,
                              "points": r["points"],
                              "status": "voided" if voided else "recorded"}) for r in rows])
        return numbers

    async def audit_page(self, limit: int, after_id: int | None
                         ) -> tuple[shapes.Audit, int | None]:
        """The audit log, newest first: `limit` entries older than `after_id`,
        and the id to continue from when more follow."""
        rows = await self.db.fetch("audit_page", limit=limit + 1, after_id=after_id)
        shown = rows[:limit]
        entries: list[shapes.AuditEntry] = [
            {"id": r["id"], "at": iso(r["at"]), "action": r["action"], "target": r["target"],
             "reason": r["reason"], "details": r["details"]} for r in shown]
        return ({"entries": entries, "next": None},
                shown[-1]["id"] if len(rows) > limit else None)

    async def correct(self, completion_id: str, voided: bool, reason: str | None
                      ) -> tuple[shapes.Correction, bool]:
        """Void or restore: the answer's body (the same whether or not it was
        so already), and whether this call changed anything."""
        found = await self.db.fetch_one("find_completion", completion_id=completion_id)
        if found is None:
            raise DomainError("not_found", f"no completion {completion_id}")
        async with self.db.transaction() as tx:
            # The kinds' lock shared first, the kinds read under it (as a
            # learner's completions corrected together: _correct_learner).
            await self.db.fetch("share_board_kinds", tx)
            seasons = sorted(await self._seasons_of([found], tx))
            await self.db.fetch("share_lock_users", tx, user_ids=[found["user_id"]])
            locked = await self.db.fetch("lock_seasons", tx, seasons=sorted(seasons))
            row = await self.db.fetch_one("lock_completion", tx, completion_id=completion_id)
            if row is None:  # erased meanwhile
                raise DomainError("not_found", f"no completion {completion_id}")
            await failpoints.pause("correction_locked")
            changed = row["counted"] == voided
            correction = int(row["correction"])
            if changed:
                done = await self.db.fetch_one("set_voided", tx, seq=row["seq"],
                                               voided=voided)
                correction = int(done["correction"]) if done else correction + 1
                finals = await self._correct_archives(
                    tx, [season_named(r["season"], self.db.zone) for r in locked
                         if r["finalized"]], row["user_id"])
                # Its outbox row last (the lock order: a projector holding the
                # old one is waited for after the archives' locks).
                await self.db.run("delete_outbox", tx, seqs=[row["seq"]])
                await self.db.run("insert_outbox", tx, seqs=[row["seq"]])
                # The learner's cohort of the week: read again once applied.
                await self.db.run("touch_learner_cohorts", tx, user_id=row["user_id"],
                                  season=row["season"], seq=row["seq"])
                event: CompletionCorrected = {
                    "completion_id": completion_id, "seq": row["seq"], "season": row["season"],
                    "user_id": row["user_id"], "points": row["points"],
                    "status": "voided" if voided else "recorded"}
                await self.db.run("enqueue_webhook", tx,
                                  type="completion.voided" if voided else "completion.restored",
                                  user_id=row["user_id"], data=Jsonb(event))
                await self.db.run("insert_audit", tx, action="void" if voided else "restore",
                                  target=completion_id, reason=reason,
                                  details=Jsonb({"seq": row["seq"], "points": row["points"],
                                                 "final_ranks": finals}))
            user = await self.db.fetch_one("get_user", tx, user_id=row["user_id"])
        await failpoints.pause("correction_committed")
        if changed and user is not None:
            profile = Profile(user["profile_version"], user["visibility"],
                              user["display_name"] or "")
            delta = Delta(row["seq"], row["user_id"], row["points"], row["completed_at"],
                          season_named(row["season"], self.db.zone), profile, correction,
                          not voided, tags=tuple(row["tags"] or ()))
            await self._apply_now([delta], f"correction of {completion_id}")
        return {"completion_id": completion_id, "seq": row["seq"], "season": row["season"],
                "status": "voided" if voided else "recorded"}, changed

    async def _apply_now(self, deltas: list[Delta], what: str) -> None:
        """The fast path: every board at once; the outbox rows cover a failure."""
        try:
            await self.projector.apply_now(deltas, REQUEST_HEAL_WAIT_SECONDS)
        except Exception as exc:  # committed: the projector applies them from the outbox
            log.warning("%s not applied at once (the projector will): %s: %s", what,
                        type(exc).__name__, exc)

    async def _correct_archives(self, tx: Tx, seasons: list[Season], user_id: int
                                ) -> list[dict[str, Any]]:
        """Finalized seasons: the learner's standing from what counts now,
        ranks closed up; their final rank before and after, per season."""
        out = []
        # The archives' locks before any standing is written (the lock order:
        # a re-rank holding one waits for no row this transaction holds).
        await self.lifecycle.lock_archives(tx, seasons)
        for season in seasons:
            before = await self.db.fetch_one("archived_rank", tx, season=season,
                                             user_id=user_id)
            await self.db.run("delete_standing", tx, season=season, user_id=user_id)
            await self.db.run("insert_standing", tx, season=season, user_id=user_id)
            await failpoints.pause("correction_restanded")
            await self.lifecycle.rerank(tx, [season])
            after = await self.db.fetch_one("archived_rank", tx, season=season,
                                            user_id=user_id)
            out.append({"season": season.name,  # the completion's learner's final rank
                        "rank_before": before["rank"] if before else None,
                        "rank_after": after["rank"] if after else None})
        return out
