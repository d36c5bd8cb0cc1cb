"""HTTP routes of groups, group boards and friends boards (docs/contract.md,
Groups; `POST /v1/leaderboards/{season}/ranks`): parse, authorize, call
`groups.Groups`, answer."""

from __future__ import annotations

import asyncio
from typing import Annotated

import orjson
from fastapi import APIRouter, Depends, Path, Request, Security
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials

from laurels.api import schemas as s
from laurels.api.boards import BoardQuery, board_season
from laurels.api.caches import Cached, not_modified
from laurels.api.clients import client_of
from laurels.api.dependencies import (
    auth,
    bearer_scheme,
    ingest_token,
    json_body,
    learner_token,
    small_json_body,
    token,
)
from laurels.api.params import (
    Cursor,
    Limit,
    Radius,
    SeasonPath,
    UserIdPath,
    valid,
)
from laurels.api.problems import JSONResponse, Problem
from laurels.api.state import api_state, services
from laurels.api.streams import group_stream
from laurels.core import failpoints
from laurels.core.seasons import GLOBAL, Season
from laurels.core.validation import (
    GroupIn,
    MembersIn,
    RanksIn,
    parse_group_id,
    validate_group,
    validate_members,
    validate_ranks,
)
from laurels.reads.groups import Groups

GroupIdPath = Annotated[str, Path(
    description="a group id", examples=["class-7b"],
    json_schema_extra={"pattern": "^[A-Za-z0-9._:-]{1,64}$"})]

router = APIRouter()


def groups(request: Request) -> Groups:
    return services(request).groups


def path_group(text: str) -> str:
    return valid(parse_group_id, text)


async def group_reader(request: Request, group_id: GroupIdPath,
                       credentials: HTTPAuthorizationCredentials | None = Security(
                           bearer_scheme)) -> str:
    """Who may read a group's boards: anyone for a `public` group; for a
    `members` one, a member's learner token, or the ingest or admin token.

    A caller who may not read a group cannot tell it from no group
    (docs/groups.md): without a valid token both are 401, with a learner
    token of a non-member both are 404 with the same detail, each after the
    same one query. The ingest and admin tokens read every group, so they
    are told when one does not exist."""
    gid = path_group(group_id)
    tok = credentials.credentials if credentials and credentials.credentials else None
    a = await auth(request)
    writer = tok is not None and (a.is_ingest(tok) or a.is_admin(tok))
    sub = a.learner_sub(tok) if tok is not None and not writer else None
    found = await groups(request).read_access(gid, sub)
    if found is not None:
        access, member = found
        if access == "public" or writer or member:
            request.state.group_access = access
            request.state.group_reader = "writer" if writer else sub  # its streams check again
            return gid
    if tok is None:
        raise Problem("unauthorized", "missing bearer token")
    if not writer and sub is None:
        raise Problem("unauthorized", a.refusal(tok))
    raise Problem("not_found", f"no group {gid}")


# -- groups -------------------------------------------------------------------

@router.put("/v1/groups/{group_id}", tags=["groups"], dependencies=[Depends(ingest_token)],
            openapi_extra=s.body_schema(GroupIn),
            responses={200: {"model": s.GroupOut}, **s.problems(401, 403, 415, 422, 503)})
async def put_group(request: Request, group_id: GroupIdPath) -> Response:
    """Create a group, or change its name or access."""
    gid = path_group(group_id)
    body = valid(validate_group, await small_json_body(request))
    return JSONResponse(await groups(request).put(gid, body))


@router.get("/v1/groups/{group_id}", tags=["groups"], dependencies=[Depends(ingest_token)],
            responses={200: {"model": s.GroupOut}, **s.problems(401, 403, 404, 422, 503)})
async def get_group(request: Request, group_id: GroupIdPath) -> Response:
    return JSONResponse(await groups(request).get(path_group(group_id)))


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
    body = valid(validate_members, await json_body(request))
    return JSONResponse(await groups(request).change_members(gid, body))


@router.get("/v1/users/{user_id}/groups", tags=["groups"],
            responses={200: {"model": s.LearnerGroupsOut}, **s.problems(401, 403, 422, 503)})
async def get_user_groups(request: Request, user_id: UserIdPath,
                          uid: int = Depends(learner_token)) -> Response:
    """The groups a learner is in (their own learner token, or admin)."""
    return JSONResponse(await groups(request).of_learner(uid))


# -- boards -------------------------------------------------------------------

@router.get("/v1/groups/{group_id}/leaderboards/{season}", tags=["groups"],
            responses={200: {"model": s.GroupBoardOut}, **s.problems(401, 404, 422, 429, 503)})
async def get_group_board(request: Request, season: SeasonPath,
                          gid: str = Depends(group_reader),
                          limit: Limit = 100, after: Cursor = None,
                          board: BoardQuery = GLOBAL) -> Response:
    """A group's board: its members ranked among themselves (ranks from 1),
    with the whole board's tie policy and privacy; `next` pages on."""
    the_season = await board_season(services(request), season, board)
    state = api_state(request)
    cursors = state.cursors
    owner = f"group:{gid}:{the_season.name}"
    # What the cache does not hold is computed from every member's standing:
    # a few at once per client (issue 64).
    svc = services(request)
    client = client_of(request.scope, svc.settings.trusted_proxies,
                       svc.settings.client_ipv6_prefix)
    if after is not None:  # later pages are not cached
        with state.group_pages.turn(client):
            await failpoints.pause("group_page_computed")
            body, last, _ = await groups(request).board_top(
                gid, the_season, limit, cursors.decode(owner, after))
        if last is not None:
            body["next"] = cursors.encode(owner, last)
        return _etagged(request, Cached(orjson.dumps(body), 0.0))
    # The same top page asked for while it is computed waits for that one
    # computation (and takes no turn): a cold page read by many at once costs
    # one computation, and one client's many connections are not refused.
    key = (gid, the_season.name, limit)
    pending = state.group_fills.get(key)
    if pending is not None:
        await failpoints.pause("group_page_awaited")
        return _etagged(request, await asyncio.shield(pending))
    done: asyncio.Future[Cached] = asyncio.get_running_loop().create_future()
    state.group_fills[key] = done
    try:
        cached = await _group_top(request, gid, the_season, limit, owner, client)
    except BaseException as exc:
        done.set_exception(exc)
        done.exception()  # (retrieved: a page nobody waited for logs nothing)
        raise
    finally:
        state.group_fills.pop(key, None)
    done.set_result(cached)
    return _etagged(request, cached)


async def _group_top(request: Request, gid: str, the_season: Season, limit: int, owner: str,
                     client: str) -> Cached:
    """A group's top page computed (one of the client's turns) and cached."""
    state = api_state(request)
    cache = state.group_cache
    with state.group_pages.turn(client):
        fill = cache.begin(gid, the_season.name)
        try:
            await failpoints.pause("group_page_computed")
            body, last, members = await groups(request).board_top(gid, the_season, limit, None)
        except BaseException:
            cache.end(fill)
            raise
    if last is not None:
        body["next"] = state.cursors.encode(owner, last)
    return cache.put(fill, limit, orjson.dumps(body), request.state.group_access, members)


def _etagged(request: Request, page: Cached) -> Response:
    """A page with its ETag, or `304` when `If-None-Match` names it (as the
    fast lane answers a cached one)."""
    headers = {"etag": page.etag.decode()}
    if not_modified(request.scope["headers"], page.etag):
        return Response(status_code=304, headers=headers)
    return Response(page.body, media_type="application/json", headers=headers)


@router.get("/v1/groups/{group_id}/leaderboards/{season}/users/{user_id}", tags=["groups"],
            responses={200: {"model": s.GroupAroundOut},
                       **s.problems(401, 403, 404, 422, 503)})
async def get_group_around(request: Request, group_id: GroupIdPath, season: SeasonPath,
                           user_id: UserIdPath, uid: int = Depends(learner_token),
                           radius: Radius = 5, board: BoardQuery = GLOBAL) -> Response:
    """A member's neighbourhood within the group (that member's token, or admin)."""
    the_season = await board_season(services(request), season, board)
    return JSONResponse(await groups(request).board_around(path_group(group_id), the_season,
                                                           uid, radius))


@router.get("/v1/groups/{group_id}/leaderboards/{season}/events", tags=["groups"],
            response_class=Response,
            responses={200: {"content": {"text/event-stream": {}}},
                       **s.problems(401, 404, 422, 503)})
async def group_events(request: Request, season: SeasonPath,
                       gid: str = Depends(group_reader), board: BoardQuery = GLOBAL) -> Response:
    """The season's refresh hints that concern the group's members, with the
    group board's access: refetch the group's board on each."""
    svc = services(request)
    the_season = await board_season(svc, season, board)
    return group_stream(svc, gid, the_season,
                        client_of(request.scope, svc.settings.trusted_proxies,
                                  svc.settings.client_ipv6_prefix),
                        request.state.group_reader)


@router.post("/v1/leaderboards/{season}/ranks", tags=["reads"],
             openapi_extra=s.body_schema(RanksIn),
             responses={200: {"model": s.FriendsOut},
                        **s.problems(401, 403, 404, 415, 422, 503)})
async def post_ranks(request: Request, season: SeasonPath,
                     tok: str = Depends(token), board: BoardQuery = GLOBAL) -> Response:
    """A friends board: up to 1,000 learners ranked among themselves, each
    with their rank on the whole board (a learner token, or ingest)."""
    a = await auth(request)
    caller: int | None = None
    if not (a.is_ingest(tok) or a.is_admin(tok)):
        caller = a.learner_sub(tok)
        if caller is None:
            raise Problem("unauthorized", a.refusal(tok))
    body = valid(validate_ranks, await small_json_body(request))
    the_season = await board_season(services(request), season, board)
    return JSONResponse(await groups(request).friends(the_season, body.user_ids, caller))
