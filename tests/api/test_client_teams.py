"""laurels.client's team board calls (CONTRACT.md, "Team boards"): team kinds
defined, listed, retitled and deleted; groups put in a kind, kept in it by a
PUT that leaves `team` out, taken out by `team=None`; the board read by a
learner, the platform and anyone (members-only teams unnamed), paged; a
learner's teams. Each against the app in process, its body held to the
client's type field by field (tests/typed_checks.py), its refusals raised as
their exceptions; and what each call sends on the wire, against a scripted
transport."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from laurels.client import (
    UNCHANGED,
    AsyncClient,
    Client,
    Completion,
    Group,
    KindConflict,
    LearnerTeams,
    NotFound,
    TeamBoard,
    TeamEntry,
    TeamKind,
    TeamKinds,
    ValidationError,
)
from tests.api.conftest import BASE_URL, ApiFactory
from tests.helpers import ADMIN, INGEST, token_for
from tests.typed_checks import problems

pytestmark = pytest.mark.once

SEASON = "2025-W49"  # seasons never close here (close_seasons off)
AT = "2025-12-03T10:00:00Z"


def typed(body: Any, kind: Any) -> Any:
    """`body` is of the client's type `kind`, every field (none missing, none
    it does not declare)."""
    assert problems(body, kind, kind.__name__) == []
    return body


async def kinds_defined(admin: AsyncClient) -> None:
    """`classes` (sum, retitled Forms) and `squads` (top 1), and the refusals."""
    classes = typed(await admin.define_team_kind("classes"), TeamKind)
    assert {k: classes[k] for k in ("team", "title", "aggregate", "top")} == {
        "team": "classes", "title": "Classes", "aggregate": "sum", "top": None}
    squads = typed(await admin.define_team_kind("squads", {
        "title": "Squads", "aggregate": "top", "top": 1}), TeamKind)
    assert (squads["aggregate"], squads["top"]) == ("top", 1)
    retitled = await admin.define_team_kind("classes", {"title": "Forms"})
    assert (retitled["title"], retitled["created_at"]) == ("Forms", classes["created_at"])
    with pytest.raises(KindConflict) as conflict:
        await admin.define_team_kind("classes", {"aggregate": "mean"})
    assert (conflict.value.status, conflict.value.code) == (409, "kind_conflict")
    with pytest.raises(ValidationError):
        await admin.define_team_kind("bad", {"aggregate": "top"})  # no `top`
    listed = typed(await admin.team_kinds(), TeamKinds)
    assert [k["team"] for k in listed["team_kinds"]] == ["classes", "squads"]


async def groups_joined(laurels: AsyncClient) -> None:
    """7a members-only (1, 2), 7b public (3, 4), both of `classes`; a PUT
    that leaves `team` out keeps it; a kind not defined is refused."""
    a = typed(await laurels.put_group("7a", team="classes"), Group)
    assert (a["access"], a["team"]) == ("members", "classes")
    b = await laurels.put_group("7b", name="Class 7b", access="public", team="classes")
    assert (b["name"], b["team"]) == ("Class 7b", "classes")
    assert (await laurels.put_group("7b", access="public"))["team"] == "classes"  # kept
    for gid, members in (("7a", [1, 2]), ("7b", [3, 4])):
        await laurels.change_members(gid, add=members)
    with pytest.raises(ValidationError):
        await laurels.put_group("7c", team="nope")
    await laurels.post_completions([Completion(f"c{uid}", uid, pts, AT) for uid, pts in
                                    ((1, 10), (2, 5), (3, 8), (4, 8))])


async def test_the_team_calls(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)

    def client(token: str | None) -> AsyncClient:
        return AsyncClient(BASE_URL, token, transport=api.transport)

    admin, laurels, anyone = client(ADMIN), client(INGEST), client(None)
    one, three = client(token_for(api.env, 1)), client(token_for(api.env, 3))
    async with admin, laurels, anyone, one, three:
        await kinds_defined(admin)
        await groups_joined(laurels)
        await api.runtime.projector.drain(min_age_seconds=0)

        board = typed(await admin.team_board("classes", SEASON), TeamBoard)
        assert {k: board[k] for k in ("team", "title", "season", "board", "aggregate", "top",
                                      "total", "next")} == {
            "team": "classes", "title": "Forms", "season": SEASON, "board": "global",
            "aggregate": "sum", "top": None, "total": 2, "next": None}
        assert [(e["rank"], e["group_id"], e["name"], e["score"], e["members"])
                for e in board["entries"]] == [(1, "7b", "Class 7b", 16, 2),
                                               (2, "7a", "7a", 15, 2)]
        # The members-only rule: anyone and a learner of 7b see 7a unnamed,
        # a member of 7a sees it named.
        for reader, named in ((anyone, False), (three, False), (one, True)):
            seen = (await reader.team_board("classes", SEASON))["entries"][1]
            assert (seen["group_id"], seen["name"]) == (("7a", "7a") if named else (None, None))
            assert (seen["rank"], seen["score"], seen["members"]) == (2, 15, 2)
        first = await laurels.team_board("classes", SEASON, limit=1)
        assert [e["group_id"] for e in first["entries"]] == ["7b"] and first["next"]
        walked = [typed(e, TeamEntry)
                  async for e in laurels.pages("team_board", "classes", SEASON, limit=1)]
        assert walked == board["entries"]
        top = await admin.team_board("squads", SEASON)
        assert (top["total"], top["entries"]) == (0, [])  # no group in it

        mine = typed(await one.user_teams(1, SEASON), LearnerTeams)
        assert mine == {"teams": [{"team": "classes", "group_id": "7a", "name": "7a",
                                   "rank": 2, "score": 15, "total": 2, "contribution": 10}]}
        assert (await admin.user_teams(3, season=SEASON))["teams"][0]["group_id"] == "7b"

        # Out of the kind, then the kind gone.
        assert (await laurels.put_group("7a", team=None))["team"] is None
        left = await admin.team_board("classes", SEASON)
        assert [e["group_id"] for e in left["entries"]] == ["7b"] and left["total"] == 1
        assert (await one.user_teams(1, SEASON))["teams"] == []
        await admin.delete_team_kind("classes")  # (None: 204)
        assert (await laurels.get_group("7b"))["team"] is None
        with pytest.raises(NotFound):
            await admin.delete_team_kind("classes")
        with pytest.raises(NotFound):
            await anyone.team_board("classes")
        with pytest.raises(NotFound):
            await anyone.team_board("squads", board="course:sql-101")  # no such board kind


def test_what_each_call_sends() -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(204 if request.method == "DELETE" else 200, json={})

    with Client("http://laurels.test", "t", transport=httpx.MockTransport(answer)) as c:
        c.team_kinds()
        c.define_team_kind("squads", {"aggregate": "top", "top": 5})
        c.define_team_kind("classes")
        c.delete_team_kind("squads")
        c.team_board("classes")
        c.team_board("classes", "2026-W49", limit=10, after="x", board="course:sql")
        c.user_teams(7)
        c.user_teams(7, season="last-7d", board="course:sql")
        c.put_group("7a", access="public")
        c.put_group("7a", team="classes")
        c.put_group("7a", team=None)
        c.put_group("7a", name="7A", team=UNCHANGED)
    assert [(r.method, str(r.url).removeprefix("http://laurels.test")) for r in sent] == [
        ("GET", "/v1/admin/team-kinds"), ("PUT", "/v1/admin/team-kinds/squads"),
        ("PUT", "/v1/admin/team-kinds/classes"), ("DELETE", "/v1/admin/team-kinds/squads"),
        ("GET", "/v1/teams/classes/leaderboards/current?limit=100"),
        ("GET", "/v1/teams/classes/leaderboards/2026-W49?limit=10&after=x&board=course%3Asql"),
        ("GET", "/v1/users/7/teams?season=current"),
        ("GET", "/v1/users/7/teams?season=last-7d&board=course%3Asql"),
        *[("PUT", "/v1/groups/7a")] * 4]
    bodies = [json.loads(r.content) for r in sent if r.method == "PUT"]
    assert bodies == [{"aggregate": "top", "top": 5}, {},
                      {"access": "public"},  # team left out: unchanged
                      {"team": "classes"}, {"team": None},  # None is sent: no team kind
                      {"name": "7A"}]
