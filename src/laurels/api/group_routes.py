"""HTTP routes of groups, group boards and friends boards (docs/contract.md,
Groups; `POST /v1/leaderboards/{season}/ranks`): parse, authorize, call
`groups.Groups`, answer."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Security
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials

from laurels.api import schemas as s
from laurels.api.cursors import Cursors
from laurels.api.problems import Problem
from laurels.api.routes import (
    SeasonPath,
    UserIdPath,
    _bearer,
    auth,
    board_stream,
    ingest_token,
    json_body,
    learner_token,
    path_season,
    runtime,
    token,
)
from laurels.groups import Groups
from laurels.validation import (
    GroupIn,
    Invalid,
    MembersIn,
    RanksIn,
    parse_group_id,
    validate_group,
    validate_members,
    validate_ranks,
)

GroupIdPath = Annotated[str, Path(
    description="a group id", examples=["class-7b"],
    json_schema_extra={"pattern": "^[A-Za-z0-9._:-]{1,64}$"})]
CURSOR = Query(None, max_length=512, description="the `next` cursor of the previous page")

router = APIRouter()


def groups(request: Request) -> Groups:
    return runtime(request).groups


def path_group(text: str) -> str:
    try:
        return parse_group_id(text)
    except Invalid as exc:
        raise Problem("validation_error", str(exc)) from None


def _valid(check: Any, raw: Any) -> Any:
    try:
        return check(raw)
    except Invalid as exc:
        raise Problem("validation_error", str(exc)) from None


async def group_reader(request: Request, group_id: GroupIdPath,
                       credentials: HTTPAuthorizationCredentials | None = Security(_bearer)
                       ) -> str:
    """Who may read a group's boards: anyone for a `public` group; for a
    `members` one, a member's learner token, or the ingest or admin token."""
    gid = path_group(group_id)
    if await groups(request).access(gid) == "public":
        return gid
    tok = credentials.credentials if credentials and credentials.credentials else None
    if not tok:
        raise Problem("unauthorized", "missing bearer token")
    a = await auth(request)
    if a.is_ingest(tok) or a.is_admin(tok):
        return gid
    sub = a.learner_sub(tok)
    if sub is None:
        raise Problem("unauthorized", "invalid or expired token")
    if not await groups(request).is_member(gid, sub):
        raise Problem("forbidden", "only the group's members read its boards")
    return gid


def _json(body: Any, status: int = 200) -> Response:
    from laurels.api.problems import JSONResponse

    return JSONResponse(body, status_code=status)


# -- groups -------------------------------------------------------------------

@router.put("/v1/groups/{group_id}", tags=["groups"], dependencies=[Depends(ingest_token)],
            openapi_extra=s.body_schema(GroupIn),
            responses={200: {"model": s.GroupOut}, **s.problems(401, 403, 415, 422, 503)})
async def put_group(request: Request, group_id: GroupIdPath) -> Response:
    """Create a group, or change its name or access."""
    gid = path_group(group_id)
    body = _valid(validate_group, await json_body(request))
    return _json(await groups(request).put(gid, body))


@router.get("/v1/groups/{group_id}", tags=["groups"], dependencies=[Depends(ingest_token)],
            responses={200: {"model": s.GroupOut}, **s.problems(401, 403, 404, 422, 503)})
async def get_group(request: Request, group_id: GroupIdPath) -> Response:
    return _json(await groups(request).get(path_group(group_id)))


@router.delete("/v1/groups/{group_id}", tags=["groups"], status_code=204,
               dependencies=[Depends(ingest_token)],
               responses=s.problems(401, 403, 404, 422, 503))
async def delete_group(request: Request, group_id: GroupIdPath) -> Response:
    """Delete a group and its memberships; its boards are gone."""
    await groups(request).delete(path_group(group_id))
    return Response(status_code=204)


@router.post("/v1/groups/{group_id}/members", tags=["groups"],
             dependencies=[Depends(ingest_token)], openapi_extra=s.body_schema(MembersIn),
             responses={200: {"model": s.MembersOut}, **s.problems(401, 403, 404, 415, 422,
                                                                   503)})
async def post_members(request: Request, group_id: GroupIdPath) -> Response:
    """Add and remove members (up to 10,000 ids in all; idempotent; erased
    learners are refused)."""
    gid = path_group(group_id)
    body = _valid(validate_members, await json_body(request))
    return _json(await groups(request).change_members(gid, body))


@router.get("/v1/users/{user_id}/groups", tags=["groups"],
            responses={200: {"model": s.UserGroupsOut}, **s.problems(401, 403, 422, 503)})
async def get_user_groups(request: Request, user_id: UserIdPath,
                          uid: int = Depends(learner_token)) -> Response:
    """The groups a learner is in (their own learner token, or admin)."""
    return _json(await groups(request).of_user(uid))


# -- boards -------------------------------------------------------------------

@router.get("/v1/groups/{group_id}/leaderboards/{season}", tags=["groups"],
            responses={200: {"model": s.GroupBoardOut},
                       **s.problems(401, 403, 404, 422, 503)})
async def get_group_board(request: Request, season: SeasonPath,
                          gid: str = Depends(group_reader),
                          limit: int = Query(100, ge=1, le=1000),
                          after: str | None = CURSOR) -> Response:
    """A group's board: its members ranked among themselves (ranks from 1),
    with the whole board's tie policy and privacy; `next` pages on."""
    the_season = path_season(season)
    cursors: Cursors = request.app.state.cursors
    owner = f"group:{gid}:{the_season.name}"
    position = cursors.decode(owner, after) if after is not None else None
    body, last = await groups(request).board_top(gid, the_season, limit, position)
    if last is not None:
        body["next"] = cursors.encode(owner, last)
    return _json(body)


@router.get("/v1/groups/{group_id}/leaderboards/{season}/users/{user_id}", tags=["groups"],
            responses={200: {"model": s.AroundOut}, **s.problems(401, 403, 404, 422, 503)})
async def get_group_around(request: Request, group_id: GroupIdPath, season: SeasonPath,
                           user_id: UserIdPath, uid: int = Depends(learner_token),
                           radius: int = Query(5, ge=0, le=50)) -> Response:
    """A member's neighbourhood within the group (that member's token, or admin)."""
    return _json(await groups(request).board_around(path_group(group_id),
                                                    path_season(season), uid, radius))


@router.get("/v1/groups/{group_id}/leaderboards/{season}/events", tags=["groups"],
            response_class=Response,
            responses={200: {"content": {"text/event-stream": {}}},
                       **s.problems(401, 403, 404, 422, 503)})
async def group_events(request: Request, season: SeasonPath,
                       gid: str = Depends(group_reader)) -> Response:
    """The season's refresh hints, with the group board's access: refetch
    the group's board on each."""
    return board_stream(request.app.state.hub, runtime(request).settings, season)


@router.post("/v1/leaderboards/{season}/ranks", tags=["reads"],
             openapi_extra=s.body_schema(RanksIn),
             responses={200: {"model": s.FriendsOut}, **s.problems(401, 403, 415, 422, 503)})
async def post_ranks(request: Request, season: SeasonPath,
                     tok: str = Depends(token)) -> Response:
    """A friends board: up to 1,000 learners ranked among themselves, each
    with their rank on the whole board (a learner token, or ingest)."""
    a = await auth(request)
    caller: int | None = None
    if not (a.is_ingest(tok) or a.is_admin(tok)):
        caller = a.learner_sub(tok)
        if caller is None:
            raise Problem("unauthorized", "invalid or expired token")
    body = _valid(validate_ranks, await json_body(request))
    return _json(await groups(request).friends(path_season(season), body.user_ids, caller))
