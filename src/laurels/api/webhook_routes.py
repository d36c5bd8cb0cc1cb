"""HTTP routes of webhook deliveries (docs/contract.md, Webhooks): the
operator's listing and retry. They work with or without
LAURELS_WEBHOOK_URL (webhooks.Deliveries)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response

from laurels.api import schemas as s
from laurels.api.dependencies import admin_token
from laurels.api.params import Cursor, Limit, path_uuid
from laurels.api.problems import JSONResponse, Problem
from laurels.api.state import api_state, services
from laurels.core.ranking import UNIX_EPOCH, Position
from laurels.core.validation import UUID_RE
from laurels.reads.boards import micros

DeliveryIdPath = Annotated[str, Path(description="a webhook delivery's id (UUID)",
                                     json_schema_extra={"format": "uuid", "pattern": UUID_RE})]
DELIVERIES_CURSOR = "webhook-deliveries"
HALF = 1 << 63

router = APIRouter()


# A page's position in a sealed cursor is three signed 64-bit numbers
# (cursors.py): the delivery's time in microseconds, and its UUID in halves.

def _delivery_position(created_at: datetime, delivery_id: str) -> Position:
    n = uuid.UUID(delivery_id).int
    return (micros(created_at), (n >> 64) - HALF, (n & (2 ** 64 - 1)) - HALF)


def _delivery_after(position: Position) -> tuple[datetime, str]:
    at = UNIX_EPOCH + timedelta(microseconds=position[0])
    n = ((position[1] + HALF) << 64) | (position[2] + HALF)
    return at, str(uuid.UUID(int=n))


@router.get("/v1/admin/webhooks/deliveries", tags=["admin"],
            dependencies=[Depends(admin_token)],
            responses={200: {"model": s.DeliveriesOut}, **s.problems(401, 403, 422, 503)})
async def deliveries(request: Request,
                     status: Literal["pending", "delivered", "failed"] | None = Query(None),
                     limit: Limit = 100, after: Cursor = None) -> Response:
    """Webhook deliveries, newest first (`next` pages on)."""
    cursors = api_state(request).cursors
    owner = f"{DELIVERIES_CURSOR}:{status or ''}"
    position = _delivery_after(cursors.decode(owner, after)) if after is not None else None
    body, last = await services(request).deliveries.page(status, limit, position)
    if last is not None:
        body["next"] = cursors.encode(owner, _delivery_position(*last))
    return JSONResponse(body)


@router.post("/v1/admin/webhooks/deliveries/{delivery_id}/retry", tags=["admin"],
             status_code=202, dependencies=[Depends(admin_token)],
             responses={202: {}, **s.problems(401, 403, 404, 422, 503)})
async def retry_delivery(request: Request, delivery_id: DeliveryIdPath) -> Response:
    """Send a delivery again at once (a failed one gets another 24 hours)."""
    did = path_uuid(delivery_id, "delivery_id")
    if not await services(request).deliveries.retry(did):
        raise Problem("not_found", f"no delivery {did}")
    return JSONResponse({"id": did, "status": "pending"}, status_code=202)
