"""HTTP routes of weekly leagues (docs/contract.md, Leagues): a learner's
league of a week, a cohort's board and its hints, a learner's decided
weeks, a week's summary for operators. Parse, authorize, call
`leagues.Leagues`, answer.

With leagues off (no LAURELS_LEAGUE_TIERS) every one of them is `404
not_found`, before its token is looked at: an endpoint that is not served
answers as a path that does not exist does.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response

from laurels.api import schemas as s
from laurels.api.clients import client_of
from laurels.api.dependencies import (
    admin_token,
    auth,
    learner_or_platform_token,
    time_zone,
    token,
)
from laurels.api.params import Cursor, Limit, UserIdPath, path_season
from laurels.api.problems import JSONResponse, Problem
from laurels.api.state import api_state, services
from laurels.api.streams import cohort_stream
from laurels.core.seasons import PERIODS, Season
from laurels.core.shapes import CohortBoard
from laurels.leagues.cohorts import Leagues
from laurels.leagues.rules import Cohort

WEEK_PATTERN = "^([0-9]{4}-W[0-9]{2}|current)$"
WEEK_DESCRIPTION = "a week `YYYY-Www` (UTC), or `current` (this week)"
COHORT_ID_MAX = 64

WeekPath = Annotated[str, Path(description=WEEK_DESCRIPTION, examples=["current", "2026-W49"],
                               json_schema_extra={"pattern": WEEK_PATTERN})]
WeekQuery = Annotated[str, Query(description=WEEK_DESCRIPTION, examples=["current", "2026-W49"],
                                 json_schema_extra={"pattern": WEEK_PATTERN})]
CohortIdPath = Annotated[str, Path(
    description="a cohort's id, as the API gave it (opaque, at most 64 characters)",
    examples=["2026-W49.0.3"], json_schema_extra={"maxLength": COHORT_ID_MAX})]


def leagues(request: Request) -> Leagues:
    return services(request).leagues


async def leagues_on(request: Request) -> None:
    """404 on every league endpoint while leagues are off."""
    leagues(request).require()


router = APIRouter(tags=["leagues"], dependencies=[Depends(leagues_on)])


def path_week(text: str, request: Request) -> Season:
    """A week of the URL (or `current`): a malformed season, or one of
    another period (`2026-11`, even when months are not configured), is 422."""
    return path_season(text, PERIODS, time_zone(request))


def path_cohort_id(text: str) -> str:
    """A cohort id is opaque: one the API never gives is unknown (404), but
    one that cannot be an id at all is malformed (422)."""
    if not 1 <= len(text) <= COHORT_ID_MAX:
        raise Problem("validation_error",
                      f"cohort_id: at most {COHORT_ID_MAX} characters, as the API gave it")
    return text


async def cohort_caller(request: Request, tok: str = Depends(token)) -> int | None:
    """Who reads a cohort: the ingest or admin token (None), or a learner
    (their id; the route checks they are a member). Else 401."""
    a = await auth(request)
    if a.is_ingest(tok) or a.is_admin(tok):
        return None
    sub = a.learner_sub(tok)
    if sub is None:
        raise Problem("unauthorized", a.refusal(tok))
    return sub


async def readable_cohort(request: Request, season: str, cohort_id: str,
                          caller: int | None) -> tuple[CohortBoard, Cohort]:
    """The cohort's board, for a caller who may read it: unknown is 404, a
    learner who is not a member 403 (docs/contract.md: a cohort is no
    secret, unlike a group)."""
    body, cohort = await leagues(request).cohort(path_week(season, request),
                                                 path_cohort_id(cohort_id), caller)
    if caller is not None and caller not in await leagues(request).members(cohort):
        raise Problem("forbidden", "only the cohort's members (or the ingest or admin token) "
                                   "read its board")
    return body, cohort


# -- a learner's league ------------------------------------------------------------------------

@router.get("/v1/users/{user_id}/league",
            responses={200: {"model": s.LeagueOut}, **s.problems(401, 403, 404, 422, 503)})
async def get_league(request: Request, user_id: UserIdPath,
                     uid: int = Depends(learner_or_platform_token),
                     season: WeekQuery = "current") -> Response:
    """A learner's league of a week (their learner token, admin, or the
    platform's ingest token, for the platform's own app): their
    tier, `none`, `pending` (an earlier week of theirs is not decided yet)
    or `placed` with their cohort's board (a `zone` on each entry) and
    their own standing, and the week's result once it is decided."""
    return JSONResponse(await leagues(request).learner(uid, path_week(season, request)))


@router.get("/v1/users/{user_id}/league/history",
            responses={200: {"model": s.LeagueHistoryOut},
                       **s.problems(401, 403, 404, 422, 503)})
async def get_league_history(request: Request, user_id: UserIdPath,
                             uid: int = Depends(learner_or_platform_token), limit: Limit = 20,
                             after: Cursor = None) -> Response:
    """A learner's decided weeks, newest first (their learner token, admin,
    or ingest); `next` pages on."""
    cursors = api_state(request).cursors
    owner = f"league_history:{uid}"
    week = None
    if after is not None:  # a cursor seals the last week shown, as (year, week number)
        year, number, _ = cursors.decode(owner, after)
        week = f"{year:04d}-W{number:02d}"
    body, last = await leagues(request).history(uid, limit, week)
    if last is not None:
        year_text, number_text = last.split("-W")
        body["next"] = cursors.encode(owner, (int(year_text), int(number_text), 0))
    return JSONResponse(body)


# -- cohorts -------------------------------------------------------------------------------------

@router.get("/v1/leagues/{season}/cohorts/{cohort_id}",
            responses={200: {"model": s.CohortOut}, **s.problems(401, 403, 404, 422, 503)})
async def get_cohort(request: Request, season: WeekPath, cohort_id: CohortIdPath,
                     caller: int | None = Depends(cohort_caller)) -> Response:
    """A cohort's board, ranked like a group board on the week's board, a
    `zone` on each entry (a member's learner token, or ingest or admin)."""
    body, _ = await readable_cohort(request, season, cohort_id, caller)
    return JSONResponse(body)


@router.get("/v1/leagues/{season}/cohorts/{cohort_id}/events", response_class=Response,
            responses={200: {"content": {"text/event-stream": {}}},
                       **s.problems(401, 403, 404, 422, 503)})
async def cohort_events(request: Request, season: WeekPath, cohort_id: CohortIdPath,
                        caller: int | None = Depends(cohort_caller)) -> Response:
    """The week's refresh hints that concern the cohort's members, with the
    cohort board's access (the token in the `Authorization` header):
    refetch the cohort's board on each."""
    _, cohort = await readable_cohort(request, season, cohort_id, caller)
    svc = services(request)
    client = client_of(request.scope, svc.settings.trusted_proxies,
                       svc.settings.client_ipv6_prefix)
    return cohort_stream(svc, cohort, client, caller)


# -- operators ----------------------------------------------------------------------------------

@router.get("/v1/admin/leagues/{season}", dependencies=[Depends(admin_token)],
            responses={200: {"model": s.LeagueSummaryOut},
                       **s.problems(401, 403, 404, 422, 503)})
async def get_league_summary(request: Request, season: WeekPath) -> Response:
    """A week's leagues by tier: cohorts, members, and once the week is
    decided, how many went up and down (admin token)."""
    return JSONResponse(await leagues(request).summary(path_week(season, request)))


@router.get("/v1/admin/leagues/{season}/cohorts", dependencies=[Depends(admin_token)],
            responses={200: {"model": s.CohortListOut},
                       **s.problems(401, 403, 404, 422, 503)})
async def get_league_cohorts(request: Request, season: WeekPath,
                             tier: Annotated[str | None, Query(
                                 description="one tier's cohorts (its name)")] = None,
                             limit: Limit = 100, after: Cursor = None) -> Response:
    """A week's cohorts, by tier then cohort: their members and whether the
    week is decided (admin token); `next` pages on."""
    cursors = api_state(request).cursors
    week = path_week(season, request)
    owner = f"league_cohorts:{week.name}:{tier or ''}"
    position = None
    if after is not None:
        t, c, _ = cursors.decode(owner, after)
        position = (t, c)
    body, last = await leagues(request).cohorts(week, tier, limit, position)
    if last is not None:
        body["next"] = cursors.encode(owner, (last[0], last[1], 0))
    return JSONResponse(body)
