"""Team boards (CONTRACT.md, "Team boards"; lifecycle/teams.py, board/teams.py,
reads/teams.py): groups of a team kind ranked by the sum, the mean or the
top N of their members' scores, kept in Redis as members score, join,
leave, are suspended or erased; a board filled from PostgreSQL equals the
one kept live."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from laurels.core.seasons import parse_season
from laurels.core.validation import GroupIn, MembersIn
from laurels.lifecycle.teams import key_of
from laurels.runtime import Runtime, Services

NOW = datetime(2026, 12, 9, 12, tzinfo=UTC)
WEEK = parse_season("2026-W50", zone="UTC")


def done(cid: str, uid: int, points: int, minutes: int = 0) -> dict[str, Any]:
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": (NOW - timedelta(hours=1, minutes=-minutes)).isoformat()}


async def teams(svc: Services, team: str = "classes", caller: Any = "platform"
                ) -> list[tuple[str | None, float, int, int]]:
    await svc.projector.drain(min_age_seconds=0)
    body, _ = await svc.team_reads.page(team, WEEK, 0, 100, caller)
    return [(e["group_id"], e["score"], e["members"], e["rank"]) for e in body["entries"]]


async def group(svc: Services, gid: str, members: list[int], team: str | None = "classes",
                access: str = "public") -> None:
    await svc.groups.put(gid, GroupIn(access=access, team=team))  # type: ignore[arg-type]
    await svc.groups.change_members(gid, MembersIn(add=members))


async def filled_again(svc: Services, team: str = "classes") -> None:
    """The board kept live equals one filled from PostgreSQL now."""
    live = await teams(svc, team)
    state = await svc.board.team_state(WEEK, key_of(await svc.teams.get(team)))
    await svc.board.team_drop(WEEK, state.current, team)
    assert await teams(svc, team) == live


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_sum_mean_and_top_rank_teams_by_their_members(rt: Runtime, policy: str) -> None:
    svc = rt.derive(clock=lambda: NOW, tie_policy=policy)
    for team, body in (("classes", {"aggregate": "sum"}), ("houses", {"aggregate": "mean"}),
                       ("squads", {"aggregate": "top", "top": 2})):
        await svc.teams.define(team, {"title": team.title(), **body})
    await svc.ingestor.record([done("a", 1, 10), done("b", 2, 6), done("c", 3, 5),
                               done("d", 4, 9), done("e", 5, 1)])
    await group(svc, "7a", [1, 2, 3])
    await group(svc, "7b", [4, 5])
    assert await teams(svc) == [("7a", 21, 3, 1), ("7b", 10, 2, 2)]
    await group(svc, "red", [1, 2, 3, 6], team="houses")  # 6 has no points: counts 0
    await group(svc, "blue", [4, 5], team="houses")
    assert await teams(svc, "houses") == [("red", 5.25, 4, 1), ("blue", 5, 2, 2)]
    await svc.groups.change_members("red", MembersIn(remove=[6]))  # (leaves with 0 points)
    assert await teams(svc, "houses") == [("red", 7, 3, 1), ("blue", 5, 2, 2)]
    await svc.groups.change_members("red", MembersIn(add=[6]))
    await group(svc, "s1", [1, 2, 3], team="squads")
    await group(svc, "s2", [4, 5, 6], team="squads")
    assert await teams(svc, "squads") == [("s1", 16, 3, 1), ("s2", 10, 3, 2)]
    # A completion moves every team of its learner, in each kind.
    await svc.ingestor.record([done("f", 5, 20)])
    assert await teams(svc) == [("7b", 30, 2, 1), ("7a", 21, 3, 2)]
    assert await teams(svc, "houses") == [("blue", 15, 2, 1), ("red", 5.25, 4, 2)]
    assert await teams(svc, "squads") == [("s2", 30, 3, 1), ("s1", 16, 3, 2)]
    # A void and a restore move it back and forth.
    await svc.corrections.void("f", "copied")
    assert await teams(svc) == [("7a", 21, 3, 1), ("7b", 10, 2, 2)]
    await svc.corrections.restore("f", "fine")
    assert await teams(svc) == [("7b", 30, 2, 1), ("7a", 21, 3, 2)]
    for team in ("classes", "houses", "squads"):
        await filled_again(svc, team)


async def test_members_carry_their_season_in_and_out(rt: Runtime) -> None:
    svc = rt.derive(clock=lambda: NOW)
    await svc.teams.define("classes", {})
    await svc.ingestor.record([done("a", 1, 10), done("b", 2, 6), done("c", 3, 5)])
    await group(svc, "7a", [1])
    await group(svc, "7b", [2])
    assert await teams(svc) == [("7a", 10, 1, 1), ("7b", 6, 1, 2)]
    await svc.groups.change_members("7b", MembersIn(add=[3, 1]))  # 1 in two teams
    assert await teams(svc) == [("7b", 21, 3, 1), ("7a", 10, 1, 2)]
    await svc.groups.change_members("7a", MembersIn(remove=[1]))  # 7a has none left
    assert await teams(svc) == [("7b", 21, 3, 1)]
    await svc.learners.suspend(3, True, "spam")  # a suspended learner counts nowhere
    assert await teams(svc) == [("7b", 16, 2, 1)]
    await svc.learners.suspend(3, False, "fine")
    assert await teams(svc) == [("7b", 21, 3, 1)]
    await svc.learners.erase(2)  # erased: gone from every team
    assert await teams(svc) == [("7b", 15, 2, 1)]
    await svc.groups.put("7a", GroupIn(team=None))  # out of the kind
    await svc.groups.put("7b", GroupIn(team=None))
    assert await teams(svc) == []
    await svc.groups.put("7b", GroupIn(team="classes"))
    assert await teams(svc) == [("7b", 15, 2, 1)]
    await svc.groups.delete("7b")
    assert await teams(svc) == []
    await filled_again(svc)


async def test_members_only_groups_are_named_to_those_who_may_read_them(rt: Runtime) -> None:
    svc = rt.derive(clock=lambda: NOW)
    await svc.teams.define("classes", {})
    await svc.ingestor.record([done("a", 1, 10), done("b", 2, 6)])
    await group(svc, "7a", [1], access="members")
    await group(svc, "7b", [2], access="public")
    for caller, named in ((None, {"7b"}), ("platform", {"7a", "7b"}), (1, {"7a", "7b"}),
                          (2, {"7b"}), (99, {"7b"})):
        shown = await teams(svc, caller=caller)
        assert {g for g, *_ in shown if g} == named, caller
        assert [(s, m, r) for _, s, m, r in shown] == [(10, 1, 1), (6, 1, 2)]


async def test_a_learner_s_teams_and_what_they_add(rt: Runtime) -> None:
    svc = rt.derive(clock=lambda: NOW)
    await svc.teams.define("classes", {})
    await svc.teams.define("squads", {"aggregate": "top", "top": 1})
    await svc.ingestor.record([done("a", 1, 10), done("b", 2, 6)])
    await group(svc, "7a", [1, 2])
    await group(svc, "s1", [1, 2], team="squads")
    mine = await svc.team_reads.of_learner(2, WEEK)
    assert [(t["team"], t["group_id"], t["rank"], t["score"], t["total"], t["contribution"])
            for t in mine["teams"]] == [("classes", "7a", 1, 16, 1, 6),
                                        ("squads", "s1", 1, 10, 1, 0)]


async def test_a_kind_s_aggregate_cannot_change_and_its_deletion_frees_groups(
        rt: Runtime) -> None:
    svc = rt.derive(clock=lambda: NOW)
    kind, created = await svc.teams.define("classes", {"title": "Classes"})
    assert created and kind.aggregate == "sum"
    kind, created = await svc.teams.define("classes", {"title": "Forms"})
    assert not created and kind.title == "Forms"
    from laurels.core.errors import DomainError
    with pytest.raises(DomainError) as exc:
        await svc.teams.define("classes", {"aggregate": "mean"})
    assert exc.value.code == "kind_conflict"
    await svc.ingestor.record([done("a", 1, 10)])
    await group(svc, "7a", [1])
    assert await teams(svc) == [("7a", 10, 1, 1)]
    await svc.teams.delete("classes")
    assert (await svc.groups.get("7a"))["team"] is None
    await svc.teams.define("classes", {"aggregate": "mean"})
    assert await teams(svc) == []


async def test_verify_compares_each_team_board_with_postgresql(rt: Runtime) -> None:
    svc = rt.derive(clock=lambda: NOW)
    await svc.teams.define("squads", {"aggregate": "top", "top": 2})
    await svc.ingestor.record([done("a", 1, 10), done("b", 2, 6), done("c", 3, 5)])
    await group(svc, "s1", [1, 2, 3], team="squads")
    assert await teams(svc, "squads") == [("s1", 16, 3, 1)]
    assert await svc.team_checker.every() == [("squads", WEEK)]
    check = await svc.team_checker.verify("squads", WEEK)
    assert check.consistent and check.players_checked == 1, check
    # A score the board kept wrong is found (here: a member's points, by hand).
    state = await svc.board.team_state(WEEK, key_of(await svc.teams.get("squads")))
    tk = svc.keys.season(WEEK).version(state.current).team("squads")
    await svc.redis.zadd(tk.top("s1"), {"0000000000000000003": 50})
    await svc.redis.zadd(tk.scores, {"s1": -60})
    check = await svc.team_checker.verify("squads", WEEK)
    assert [(m.user_id, m.difference) for m in check.mismatches] == [
        ("s1", "Redis score 60, 3 members, rank 1, PostgreSQL score 16, 3 members, rank 1")]


async def test_a_board_that_missed_a_change_is_filled_again(rt: Runtime) -> None:
    """A process stopped between its Redis move and its commit, or a Redis
    back from before a move: the board holds another count of changes than
    PostgreSQL, and the next read fills it again."""
    svc = rt.derive(clock=lambda: NOW)
    await svc.teams.define("classes", {})
    await svc.ingestor.record([done("a", 1, 10), done("b", 2, 6)])
    await group(svc, "7a", [1])
    assert await teams(svc) == [("7a", 10, 1, 1)]
    async with svc.db.connection() as conn:  # a change Redis never heard of
        await conn.execute("INSERT INTO group_members VALUES ('7a', 2)")
        await conn.execute("UPDATE team_kinds SET members_version ="
                           " nextval('team_members_version')")
    assert await teams(svc) == [("7a", 16, 2, 1)]


async def test_a_finalized_season_s_teams_come_from_its_archive(rt: Runtime) -> None:
    """Once a season's keys are gone, its team board is computed from its
    archive and the memberships now, as the board kept live had it."""
    svc = rt.derive(clock=lambda: NOW)
    await svc.teams.define("squads", {"aggregate": "top", "top": 2})
    await svc.ingestor.record([done("a", 1, 10), done("b", 2, 6), done("c", 3, 5),
                               done("d", 4, 9)])
    await group(svc, "s1", [1, 2, 3], team="squads")
    await group(svc, "s2", [4, 5], team="squads")
    live = await teams(svc, "squads")
    mine = await svc.team_reads.of_learner(2, WEEK)
    assert live == [("s1", 16, 3, 1), ("s2", 9, 2, 2)]
    await svc.lifecycle.finalize(WEEK)
    await svc.board.drop_season(WEEK)
    assert await teams(svc, "squads") == live
    assert await svc.team_reads.of_learner(2, WEEK) == mine


async def test_a_window_s_teams_lose_the_day_that_leaves(rt: Runtime) -> None:
    """A team board on a rolling window moves with it at midnight."""
    now = [NOW]
    svc = rt.derive(clock=lambda: now[0], periods=("week", "7d"))
    window = parse_season("last-7d", zone="UTC")
    await svc.teams.define("classes", {})
    await svc.ingestor.record([done("a", 1, 10), done("b", 2, 6)])
    await group(svc, "7a", [1, 2])
    await svc.projector.drain(min_age_seconds=0)
    body, _ = await svc.team_reads.page("classes", window, 0, 10, "platform")
    assert [(e["group_id"], e["score"]) for e in body["entries"]] == [("7a", 16)]
    now[0] = NOW + timedelta(days=7)  # the day of both completions leaves
    await svc.windows.tick()
    body, _ = await svc.team_reads.page("classes", window, 0, 10, "platform")
    assert [(e["group_id"], e["score"]) for e in body["entries"]] == [("7a", 0)]
    check = await svc.team_checker.verify("classes", window)
    assert check.consistent, check.mismatches
