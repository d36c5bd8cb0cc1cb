"""Groups, and the boards of groups and of friends.

A group (a class, a cohort, a team) is a set of learners kept in PostgreSQL.
Its board is computed when it is read, from the season's board: the members'
scores are read by id (`Board.standings_of`, one script call per 2,000 ids,
never a scan of the season), then ranked among themselves in Python with the
same tie policy and privacy rules as the whole board. Membership changes are
therefore free and show on the next read, for past seasons too; writes cost
nothing more. docs/groups.md says why, with the measurements.

Lock order (docs/concurrency.md): a membership change share-locks the
learners it adds (ascending), then the group's row, then its team kind's
(lifecycle/teams.py); an erasure locks the learner's row, then deletes their
memberships. An erased learner can never
join a group, and is removed from every group in the erasure's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from laurels.board import Entry, Scored, default_name
from laurels.board.roles import MemberReader
from laurels.core import shapes
from laurels.core.errors import DomainError
from laurels.core.ranking import Position, TiePolicy, assign_ranks
from laurels.core.seasons import Season
from laurels.core.shapes import visibility
from laurels.core.validation import GROUP_MEMBERS_MAX, GroupIn, MembersIn
from laurels.db import Database, Row, Tx
from laurels.lifecycle.teams import Teams
from laurels.reads.boards import HIDDEN, Reads, public_entry
from laurels.reads.privacy import Privacy


@dataclass(frozen=True)
class Ranked:
    """A member on a group (or friends) board: their rank among the members
    shown, and what the whole board stores of them."""

    rank: int
    member: Scored

    def entry(self) -> Entry:
        m = self.member
        return Entry(self.rank, m.user_id, m.name, m.visibility, m.score)


def _key(m: Scored, policy: TiePolicy) -> tuple[int, int, int]:
    """`ranking.sort_key` of a member (inlined: a group holds up to 100,000)."""
    return (-m.score, m.last_ts if policy == "first" else 0, m.user_id)


def rank_members(members: Sequence[Scored], policy: TiePolicy) -> list[Ranked]:
    """Order and rank members among themselves, as the whole board would."""
    ordered = sorted(members, key=lambda m: _key(m, policy))
    ranks = assign_ranks([m.score for m in ordered], 1, 0, policy)
    return [Ranked(r, m) for r, m in zip(ranks, ordered, strict=True)]


def visible(members: Sequence[Scored], privacy: Privacy) -> list[Scored]:
    """The members a public board shows (the stricter of the store's and
    PostgreSQL's visibility; hidden and erased ones left out)."""
    out = []
    for m in members:
        vis = privacy.visibility(m.user_id, m.visibility)
        if vis not in HIDDEN:
            out.append(m if vis == m.visibility else m._replace(visibility=vis))
    return out


def place(others: Sequence[Scored], me: Scored, vis: str, policy: TiePolicy
          ) -> tuple[list[Ranked], int]:
    """`others` (as `visible` gives them) ranked with `me` among them, and
    my index. A hidden learner stands where they would, and the others are
    ranked as if they were on the board (as on the whole board's
    neighbourhood, ranking.ranks_beside): their own view never shows two
    learners on one unique rank."""
    ranked = rank_members([*others, me._replace(visibility=vis)], policy)
    return ranked, next(i for i, r in enumerate(ranked) if r.member.user_id == me.user_id)


def _archived(row: Row) -> Scored:
    uid = int(row["user_id"])
    at: datetime = row["last_completed_at"]
    rank = row["rank"]
    return Scored(uid, int(row["score"]), row["visibility"],
                  row["display_name"] or default_name(uid), int(at.timestamp() * 1_000_000),
                  int(rank) if rank is not None else None)


class Groups:
    def __init__(self, db: Database, board: MemberReader, reads: Reads,
                 privacy: Privacy, teams: Teams) -> None:
        self.db = db
        self.teams = teams  # a team's boards follow its members
        self.reads = reads
        self.board = board
        self.privacy = privacy

    # -- the groups themselves ----------------------------------------------

    async def put(self, group_id: str, body: GroupIn) -> shapes.Group:
        """Create a group or change it; a change of its team kind moves its
        members from the one's boards to the other's (lifecycle/teams.py)."""
        async with self.db.transaction() as tx:
            await self.db.run("put_group", tx, group_id=group_id, group_name=body.name,
                              access=body.access)
            if "team" in body.model_fields_set:
                if body.team is not None and await self.db.fetch_one(
                        "team_kind", tx, team=body.team) is None:
                    raise DomainError("validation_error", f"team: no team kind {body.team} "
                                      "is defined")
                row = await self.db.fetch_one("set_group_team", tx, group_id=group_id,
                                              team=body.team)
                was = row["was"] if row else None
                if was != body.team:
                    members = [r["user_id"] for r in await self.db.fetch(
                        "group_members_of", tx, group_id=group_id)]
                    await self.teams.moved(tx, [t for t in (was, body.team) if t], members)
        await self.board.publish_group_change(group_id)  # its access may have changed
        return await self.get(group_id)

    async def get(self, group_id: str) -> shapes.Group:
        row = await self.db.fetch_one("get_group", group_id=group_id)
        if row is None:
            raise DomainError("not_found", f"no group {group_id}")
        return {"group_id": row["group_id"], "name": row["name"], "access": row["access"],
                "members": int(row["members"]), "team": row["team"]}

    async def delete(self, group_id: str) -> None:
        async with self.db.transaction() as tx:
            members = [r["user_id"] for r in await self.db.fetch(
                "group_members_of", tx, group_id=group_id)]
            gone = await self.db.fetch_one("delete_group", tx, group_id=group_id)
            if gone is None:
                raise DomainError("not_found", f"no group {group_id}")
            await self.db.run("insert_audit", tx, action="group_delete", target=group_id,
                              reason=None, details=None)
            if gone["team"]:  # its members leave its team
                await self.teams.moved(tx, [gone["team"]], members)
        await self.board.publish_group_change(group_id)

    async def change_members(self, group_id: str, body: MembersIn) -> shapes.MembersChanged:
        """Add and remove members in one transaction; erased learners are
        refused, the rest is idempotent; at most GROUP_MEMBERS_MAX members."""
        add = sorted(set(body.add) - set(body.remove))
        async with self.db.transaction() as tx:
            erased: set[int] = set()
            if add:
                await self.db.run("ensure_users", tx, user_ids=add)
                erased = {int(r["user_id"]) for r in await self.db.fetch(
                    "share_lock_users", tx, user_ids=add) if r["erased"]}
            group = await self.db.fetch_one("lock_group", tx, group_id=group_id)
            if group is None:
                raise DomainError("not_found", f"no group {group_id}")
            await self.db.run("remove_members", tx, group_id=group_id,
                              user_ids=sorted(set(body.remove)))
            await self.db.run("add_members", tx, group_id=group_id,
                              user_ids=[u for u in add if u not in erased])
            row = await self.db.fetch_one("count_members", tx, group_id=group_id)
            members = int(row["members"]) if row else 0
            if members > GROUP_MEMBERS_MAX:
                raise DomainError("validation_error",
                                  f"a group holds at most {GROUP_MEMBERS_MAX:,} members")
            if group["team"]:  # its team's boards follow (lifecycle/teams.py)
                await self.teams.moved(tx, [group["team"]], [*add, *body.remove])
        await self.board.publish_group_change(group_id)
        return {"group_id": group_id, "members": members,
                "refused": [{"user_id": u, "code": "user_erased"} for u in sorted(erased)]}

    holds = "none"  # an erasure (erasure.Forgets): nothing before their seasons

    async def hold(self, tx: Tx, user_id: int) -> None:
        return None

    async def forget(self, tx: Tx, user_id: int) -> list[str]:
        """An erasure: the learner's memberships, and the groups they were in."""
        rows = await self.db.fetch("delete_user_memberships", tx, user_id=user_id)
        return [r["group_id"] for r in rows]

    async def of_learner(self, user_id: int) -> shapes.LearnerGroups:
        rows = await self.db.fetch("user_groups", user_id=user_id)
        return {"groups": [{"group_id": r["group_id"], "name": r["name"],
                            "access": r["access"]} for r in rows]}

    async def read_access(self, group_id: str, user_id: int | None
                          ) -> tuple[str, bool] | None:
        """The group's access and whether the learner is a member; None for
        an unknown group. One query whatever the answer: a caller who may
        not read a group must not tell it from no group, by time either."""
        row = await self.db.fetch_one("group_read_access", group_id=group_id,
                                      user_id=user_id)
        if row is None:
            return None
        return str(row["access"]), bool(row["member"])

    # -- boards ---------------------------------------------------------------

    async def standings(self, season: Season, user_ids: list[int], board_rank: bool = False
                      ) -> tuple[TiePolicy, list[Scored]]:
        """The scores of these learners on the season's board (the archive's
        for a finalized season), and the tie policy they were ranked by."""
        policy: TiePolicy = self.reads.settings.tie_policy

        async def redis() -> list[Scored]:
            return await self.board.standings_of(season, user_ids, board_rank)

        async def archive(archived_policy: str) -> list[Scored]:
            nonlocal policy
            policy = "first" if archived_policy == "first" else "shared"
            rows = await self.db.fetch("archive_of_users", season=season,
                                       user_ids=user_ids)
            return [_archived(r) for r in rows]

        found: list[Scored] = await self.reads.with_board(season, redis, archive, list)
        return policy, found

    async def member_ids(self, group_id: str) -> list[int]:
        return (await self._members(group_id))[1]

    async def _members(self, group_id: str) -> tuple[str, list[int]]:
        """The group's name (its id when it has none) and its members."""
        rows = await self.db.fetch("group_member_ids", group_id=group_id)
        if not rows:
            raise DomainError("not_found", f"no group {group_id}")
        return (rows[0]["name"] or group_id,
                [int(r["user_id"]) for r in rows if r["user_id"] is not None])

    async def board_top(self, group_id: str, season: Season, limit: int,
                        after: Position | None
                        ) -> tuple[shapes.GroupBoardPage, Position | None, list[int]]:
        """A group's board: its members ranked among themselves, `limit`
        entries after the position `after` (not an offset); the position of
        the page's last entry when more follow (the API seals it into the
        `next` cursor); and the members it was computed from (the API's
        cache indexes them, live/group_index.py)."""
        name, members = await self._members(group_id)
        policy, scored = await self.standings(season, members)
        ranked = rank_members(visible(scored, self.privacy), policy)
        page = ranked if after is None else [r for r in ranked
                                             if _key(r.member, policy) > after]
        shown, rest = page[:limit], page[limit:]
        body: shapes.GroupBoardPage = {
            **self.reads.season_info(season), "group_id": group_id, "name": name,
            "tie_policy": policy, "total": len(ranked),
            "entries": [public_entry(r.entry()) for r in shown], "next": None}
        return body, (_key(shown[-1].member, policy) if rest and shown else None), members

    async def board_around(self, group_id: str, season: Season, user_id: int,
                           radius: int) -> shapes.GroupAround:
        """A member's neighbourhood within the group. Not a member: the same
        404 as for no group (after the same one query), unless the group is
        public, whose existence is no secret."""
        found = await self.read_access(group_id, user_id)
        if found is None or not found[1]:
            if found is not None and found[0] == "public":
                raise DomainError("not_found",
                                  f"learner {user_id} is not in group {group_id}")
            raise DomainError("not_found", f"no group {group_id}")
        members = await self.member_ids(group_id)
        if user_id not in members:  # left since
            raise DomainError("not_found", f"no group {group_id}")
        policy, scored = await self.standings(season, members)
        me = next((m for m in scored if m.user_id == user_id), None)
        vis = self.privacy.visibility(user_id, me.visibility) if me else "erased"
        if me is None or vis == "erased":
            raise DomainError("not_ranked",
                              f"learner {user_id} has no completions in {season.shown}")
        others = visible([m for m in scored if m.user_id != user_id], self.privacy)
        ranked, index = place(others, me, vis, policy)
        mine = ranked[index]
        neighbors: list[shapes.Neighbor] = []
        for r in ranked[max(0, index - radius):index + radius + 1]:
            if r is mine:
                neighbors.append({"rank": mine.rank, "user_id": user_id,
                                  "display_name": me.name, "score": me.score, "self": True})
            else:
                neighbors.append({**public_entry(r.entry()), "self": False})
        return {"season": season.label, "board": season.board, "metric": season.metric,
                "group_id": group_id,
                "user": {"rank": mine.rank, "user_id": user_id, "display_name": me.name,
                         "score": me.score, "visibility": visibility(vis)},
                "neighbors": neighbors}

    async def friends(self, season: Season, user_ids: list[int], caller: int | None
                      ) -> shapes.Friends:
        """A friends board: the given public learners ranked among
        themselves, each with their rank on the whole board.

        Anonymous, hidden (so suspended) and erased learners are left out, as
        if they had no completions: the service cannot tell who a learner's
        friends are, and an anonymous learner's score and board rank, asked
        for by id, would name them. Whatever their own visibility, the caller
        is shown to themselves (`self`, their real name and id); a hidden
        caller stands where they would, pushing nobody down, as in their
        neighbourhood."""
        ids = sorted(set(user_ids))
        policy, scored = await self.standings(season, ids, board_rank=True)
        shown = [m for m in visible([m for m in scored if m.user_id != caller], self.privacy)
                 if m.visibility == "public"]
        me = next((m for m in scored if m.user_id == caller), None)
        vis = self.privacy.visibility(me.user_id, me.visibility) if me else "erased"
        mine: Ranked | None = None
        if me is None or vis == "erased":
            ranked = rank_members(shown, policy)
        else:
            ranked, index = place(shown, me, vis, policy)
            mine = ranked[index]
        entries: list[shapes.Friend] = []
        for r in ranked:
            m = r.member
            if r is mine:
                entries.append({"rank": r.rank, "board_rank": m.board_rank,
                                "user_id": m.user_id, "display_name": m.name,
                                "score": m.score, "self": True})
            else:
                e = public_entry(r.entry())
                entries.append({"rank": e["rank"], "user_id": e["user_id"],
                                "display_name": e["display_name"], "score": e["score"],
                                "board_rank": m.board_rank})
        return {"season": season.label, "board": season.board, "metric": season.metric,
                "entries": entries}
