"""HTTP routes of corrections (docs/contract.md, Admin: void, restore,
suspend, unsuspend, the audit log), of webhook deliveries (Webhooks), and
of a learner's "why is my score" view
(`GET /v1/leaderboards/{season}/users/{user_id}/completions`): parse,
authorize, call the domain, answer."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response

from laurels.api import schemas as s
from laurels.api.cursors import Cursors
from laurels.api.params import Cursor, Limit, path_season, path_user_id, path_uuid, valid
from laurels.api.problems import JSONResponse, Problem
from laurels.api.routes import (
    SeasonPath,
    UserIdPath,
    admin_token,
    json_body,
    learner_token,
    periods,
    runtime,
)
from laurels.corrections import audit_page
from laurels.ranking import Position
from laurels.reads import EPOCH, completions_of, micros
from laurels.validation import UUID_RE, ReasonIn, parse_completion_id, validate_reason
from laurels.webhooks import deliveries_page

CompletionIdPath = Annotated[str, Path(
    description="the completion's id", examples=["c-123"],
    json_schema_extra={"pattern": "^[A-Za-z0-9._:-]{1,128}$"})]
DeliveryIdPath = Annotated[str, Path(description="a webhook delivery's id (UUID)",
                                     json_schema_extra={"format": "uuid", "pattern": UUID_RE})]
AUDIT_CURSOR = "audit"

router = APIRouter()


async def reason(request: Request, required: bool) -> str | None:
    """The body's reason; restore and unsuspend may send no body at all."""
    if not required and not request.headers.get("content-type") \
            and request.headers.get("content-length", "0") == "0":
        return None
    return valid(validate_reason, await json_body(request), required).reason


def path_completion_id(text: str) -> str:
    return valid(parse_completion_id, text)


def _json(body: Any) -> Response:
    return JSONResponse(body)


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
    return _json(await runtime(request).corrections.void(cid, why or ""))


@router.post("/v1/admin/completions/{completion_id}/restore", tags=["admin"],
             dependencies=[Depends(admin_token)], openapi_extra=s.body_schema(ReasonIn),
             responses={200: {"model": s.CorrectionOut},
                        **s.problems(401, 403, 404, 415, 422, 503)})
async def restore(request: Request, completion_id: CompletionIdPath) -> Response:
    """Restore a voided completion: it counts again (the body's reason is optional)."""
    cid = path_completion_id(completion_id)
    why = await reason(request, required=False)
    return _json(await runtime(request).corrections.restore(cid, why))


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
    return _json(await runtime(request).learners.suspend(uid, True, why))


@router.post("/v1/admin/users/{user_id}/unsuspend", tags=["admin"],
             dependencies=[Depends(admin_token)], openapi_extra=s.body_schema(ReasonIn),
             responses={200: {"model": s.SuspendOut},
                        **s.problems(401, 403, 410, 415, 422, 503)})
async def unsuspend(request: Request, user_id: UserIdPath) -> Response:
    """Unsuspend a learner: their own visibility again (the reason is optional)."""
    uid = path_user_id(user_id)
    why = await reason(request, required=False)
    return _json(await runtime(request).learners.suspend(uid, False, why))


@router.get("/v1/admin/audit", tags=["admin"], dependencies=[Depends(admin_token)],
            responses={200: {"model": s.AuditOut}, **s.problems(401, 403, 422, 503)})
async def audit(request: Request, limit: Limit = 100, after: Cursor = None) -> Response:
    """Every admin action with its reason, newest first (`next` pages on)."""
    cursors: Cursors = request.app.state.cursors
    after_id = cursors.decode(AUDIT_CURSOR, after)[0] if after is not None else None
    body, last = await audit_page(runtime(request).db, limit, after_id)
    if last is not None:
        body["next"] = cursors.encode(AUDIT_CURSOR, (last, 0, 0))
    return _json(body)


@router.get("/v1/leaderboards/{season}/users/{user_id}/completions", tags=["reads"],
            responses={200: {"model": s.CompletionsOut}, **s.problems(401, 403, 404, 422, 503)})
async def completions(request: Request, season: SeasonPath, user_id: UserIdPath,
                      uid: int = Depends(learner_token), limit: Limit = 50,
                      after: Cursor = None) -> Response:
    """Why the score is what it is: the learner's completions in the season,
    newest first, each counted or voided; the counted points add up to
    `score` (a learner token of that user, or admin)."""
    the_season = path_season(season, periods(request))
    cursors: Cursors = request.app.state.cursors
    owner = f"completions:{the_season.name}:{uid}"
    position = cursors.decode(owner, after) if after is not None else None
    body, last = await completions_of(runtime(request).db, the_season, uid, limit, position)
    if last is not None:
        body["next"] = cursors.encode(owner, last)
    return _json(body)


# -- webhook deliveries ---------------------------------------------------------------------

DELIVERIES_CURSOR = "webhook-deliveries"
HALF = 1 << 63


def _delivery_position(created_at: datetime, delivery_id: str) -> Position:
    n = uuid.UUID(delivery_id).int
    return (micros(created_at), (n >> 64) - HALF, (n & (2 ** 64 - 1)) - HALF)


def _delivery_after(position: Position) -> tuple[datetime, str]:
    at = EPOCH + timedelta(microseconds=position[0])
    n = ((position[1] + HALF) << 64) | (position[2] + HALF)
    return at, str(uuid.UUID(int=n))


@router.get("/v1/admin/webhooks/deliveries", tags=["admin"],
            dependencies=[Depends(admin_token)],
            responses={200: {"model": s.DeliveriesOut}, **s.problems(401, 403, 422, 503)})
async def deliveries(request: Request,
                     status: Literal["pending", "delivered", "failed"] | None = Query(None),
                     limit: Limit = 100, after: Cursor = None) -> Response:
    """Webhook deliveries, newest first (`next` pages on)."""
    cursors: Cursors = request.app.state.cursors
    owner = f"{DELIVERIES_CURSOR}:{status or ''}"
    position = _delivery_after(cursors.decode(owner, after)) if after is not None else None
    body, last = await deliveries_page(runtime(request).db, status, limit, position)
    if last is not None:
        body["next"] = cursors.encode(owner, _delivery_position(*last))
    return _json(body)


@router.post("/v1/admin/webhooks/deliveries/{delivery_id}/retry", tags=["admin"],
             status_code=202, dependencies=[Depends(admin_token)],
             responses={202: {}, **s.problems(401, 403, 404, 422, 503)})
async def retry_delivery(request: Request, delivery_id: DeliveryIdPath) -> Response:
    """Send a delivery again at once (a failed one gets another 24 hours)."""
    did = path_uuid(delivery_id, "delivery_id")
    if await runtime(request).db.fetch_one("retry_delivery", id=did) is None:
        raise Problem("not_found", f"no delivery {did}")
    return JSONResponse({"id": did, "status": "pending"}, status_code=202)
