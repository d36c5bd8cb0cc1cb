"""The HTTP face of laurels: app factory, lifespan and middleware."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from laurels.api import problems
from laurels.api.auth import Auth
from laurels.api.routes import board_stream, router
from laurels.errors import Problem
from laurels.metrics import RequestMetrics
from laurels.ratelimit import RateLimiter
from laurels.runtime import Runtime, background_loops
from laurels.supervisor import Supervisor

log = logging.getLogger("laurels.api")


def create_app(rt: Runtime, run_projector: bool = True, migrate: bool = True) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await rt.open(run_migrations=migrate)
        supervisor = Supervisor()
        app.state.supervisor = supervisor
        for name, loop in background_loops(rt, projector=run_projector).items():
            supervisor.start(name, loop)
        try:
            yield
        finally:
            await supervisor.shutdown()
            await rt.close()

    app = FastAPI(title="laurels", version="0.1.0", lifespan=lifespan,
                  default_response_class=problems.JSONResponse,
                  description="Weekly leaderboards and live notifications.")
    app.state.runtime = rt
    app.state.auth = Auth(rt.secrets)
    app.state.hub = rt.hub
    app.state.limiter = RateLimiter(rt.settings.write_rate_limit)
    app.state.reads = rt.reads
    problems.install(app)
    app.add_middleware(RequestMetrics)
    app.include_router(router)
    return app


def serving_app(app: FastAPI) -> ASGIApp:
    """What the server runs: the fast lane in front of the whole FastAPI app."""
    return FastLane(app, app.state.runtime)


BOARD_EVENTS = re.compile(r"/v1/leaderboards/([^/]+)/events")


class FastLane:
    """Pure ASGI in front of FastAPI for the live board stream: a process holds
    thousands of them for hours, and FastAPI's per-request machinery (its
    middleware, router and dependency frames stay alive as long as the
    response) would more than double the memory of each. The same
    `board_stream` serves the documented route (in-process tests use it)."""

    def __init__(self, app: ASGIApp, rt: Runtime) -> None:
        self.app = app
        self.rt = rt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            match = BOARD_EVENTS.fullmatch(scope["path"])
            if match:
                try:
                    response = board_stream(self.rt.hub, self.rt.settings, match.group(1))
                except Problem as exc:
                    response = problems.problem_response(exc.code, exc.detail,
                                                         retry_after=exc.retry_after)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
