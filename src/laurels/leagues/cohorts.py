"""Weekly leagues: placement, cohort boards, zones and the decision
(docs/leagues.md; the rules in leagues/rules.py).

- **Joining** is a row of `league_joins`, written in the transaction that
  records a learner's first counted completion of the week (a trigger,
  migration 012): nothing anybody queues on.
- **Placement** (`place`): one placer per week at a time (the week's
  advisory lock), in bulk and in joining order, one statement per batch:
  the k-th member of a tier's week takes slot k, cohort k / size, so every
  cohort is full but the newest. A learner whose earlier week is not
  decided yet is pending until it is.
- **Cohort boards** are computed like group boards, from the week's board
  (groups.Groups.standings): tie policy, privacy, zones per entry. Nothing
  new is kept in Redis, so a lost board brings its cohorts back with it.
- **Zones** (`zones`): the cohorts whose members completed something since
  the last pass (and whose completions every board has applied), or that
  something else touched (a void or restore once applied, a visibility
  change, a suspension, an erasure, a placement: `league_touches`), are
  read again; a member who enters the promotion or demotion zone is
  notified (`league_zone`, at most one unread per learner and week).
- **The decision** (`decide`): once per week at its end plus the league
  grace, from PostgreSQL (the completions that count then), set-based in
  one statement, in one transaction holding the week's lock and its season
  row (ingests of the week wait; later ones join no more).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

from laurels.board.roles import LeagueAnnouncer
from laurels.board.values import Entry, default_name
from laurels.core import failpoints, shapes
from laurels.core.errors import DomainError
from laurels.core.registry import Zone
from laurels.core.seasons import Season, parse_season, season_named, season_of
from laurels.db import Database, Tx
from laurels.leagues.rules import Cohort, LeagueRules, parse_cohort_id
from laurels.leagues.view import OUTCOME_ZONES, CohortRows, board_rows
from laurels.process.settings import Settings
from laurels.reads.boards import iso
from laurels.reads.groups import Groups, rank_members, visible
from laurels.reads.privacy import Privacy

log = logging.getLogger("laurels.leagues")

PLACE_BATCH = 10_000  # joins placed per statement


class Leagues:
    def __init__(self, settings: Settings, db: Database, board: LeagueAnnouncer, groups: Groups,
                 privacy: Privacy) -> None:
        self.on = settings.leagues
        self.rules = LeagueRules.of(settings)
        self.policy = settings.tie_policy
        self.db = db
        self.board = board
        self.groups = groups
        self.privacy = privacy

    def require(self) -> None:
        if not self.on:
            raise DomainError("not_found", "leagues are not configured (LAURELS_LEAGUE_TIERS)")

    async def store_settings(self) -> None:
        """The deployment's league switch, for every writer (migration 012)."""
        await self.db.run("store_league_settings", enabled=self.on)

    # -- placement -------------------------------------------------------------

    async def _place(self, tx: Tx, season: Season) -> list[Cohort]:
        """Place every placeable join of a week (the caller holds its lock);
        the cohorts that gained members."""
        grown: list[Cohort] = []
        while True:
            rows = await self.db.fetch("place_joins", tx, season=season, top=self.rules.top,
                                       size=self.rules.size, limit=PLACE_BATCH)
            grown += [Cohort(season.name, r["tier"], r["cohort"]) for r in rows]
            if sum(int(r["joined"]) for r in rows) < PLACE_BATCH:
                return grown

    async def place(self, season: Season) -> int:
        """Place what joined a week and is not placed yet; how many cohorts grew."""
        async with self.db.transaction() as tx:
            await self.db.fetch("lock_league_week", tx, season=season)
            week = await self.db.fetch_one("league_week", tx, season=season)
            if week is None or week["decided_at"] is not None:
                return 0
            await failpoints.pause("league_placing")
            grown = await self._place(tx, season)
        for cohort in grown:  # its streams reload their members
            await self.board.publish_group_change(cohort.stream_id)
        return len(grown)

    async def open_weeks(self) -> list[Season]:
        return [season_named(r["season"], self.rules.time_zone)
                for r in await self.db.fetch("league_weeks_open")]

    # -- the decision ------------------------------------------------------------

    async def decide(self, season: Season) -> bool:
        """Decide a week's leagues once; True if this call did."""
        names = list(self.rules.tiers)
        async with self.db.transaction() as tx:
            await self.db.fetch("lock_league_week", tx, season=season)
            await self.db.fetch("lock_season_for_finalize", tx, season=season)
            week = await self.db.fetch_one("league_week", tx, season=season)
            if week is None or week["decided_at"] is not None:
                return False
            await self._place(tx, season)  # everyone who joined before now
            await failpoints.pause("league_deciding")
            row = await self.db.fetch_one(
                "decide_league_week", tx, season=season, policy=self.policy,
                names=names, **self.rules.cutoff_table())
        members = int(row["members"]) if row else 0
        log.info("leagues of %s decided: %d members", season, members)
        await self.board.announce_league_result(season)
        return True

    async def decide_due(self, now: datetime | None = None) -> list[Season]:
        """Decide every week due (end plus grace passed), oldest first."""
        now = now or datetime.now(UTC)
        done = []
        for season in await self.open_weeks():
            if self.rules.due(season, now) and await self.decide(season):
                done.append(season)
        return done

    async def tick(self) -> None:
        """The leagues' background work: decide what is due, place, zones."""
        await self.decide_due()
        for season in await self.open_weeks():
            await self.place(season)
            await self.zones(season)

    # -- cohort boards and zones -------------------------------------------------------

    async def board_of(self, cohort: Cohort, caller: int | None, decided: bool) -> CohortRows:
        """A cohort's board, the caller's own entry marked `self` and named
        (None: the ingest or admin token, nobody's), by learner each entry
        shown, and `n`, the entries its zones are scaled by. Undecided:
        ranked like a group board on the week's board, zones per entry.
        Decided: the decision's ranks, scores and zones, each with its
        outcome (later corrections change the week's board, not this)."""
        if decided:
            return await self._decided_board(cohort, caller)
        rows = await self.db.fetch("cohort_members", season=cohort.season, tier=cohort.tier,
                                   cohort=cohort.number)
        if not rows:
            raise DomainError("not_found", f"no cohort {cohort.id}")
        week = parse_season(cohort.season, zone=self.rules.time_zone)
        policy, scored = await self.groups.standings(week, [r["user_id"] for r in rows])
        ranked = rank_members(visible(scored, self.privacy), policy)
        return board_rows([(r.entry(), self.rules.zone(cohort.tier, r.rank, len(ranked)), None)
                       for r in ranked], caller, len(ranked))

    async def _decided_board(self, cohort: Cohort, caller: int | None) -> CohortRows:
        rows = await self.db.fetch("cohort_results", season=cohort.season, tier=cohort.tier,
                                   cohort=cohort.number)
        if not rows and not await self.members(cohort):
            raise DomainError("not_found", f"no cohort {cohort.id}")
        shown = []
        for r in rows:
            uid = int(r["user_id"])
            vis = self.privacy.visibility(uid, r["visibility"])
            if vis not in ("hidden", "erased"):
                shown.append((Entry(int(r["rank"]), uid, r["display_name"] or default_name(uid),
                                    vis, int(r["score"] or 0)),
                              OUTCOME_ZONES[r["outcome"]], r["outcome"]))
        return board_rows(shown, caller, len(rows))  # n: the ranked at the decision

    async def zones(self, season: Season) -> int:
        """Notify the members of the week's touched cohorts who entered a
        zone since their last notification; how many were notified. Set-based:
        one statement locks the touched cohorts' members, their scores are
        read in bulk, one statement writes the zones and one the notifications."""
        async with self.db.transaction() as tx:
            await self.db.fetch("lock_league_week", tx, season=season)
            week = await self.db.fetch_one("league_week", tx, season=season)
            if week is None or week["decided_at"] is not None:
                return 0
            touched = await self.db.fetch("league_touched_cohorts", tx, season=season,
                                          since=week["zone_seq"])
            touches = await self.db.fetch("league_ready_touches", tx, season=season)
            cohorts = sorted({(r["tier"], r["cohort"]) for r in [*touched, *touches]})
            if not cohorts:
                return 0
            members = await self.db.fetch("lock_touched_members", tx, season=season,
                                          tiers=[t for t, _ in cohorts],
                                          cohorts=[c for _, c in cohorts])
            await failpoints.pause("league_zoning")
            shown = await self._shown(season, members)
            changed = [(m, shown.get(m["user_id"])) for m in members
                       if _zone(shown.get(m["user_id"])) != m["zone"]]
            if changed:
                await self.db.run("set_zones", tx, season=season,
                                  user_ids=[m["user_id"] for m, _ in changed],
                                  zones=[_zone(now) for _, now in changed])
            created = await self._notify_zones(tx, season, [
                (m, now) for m, now in changed if now is not None and now["zone"] is not None])
            if touched:
                await self.db.run("set_zone_seq", tx, season=season,
                                  seq=max(int(r["last_seq"]) for r in touched))
            if touches:
                await self.db.run("delete_league_touches", tx,
                                  ids=[int(r["id"]) for r in touches])
        for uid, nid in created:
            await self.board.publish_notification(uid, nid)
        return len(created)

    async def _shown(self, season: Season, members: list[dict[str, Any]]) -> dict[int, Any]:
        """By learner, what their cohort's board shows of them (rank, score,
        zone), for the members given (whole cohorts): one read of the week's
        board for all of them, then each cohort ranked as board_of ranks it."""
        cohorts: dict[tuple[int, int], set[int]] = {}
        for m in members:
            cohorts.setdefault((m["tier"], m["cohort"]), set()).add(m["user_id"])
        policy, scored = await self.groups.standings(
            season, [m["user_id"] for m in members])
        # Who is shown, as PostgreSQL says now (the members' rows were read in
        # this pass, after any touch it takes): a visibility change counts
        # here whether or not Redis holds the new profile yet.
        hidden = {m["user_id"] for m in members if m["visibility"] == "hidden"}
        by_learner = {s.user_id: s for s in scored if s.user_id not in hidden}
        shown: dict[int, Any] = {}
        for (tier, _), ids in cohorts.items():
            ranked = rank_members([by_learner[u] for u in ids if u in by_learner], policy)
            for r in ranked:
                shown[r.member.user_id] = {"rank": r.rank, "score": r.member.score,
                                           "zone": self.rules.zone(tier, r.rank, len(ranked))}
        return shown

    async def _notify_zones(self, tx: Tx, season: Season,
                            entered: list[tuple[dict[str, Any], Any]]) -> list[tuple[int, int]]:
        """One league_zone notification per member who entered a zone (an
        unread one refreshed); (learner, notification id) of each."""
        if not entered:
            return []
        stamp = datetime.now(UTC).timestamp()
        rows = await self.db.fetch(
            "notify_league_zones", tx, season=season,
            user_ids=[m["user_id"] for m, _ in entered],
            data=[orjson.dumps({"tier": self.rules.tier_name(m["tier"]),
                                "cohort_id": Cohort(season.name, m["tier"], m["cohort"]).id,
                                "zone": now["zone"], "rank": now["rank"]}).decode()
                  for m, now in entered],
            dedup_keys=[f"league_zone:{season}:{now['zone']}:{now['rank']}:{stamp}"
                        for _, now in entered])
        return [(int(r["user_id"]), int(r["id"])) for r in rows]

    # -- reads -------------------------------------------------------------------------

    def week(self, season: Season) -> Season:
        if season.period != "week":
            raise DomainError("validation_error", "leagues are weekly: name a week (2026-W49)")
        return season

    async def learner(self, user_id: int, season: Season) -> shapes.League:
        """A learner's league of a week (`GET /v1/users/{id}/league`): their
        own entry marked and named, why they are in none, which week a
        pending one waits for; once decided, the decision's board."""
        self.require()
        week = self.week(season)
        row = await self.db.fetch_one("league_membership", season=week.name, user_id=user_id)
        if row is not None and not row["placed"] and row["waiting_for"] is None:
            await self.place(week)  # joined a moment ago: placed now, not "pending"
            row = await self.db.fetch_one("league_membership", season=week.name,
                                          user_id=user_id)
        status: Literal["none", "pending", "placed"]
        reason: Literal["no_completion", "hidden", "suspended"] | None = None
        if row is None:
            state = await self.db.fetch_one("league_standing_of", user_id=user_id)
            status, tier = "none", int(state["tier"]) if state else 0
            reason = ("suspended" if state and state["suspended"] else
                      "hidden" if state and state["visibility"] == "hidden" else
                      "no_completion")
        elif row["placed"]:
            status, tier = "placed", int(row["tier"])
        else:
            status, tier = "pending", int(row["tier_now"])
        tier = min(tier, self.rules.top)
        decided = await self._decided(week.name)
        promote, demote = self.rules.scaled(tier, self.rules.size)
        body: shapes.League = {
            "season": week.name, "status": status, "tier": self.rules.tier_name(tier),
            "tier_index": tier, "cohort_id": None, "ends_at": iso(week.ends_at),
            "decides_at": iso(self.rules.decides_at(week)),
            "promote": promote, "demote": demote, "entries": [], "self": None,
            "result": None, "reason": reason,
            "waiting_for": row["waiting_for"] if status == "pending" and row else None}
        if status == "placed" and row is not None:
            cohort = Cohort(week.name, tier, int(row["cohort"]))
            body["cohort_id"] = cohort.id
            body["entries"], shown, n = await self.board_of(cohort, user_id, decided)
            body["promote"], body["demote"] = self.rules.scaled(tier, n)
            body["self"] = shown.get(user_id)
        result = await self.db.fetch_one("league_result_of", season=week.name, user_id=user_id)
        if result is not None:
            body["result"] = {"rank": result["rank"], "outcome": result["outcome"],
                              "new_tier": self.rules.tier_name(int(result["new_tier"]))}
        return body

    async def _decided(self, season: str) -> bool:
        row = await self.db.fetch_one("league_week", season=season)
        return bool(row and row["decided_at"])

    async def cohort(self, season: Season, cohort_id: str, caller: int | None = None
                     ) -> tuple[shapes.CohortBoard, Cohort]:
        """A cohort's board (`GET /v1/leagues/{season}/cohorts/{id}`), the
        caller's entry marked: their right to read it is the route's to
        check (`members`)."""
        self.require()
        week = self.week(season)
        cohort = parse_cohort_id(cohort_id)
        if cohort is None or cohort.season != week.name or cohort.tier > self.rules.top:
            raise DomainError("not_found", f"no cohort {cohort_id}")
        decided = await self._decided(week.name)
        entries, _, _ = await self.board_of(cohort, caller, decided)
        return {"season": week.name, "tier": self.rules.tier_name(cohort.tier),
                "cohort_id": cohort.id, "decided": decided, "entries": entries}, cohort

    async def members(self, cohort: Cohort) -> list[int]:
        rows = await self.db.fetch("cohort_members", season=cohort.season, tier=cohort.tier,
                                   cohort=cohort.number)
        return [int(r["user_id"]) for r in rows]

    async def history(self, user_id: int, limit: int, after: str | None
                      ) -> tuple[shapes.LeagueHistory, str | None]:
        """A learner's decided weeks, newest first; the last week shown when
        more follow."""
        self.require()
        rows = await self.db.fetch("league_history", user_id=user_id, limit=limit + 1,
                                   after=after)
        shown = rows[:limit]
        results: list[shapes.LeagueRecord] = [
                   {"season": r["season"], "tier": self.rules.tier_name(int(r["tier"])),
                    "cohort_id": Cohort(r["season"], int(r["tier"]), int(r["cohort"])).id,
                    "rank": r["rank"], "outcome": r["outcome"],
                    "new_tier": self.rules.tier_name(int(r["new_tier"]))} for r in shown]
        more = len(rows) > limit and shown
        return {"results": results, "next": None}, (shown[-1]["season"] if more else None)

    async def summary(self, season: Season) -> shapes.LeagueSummary:
        """A week's tiers (`GET /v1/admin/leagues/{season}`)."""
        self.require()
        week = self.week(season)
        rows = {int(r["tier"]): r for r in await self.db.fetch("league_summary", season=week.name)}
        row = await self.db.fetch_one("league_week", season=week.name)
        tiers: list[shapes.LeagueTier] = []
        for t, name in enumerate(self.rules.tiers):
            r = rows.get(t)
            tiers.append({"tier": name, "cohorts": int(r["cohorts"]) if r else 0,
                          "members": int(r["members"]) if r else 0,
                          "promoted": int(r["promoted"]) if r else 0,
                          "demoted": int(r["demoted"]) if r else 0})
        return {"season": week.name, "decided": bool(row and row["decided_at"]), "tiers": tiers}

    async def cohorts(self, season: Season, tier: str | None, limit: int,
                      after: tuple[int, int] | None) -> tuple[shapes.CohortList, Any]:
        """A week's cohorts (`GET /v1/admin/leagues/{season}/cohorts`), by
        tier then cohort; the last one's (tier, cohort) when more follow."""
        self.require()
        week = self.week(season)
        tier = tier or None  # `?tier=`: every tier
        if tier is not None and tier not in self.rules.tiers:
            raise DomainError("validation_error",
                              f"tier: one of {', '.join(self.rules.tiers)}")
        rows = await self.db.fetch(
            "league_cohorts", season=week.name,
            tier=None if tier is None else self.rules.tiers.index(tier),
            after_tier=after[0] if after else -1, after_cohort=after[1] if after else -1,
            limit=limit + 1)
        decided = await self._decided(week.name)
        shown = rows[:limit]
        return {"cohorts": [{"cohort_id": Cohort(week.name, int(r["tier"]), int(r["cohort"])).id,
                             "tier": self.rules.tier_name(int(r["tier"])),
                             "members": int(r["members"]), "decided": decided}
                            for r in shown], "next": None}, (
            (int(shown[-1]["tier"]), int(shown[-1]["cohort"])) if len(rows) > limit else None)

    def current_week(self, now: datetime | None = None) -> Season:
        return season_of(now or datetime.now(UTC), "week", zone=self.rules.time_zone)


def _zone(shown: Any) -> Zone | None:
    """The zone a member's cohort board shows them in (None: in none, or not shown)."""
    return shown["zone"] if shown else None
