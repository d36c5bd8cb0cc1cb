"""HTTP routes of operations: readiness and metrics (`/healthz`, which must
answer the fastest, is the fast lane's: api/fast.py)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from laurels.api import schemas as s
from laurels.api.auth import Auth
from laurels.api.dependencies import auth, token
from laurels.api.problems import JSONResponse, Problem
from laurels.api.state import api_state
from laurels.board.trust import Unproven

router = APIRouter()


@router.get("/readyz", tags=["operations"], responses=s.problems(503))
async def readyz(request: Request) -> Response:
    """200 when PostgreSQL and Redis answer, Redis is proven to hold the
    boards (not a restart or failover still being repaired), and every
    background loop runs, else 503 (naming the loops that are down)."""
    state = api_state(request)
    try:
        await state.services.ping()
    except Exception:  # any failure of either store means "not ready"
        raise Problem("unavailable", "PostgreSQL or Redis does not answer") from None
    try:  # boards are read only from a Redis proven to hold them (board/trust.py)
        await state.services.proven()
    except Unproven:
        raise Problem("unavailable", "Redis restarted: its boards are being checked against "
                      "PostgreSQL") from None
    down = state.supervisor.problems() if state.supervisor is not None else {}
    if down:
        names = ", ".join(sorted(down))
        raise Problem("unavailable", f"background loop down: {names}")
    return JSONResponse({"status": "ready"})


async def metrics_reader(tok: str = Depends(token), a: Auth = Depends(auth)) -> None:
    a.require_metrics(tok)


@router.get("/metrics", tags=["operations"], response_class=Response,
            dependencies=[Depends(metrics_reader)],
            responses={200: {"content": {CONTENT_TYPE_LATEST: {}},
                             "description": "Prometheus text exposition"},
                       **s.problems(401, 403)})
async def metrics() -> Response:
    """Prometheus text exposition: with the admin token or
    LAURELS_METRICS_TOKEN (what the service is doing is an operator's to
    read; no metric tells one learner's erasure from their turning hidden)."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
