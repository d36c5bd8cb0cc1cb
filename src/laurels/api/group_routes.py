"""HTTP routes of groups, group boards and friends boards (docs/contract.md,
Groups; `POST /v1/leaderboards/{season}/ranks`): parse, authorize, call
`groups.Groups`, answer."""

from __future__ import annotations

import logging
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Path, Request, Security
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials

from laurels.api import schemas as s
from laurels.api.caches import GroupCache
from laurels.api.cursors import Cursors
from laurels.api.params import Cursor, Limit, Radius, path_season, valid
from laurels.api.problems import Problem
from laurels.api.routes import (
    SeasonPath,
    UserIdPath,
    _bearer,
    auth,
    ingest_token,
    json_body,
    learner_token,
    periods,
    runtime,
    stream_budget,
    token,
)
from laurels.api.sse import EventStream, event
from laurels.errors import DomainError
from laurels.groups import Groups
from laurels.hub import CHANGED_PER_SECOND, Hub
from laurels.settings import Settings
from laurels.validation import (
    GroupIn,
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

router = APIRouter()
log = logging.getLogger("laurels.api")


def groups(request: Request) -> Groups:
    return runtime(request).groups


def path_group(text: str) -> str:
    return valid(parse_group_id, text)


async def group_reader(request: Request, group_id: GroupIdPath,
                       credentials: HTTPAuthorizationCredentials | None = Security(_bearer)
                       ) -> str:
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
            return gid
    if tok is None:
        raise Problem("unauthorized", "missing bearer token")
    if not writer and sub is None:
        raise Problem("unauthorized", a.refusal(tok))
    raise DomainError("not_found", f"no group {gid}")


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
    body = valid(validate_group, await json_body(request))
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
    body = valid(validate_members, await json_body(request))
    return _json(await groups(request).change_members(gid, body))


@router.get("/v1/users/{user_id}/groups", tags=["groups"],
            responses={200: {"model": s.UserGroupsOut}, **s.problems(401, 403, 422, 503)})
async def get_user_groups(request: Request, user_id: UserIdPath,
                          uid: int = Depends(learner_token)) -> Response:
    """The groups a learner is in (their own learner token, or admin)."""
    return _json(await groups(request).of_user(uid))


# -- boards -------------------------------------------------------------------

@router.get("/v1/groups/{group_id}/leaderboards/{season}", tags=["groups"],
            responses={200: {"model": s.GroupBoardOut}, **s.problems(401, 404, 422, 503)})
async def get_group_board(request: Request, season: SeasonPath,
                          gid: str = Depends(group_reader),
                          limit: Limit = 100, after: Cursor = None) -> Response:
    """A group's board: its members ranked among themselves (ranks from 1),
    with the whole board's tie policy and privacy; `next` pages on."""
    the_season = path_season(season, periods(request))
    cursors: Cursors = request.app.state.cursors
    owner = f"group:{gid}:{the_season.name}"
    if after is not None:  # later pages are not cached
        body, last, _ = await groups(request).board_top(
            gid, the_season, limit, cursors.decode(owner, after))
        if last is not None:
            body["next"] = cursors.encode(owner, last)
        return _json(body)
    cache: GroupCache = request.app.state.group_cache
    fill = cache.begin(gid, the_season.name)
    try:
        body, last, members = await groups(request).board_top(gid, the_season, limit, None)
    except BaseException:
        cache.end(fill)
        raise
    if last is not None:
        body["next"] = cursors.encode(owner, last)
    cached = cache.put(fill, limit, orjson.dumps(body), request.state.group_access, members)
    return Response(cached.body, media_type="application/json",
                    headers={"etag": cached.etag.decode()})


@router.get("/v1/groups/{group_id}/leaderboards/{season}/users/{user_id}", tags=["groups"],
            responses={200: {"model": s.AroundOut}, **s.problems(401, 403, 404, 422, 503)})
async def get_group_around(request: Request, group_id: GroupIdPath, season: SeasonPath,
                           user_id: UserIdPath, uid: int = Depends(learner_token),
                           radius: Radius = 5) -> Response:
    """A member's neighbourhood within the group (that member's token, or admin)."""
    the_season = path_season(season, periods(request))
    return _json(await groups(request).board_around(path_group(group_id), the_season, uid,
                                                    radius))


@router.get("/v1/groups/{group_id}/leaderboards/{season}/events", tags=["groups"],
            response_class=Response,
            responses={200: {"content": {"text/event-stream": {}}},
                       **s.problems(401, 404, 422, 503)})
async def group_events(request: Request, season: SeasonPath,
                       gid: str = Depends(group_reader)) -> Response:
    """The season's refresh hints that concern the group's members, with the
    group board's access: refetch the group's board on each."""
    return group_stream(request.app.state.hub, groups(request), runtime(request).settings,
                        gid, season)


def group_stream(hub: Hub, the_groups: Groups, settings: Settings, gid: str,
                 season: str) -> Response:
    """A group board's event stream: the hub routes hints to it by member
    (group_index.py); its members are (re)loaded into the index whenever they
    are not loaded, before it says `ready` and after each change."""
    name = path_season(season, settings.periods).name
    stream_budget(hub, settings)
    listener = hub.listen_group(gid, name)

    async def load() -> None:
        """Load the members if they are not; an unloaded group gets every hint."""
        if hub.index.is_loaded(gid):
            return
        version = hub.index.version(gid)
        try:
            hub.index.load(gid, await the_groups.member_ids(gid), version)
        except DomainError:  # the group was deleted: its boards are gone
            listener.closed = True
            listener.wake.set()
        except Exception as exc:  # a store error: try again on the next wake
            log.warning("members of group %s not loaded: %s", gid, exc)

    async def ready() -> bytes:
        await hub.hinted(name)
        await load()
        return event("ready", orjson.dumps({"season": name, "group_id": gid}))

    async def due() -> list[bytes]:
        out = [event(e["event"], e["data"]) for e in listener.take()]
        await load()
        return out

    return EventStream(listener, ready, due, lambda: hub.unlisten_group(listener),
                       min_gap_seconds=1 / CHANGED_PER_SECOND)


@router.post("/v1/leaderboards/{season}/ranks", tags=["reads"],
             openapi_extra=s.body_schema(RanksIn),
             responses={200: {"model": s.FriendsOut},
                        **s.problems(401, 403, 404, 415, 422, 503)})
async def post_ranks(request: Request, season: SeasonPath,
                     tok: str = Depends(token)) -> Response:
    """A friends board: up to 1,000 learners ranked among themselves, each
    with their rank on the whole board (a learner token, or ingest)."""
    a = await auth(request)
    caller: int | None = None
    if not (a.is_ingest(tok) or a.is_admin(tok)):
        caller = a.learner_sub(tok)
        if caller is None:
            raise Problem("unauthorized", a.refusal(tok))
    body = valid(validate_ranks, await json_body(request))
    the_season = path_season(season, periods(request))
    return _json(await groups(request).friends(the_season, body.user_ids, caller))
