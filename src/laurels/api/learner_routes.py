"""HTTP routes of what a learner reads of their own (docs/contract.md,
Reads): their notifications (the list, marking them read, the live stream),
their boards of a week and the completions behind their score. Their neighbourhood on a board is
the fast lane's (api/fast.py); their groups are in api/group_routes.py."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import ValidationError

from laurels.api import schemas as s
from laurels.api.boards import BoardQuery, board_season
from laurels.api.clients import client_of
from laurels.api.dependencies import (
    learner_token,
    learner_token_or_query,
    small_json_body,
    time_zone,
)
from laurels.api.params import Cursor, Limit, SeasonPath, UserIdPath, path_season
from laurels.api.problems import JSONResponse, Problem
from laurels.api.state import api_state, services
from laurels.api.streams import notification_stream
from laurels.core.seasons import GLOBAL, PERIODS
from laurels.core.validation import ReadIn, describe

router = APIRouter()


@router.get("/v1/users/{user_id}/notifications", tags=["notifications"],
            responses={200: {"model": s.NotificationsOut}, **s.problems(401, 403, 422)})
async def get_notifications(request: Request, user_id: UserIdPath,
                            uid: int = Depends(learner_token)) -> Response:
    """A learner's durable notifications, newest first (at most 100)."""
    return JSONResponse(await services(request).notifications.newest(uid))


@router.post("/v1/users/{user_id}/notifications/read", tags=["notifications"],
             openapi_extra=s.body_schema(ReadIn),
             responses={200: {"model": s.ReadOut}, **s.problems(401, 403, 415, 422)})
async def post_notifications_read(request: Request, user_id: UserIdPath,
                                  uid: int = Depends(learner_token)) -> Response:
    """Mark some of the learner's notifications read."""
    raw = await small_json_body(request)
    try:
        body = ReadIn.model_validate(raw)
    except ValidationError as exc:
        raise Problem("validation_error", describe(exc)) from None
    return JSONResponse(await services(request).notifications.mark_read(uid, body.ids))


@router.get("/v1/users/{user_id}/notifications/events", tags=["notifications"],
            response_class=Response,
            responses={200: {"content": {"text/event-stream": {}}},
                       **s.problems(401, 403, 422, 503)})
async def notification_events(request: Request, user_id: UserIdPath,
                              uid: int = Depends(learner_token_or_query)) -> Response:
    """The learner's new notifications as server-sent events (`notification`)."""
    svc = services(request)
    return notification_stream(svc, uid,
                               client_of(request.scope, svc.settings.trusted_proxies,
                                         svc.settings.client_ipv6_prefix))


@router.get("/v1/users/{user_id}/boards", tags=["reads"],
            responses={200: {"model": s.LearnerBoardsOut}, **s.problems(401, 403, 422, 503)})
async def boards(request: Request, user_id: UserIdPath, uid: int = Depends(learner_token),
                 season: Annotated[str, Query(description="a week (`2026-W49`) or `current`, "
                                                          "each board's in its own zone")]
                 = "current") -> Response:
    """Every board on which the learner has a completion that counts in the
    week, with their rank, score and the board's total: the whole board
    first, then by kind and board (a learner token of that user, or admin)."""
    if path_season(season, PERIODS, time_zone(request)).period != "week":
        raise Problem("validation_error", "season: boards are listed by week (2026-W49 or "
                      "current)")
    return JSONResponse(await services(request).reads.learner_boards(uid, season))


@router.get("/v1/leaderboards/{season}/users/{user_id}/completions", tags=["reads"],
            responses={200: {"model": s.CompletionsOut}, **s.problems(401, 403, 404, 422, 503)})
async def completions(request: Request, season: SeasonPath, user_id: UserIdPath,
                      uid: int = Depends(learner_token), limit: Limit = 50,
                      after: Cursor = None, board: BoardQuery = GLOBAL) -> Response:
    """Why the score is what it is: the learner's completions in the season,
    newest first, each counted or voided; the counted points add up to
    `score` (a learner token of that user, or admin). On a board of a kind,
    only those tagged with it (`board`)."""
    the_season = await board_season(services(request), season, board)
    cursors = api_state(request).cursors
    owner = f"completions:{the_season.name}:{uid}"
    position = cursors.decode(owner, after) if after is not None else None
    body, last = await services(request).reads.completions(the_season, uid, limit, position)
    if last is not None:
        body["next"] = cursors.encode(owner, last)
    return JSONResponse(body)
