"""HTTP routes of operations: readiness and metrics (`/healthz`, which must
answer the fastest, is the fast lane's: api/fast.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from laurels.api import schemas as s
from laurels.api.problems import JSONResponse, Problem
from laurels.api.state import api_state

router = APIRouter()


@router.get("/readyz", tags=["operations"], responses=s.problems(503))
async def readyz(request: Request) -> Response:
    """200 when PostgreSQL and Redis answer and every background loop runs, else
    503 (naming the loops that are down)."""
    state = api_state(request)
    try:
        await state.services.ping()
    except Exception:  # any failure of either store means "not ready"
        raise Problem("unavailable", "PostgreSQL or Redis does not answer") from None
    down = state.supervisor.problems() if state.supervisor is not None else {}
    if down:
        names = ", ".join(sorted(down))
        raise Problem("unavailable", f"background loop down: {names}")
    return JSONResponse({"status": "ready"})


@router.get("/metrics", tags=["operations"], response_class=Response,
            responses={200: {"content": {CONTENT_TYPE_LATEST: {}},
                             "description": "Prometheus text exposition"}})
async def metrics() -> Response:
    """Prometheus text exposition."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
