"""HTTP routes of operators (docs/contract.md, Admin): corrections (void,
restore), suspension, the audit log, rebuilds and verification. Webhook
deliveries are in api/webhook_routes.py."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import Response

from laurels.api import schemas as s
from laurels.api.boards import BoardQuery, board_season
from laurels.api.dependencies import admin_token, small_json_body, time_zone
from laurels.api.params import (
    Cursor,
    Limit,
    SeasonPath,
    UserIdPath,
    path_season,
    path_user_id,
    path_uuid,
    valid,
)
from laurels.api.problems import JSONResponse, Problem
from laurels.api.state import api_state, services
from laurels.core.seasons import GLOBAL, PERIODS
from laurels.core.validation import (
    UUID_RE,
    LearnerCorrectionIn,
    ReasonIn,
    parse_completion_id,
    validate_learner_correction,
    validate_reason,
)

CompletionIdPath = Annotated[str, Path(
    description="the completion's id", examples=["c-123"],
    json_schema_extra={"pattern": "^[A-Za-z0-9._:-]{1,128}$"})]
RebuildIdPath = Annotated[str, Path(description="a rebuild id (UUID)",
                                    json_schema_extra={"format": "uuid", "pattern": UUID_RE})]
AUDIT_CURSOR = "audit"

router = APIRouter()


async def reason(request: Request, required: bool) -> str | None:
    """The body's reason; restore and unsuspend may send no body at all."""
    if not required and not request.headers.get("content-type") \
            and request.headers.get("content-length", "0") == "0":
        return None
    return valid(validate_reason, await small_json_body(request), required).reason


def path_completion_id(text: str) -> str:
    return valid(parse_completion_id, text)


# -- corrections and suspension ---------------------------------------------------------------

@router.post("/v1/admin/completions/{completion_id}/void", tags=["admin"],
             dependencies=[Depends(admin_token)], openapi_extra=s.body_schema(ReasonIn),
             responses={200: {"model": s.CorrectionOut},
                        **s.problems(401, 403, 404, 415, 422, 503)})
async def void(request: Request, completion_id: CompletionIdPath) -> Response:
    """Void a completion: it stops counting on every board it counted on (every
    period, every group); a finalized season's archive is re-ranked. Voiding
    twice answers the same."""
    cid = path_completion_id(completion_id)
    why = await reason(request, required=True)
    return JSONResponse(await services(request).corrections.void(cid, why or ""))


@router.post("/v1/admin/completions/{completion_id}/restore", tags=["admin"],
             dependencies=[Depends(admin_token)], openapi_extra=s.body_schema(ReasonIn),
             responses={200: {"model": s.CorrectionOut},
                        **s.problems(401, 403, 404, 415, 422, 503)})
async def restore(request: Request, completion_id: CompletionIdPath) -> Response:
    """Restore a voided completion: it counts again (the body's reason is optional)."""
    cid = path_completion_id(completion_id)
    why = await reason(request, required=False)
    return JSONResponse(await services(request).corrections.restore(cid, why))


async def learner_correction(request: Request, user_id: str, voided: bool) -> Response:
    uid = path_user_id(user_id)
    empty = not voided and not request.headers.get("content-type") \
        and request.headers.get("content-length", "0") == "0"
    body = valid(validate_learner_correction, None if empty else await small_json_body(request),
                 voided)
    svc = services(request)
    board = body.board or GLOBAL
    if board == GLOBAL:
        season = path_season(body.season, PERIODS, time_zone(request)) if body.season else None
    elif body.season:  # that board's season, in its zone (404 for a kind not defined)
        season = await board_season(svc, body.season, board)
    else:
        await board_season(svc, "current", board)  # only that the board is one
        season = None
    return JSONResponse(await svc.corrections.correct_learner(
        uid, voided, body.reason, season, board))


@router.post("/v1/admin/users/{user_id}/void", tags=["admin"],
             dependencies=[Depends(admin_token)],
             openapi_extra=s.body_schema(LearnerCorrectionIn),
             responses={200: {"model": s.LearnerVoidedOut},
                        **s.problems(401, 403, 404, 410, 415, 422, 503)})
async def void_learner(request: Request, user_id: UserIdPath) -> Response:
    """Void every counted completion of a learner in `season` (any period's
    name), or every kept one: all or none, each as its own void (every
    board, archive, league zone, webhook), one audit entry with the count."""
    return await learner_correction(request, user_id, True)


@router.post("/v1/admin/users/{user_id}/restore", tags=["admin"],
             dependencies=[Depends(admin_token)],
             openapi_extra=s.body_schema(LearnerCorrectionIn),
             responses={200: {"model": s.LearnerRestoredOut},
                        **s.problems(401, 403, 404, 410, 415, 422, 503)})
async def restore_learner(request: Request, user_id: UserIdPath) -> Response:
    """Restore every voided completion of a learner in `season`, or every
    one (the reason is optional)."""
    return await learner_correction(request, user_id, False)


@router.post("/v1/admin/users/{user_id}/suspend", tags=["admin"],
             dependencies=[Depends(admin_token)], openapi_extra=s.body_schema(ReasonIn),
             responses={200: {"model": s.SuspendOut},
                        **s.problems(401, 403, 410, 415, 422, 503)})
async def suspend(request: Request, user_id: UserIdPath) -> Response:
    """Suspend a learner: off every public board and hint, like a hidden
    learner, whatever their own visibility, until unsuspended; their
    completions are still recorded and count again then."""
    uid = path_user_id(user_id)
    why = await reason(request, required=True)
    return JSONResponse(await services(request).learners.suspend(uid, True, why))


@router.post("/v1/admin/users/{user_id}/unsuspend", tags=["admin"],
             dependencies=[Depends(admin_token)], openapi_extra=s.body_schema(ReasonIn),
             responses={200: {"model": s.SuspendOut},
                        **s.problems(401, 403, 410, 415, 422, 503)})
async def unsuspend(request: Request, user_id: UserIdPath) -> Response:
    """Unsuspend a learner: their own visibility again (the reason is optional)."""
    uid = path_user_id(user_id)
    why = await reason(request, required=False)
    return JSONResponse(await services(request).learners.suspend(uid, False, why))


@router.get("/v1/admin/audit", tags=["admin"], dependencies=[Depends(admin_token)],
            responses={200: {"model": s.AuditOut}, **s.problems(401, 403, 422, 503)})
async def audit(request: Request, limit: Limit = 100, after: Cursor = None) -> Response:
    """Every admin action with its reason, newest first (`next` pages on)."""
    cursors = api_state(request).cursors
    after_id = cursors.decode(AUDIT_CURSOR, after)[0] if after is not None else None
    body, last = await services(request).corrections.audit_page(limit, after_id)
    if last is not None:
        body["next"] = cursors.encode(AUDIT_CURSOR, (last, 0, 0))
    return JSONResponse(body)


# -- rebuilds and verification ----------------------------------------------------------------

@router.post("/v1/admin/leaderboards/{season}/rebuild", tags=["admin"], status_code=202,
             dependencies=[Depends(admin_token)],
             responses={202: {"model": s.RebuildStartedOut}, **s.problems(401, 403, 404, 422, 503)})
async def post_rebuild(request: Request, season: SeasonPath,
                       board: BoardQuery = GLOBAL) -> Response:
    """Rebuild a season's board from PostgreSQL in the background, then switch.
    While one runs (in any process), a second request joins it: the answer
    names the running rebuild, so two builders never race."""
    named = await board_season(services(request), season, board)
    rebuild_id = await services(request).rebuilder.start_or_join(named)
    if rebuild_id is None:
        raise Problem("rebuilding", f"a rebuild of {named.label} is starting; retry shortly",
                      retry_after=1)
    return JSONResponse({"rebuild_id": rebuild_id, "season": named.label,
                         "board": named.board, "status": "running"}, status_code=202)


@router.get("/v1/admin/rebuilds/{rebuild_id}", tags=["admin"],
            dependencies=[Depends(admin_token)],
            responses={200: {"model": s.RebuildOut}, **s.problems(401, 403, 404, 422)})
async def get_rebuild(request: Request, rebuild_id: RebuildIdPath) -> Response:
    """The status of a rebuild."""
    status = await services(request).rebuilder.status(path_uuid(rebuild_id, "rebuild_id"))
    if status is None:
        raise Problem("not_found", "no such rebuild")
    return JSONResponse(status)


@router.get("/v1/admin/leaderboards/{season}/verify", tags=["admin"],
            dependencies=[Depends(admin_token)],
            responses={200: {"model": s.VerifyOut}, **s.problems(401, 403, 404, 422, 503)})
async def get_verify(request: Request, season: SeasonPath,
                     board: BoardQuery = GLOBAL) -> Response:
    """Compare the board in Redis with the sums in PostgreSQL."""
    named = await board_season(services(request), season, board)
    return JSONResponse((await services(request).verifier.verify(named)).body())
