"""HTTP routes of team boards (CONTRACT.md, "Team boards"): an operator
defines the team kinds, anyone reads a kind's teams ranked on a board and
season, a learner reads their own teams (lifecycle/teams.py, reads/teams.py
hold the rules)."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Path, Query, Request, Security
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials

from laurels.api import schemas as s
from laurels.api import team_schemas as t
from laurels.api.boards import BoardQuery, board_season
from laurels.api.dependencies import (
    admin_token,
    auth,
    bearer_scheme,
    learner_token,
    small_json_body,
)
from laurels.api.params import Cursor, Limit, UserIdPath
from laurels.api.problems import JSONResponse, Problem
from laurels.api.state import api_state, services
from laurels.lifecycle.team_rules import TeamKind
from laurels.reads.boards import iso
from laurels.reads.teams import Caller

TeamPath = Annotated[str, Path(
    description="the team kind's name", examples=["classes"],
    json_schema_extra={"pattern": "^[a-z][a-z0-9_-]{0,31}$"})]
TeamSeasonPath = Annotated[str, Path(
    description="a season of a configured period of the board (`current`, `2026-W49`, "
                "`last-7d`, ...), in the board's time zone", examples=["current"])]

router = APIRouter()


def kind_body(kind: TeamKind) -> dict[str, Any]:
    return {"team": kind.team, "title": kind.title, "aggregate": kind.aggregate,
            "top": kind.top, "created_at": iso(kind.created_at)}


@router.put("/v1/admin/team-kinds/{team}", tags=["teams"],
            dependencies=[Depends(admin_token)], openapi_extra=s.body_schema(t.TeamKindIn),
            responses={200: {"model": t.TeamKindOut}, 201: {"model": t.TeamKindOut},
                       **s.problems(401, 403, 409, 413, 415, 422, 503)})
async def put_team_kind(request: Request, team: TeamPath) -> Response:
    """Define a team kind (`201`), or give an existing one another title
    (`200`); another `aggregate` or `top` is `409 kind_conflict`. A group
    joins it with `"team"` on its `PUT`."""
    body = await small_json_body(request)
    if not isinstance(body, dict):
        raise Problem("validation_error", "the body must be a JSON object")
    defined, created = await services(request).teams.define(team, body)
    return JSONResponse(kind_body(defined), status_code=201 if created else 200)


@router.get("/v1/admin/team-kinds", tags=["teams"], dependencies=[Depends(admin_token)],
            responses={200: {"model": t.TeamKindsOut}, **s.problems(401, 403, 503)})
async def get_team_kinds(request: Request) -> Response:
    """Every team kind, by name (an addition of this implementation: the
    console's and the CLI's list)."""
    kinds = await services(request).teams.all()
    return JSONResponse({"team_kinds": [kind_body(k) for k in kinds]})


@router.delete("/v1/admin/team-kinds/{team}", tags=["teams"], status_code=204,
               dependencies=[Depends(admin_token)],
               responses={**s.problems(401, 403, 404, 422, 503)})
async def delete_team_kind(request: Request, team: TeamPath) -> Response:
    """Delete a team kind: its groups are in no team kind any more, its
    boards are gone. Not defined: `404`."""
    await services(request).teams.delete(team)
    return Response(status_code=204)


async def caller(request: Request, credentials: HTTPAuthorizationCredentials | None = Security(
        bearer_scheme)) -> Caller:
    """Who reads a team board: no token (None), the ingest or admin token
    ("platform"), or a learner (their id); any other token is `401`."""
    tok = credentials.credentials if credentials and credentials.credentials else None
    if tok is None:
        return None
    a = await auth(request)
    if a.is_ingest(tok) or a.is_admin(tok):
        return "platform"
    sub = a.learner_sub(tok)
    if sub is None:
        raise Problem("unauthorized", a.refusal(tok))
    return sub


def cursor_board(team: str, season: str, board: str) -> str:
    return f"team:{team}:{board}:{season}"


@router.get("/v1/teams/{team}/leaderboards/{season}", tags=["teams"],
            responses={200: {"model": t.TeamBoardOut}, **s.problems(401, 404, 422, 503)})
async def get_team_board(request: Request, team: TeamPath, season: TeamSeasonPath,
                         board: BoardQuery = "global", limit: Limit = 100,
                         after: Cursor = None, who: Caller = Depends(caller)) -> Response:
    """A team kind's teams ranked on a board and season by the aggregate of
    their current members' scores (ties share a rank). A members-only group
    is listed with `group_id` and `name` null to a caller who may not read
    it."""
    svc, state = services(request), api_state(request)
    named = await board_season(svc, season, board)
    key = cursor_board(team, named.name, named.board)
    offset = state.cursors.decode(key, after)[0] if after else 0
    # Pages of callers who are no learner (no token: the embed's; the
    # platform's) are kept until a hint of the season or a group change.
    cached = (team, offset, limit, who) if not isinstance(who, int) else None
    if cached is not None and (hit := state.team_cache.get(named.name, cached)) is not None:
        return Response(hit.body, media_type="application/json")
    generation = state.team_cache.generation(named.name)
    body, following = await svc.team_reads.page(team, named, offset, limit, who)
    if following is not None:
        body["next"] = state.cursors.encode(key, (following, 0, 0))
    if cached is None:
        return JSONResponse(body)
    return Response(state.team_cache.put(named.name, cached, orjson.dumps(body), generation).body,
                    media_type="application/json")


@router.get("/v1/users/{user_id}/teams", tags=["teams"],
            responses={200: {"model": t.LearnerTeamsOut}, **s.problems(401, 403, 404, 422, 503)})
async def get_user_teams(request: Request, user_id: UserIdPath,
                         season: Annotated[str, Query(
                             description="a season of the board (`current`, `2026-W49`, "
                                         "`last-7d`, ...)")] = "current",
                         board: BoardQuery = "global",
                         uid: int = Depends(learner_token)) -> Response:
    """The learner's teams on a board and season: each team's rank, score
    and count, and what the learner's points add to it (their own learner
    token, or admin)."""
    svc = services(request)
    named = await board_season(svc, season, board)
    return JSONResponse(await svc.team_reads.of_learner(uid, named))
