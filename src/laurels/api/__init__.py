"""The HTTP face of laurels: app factory, lifespan and middleware."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.types import ASGIApp

from laurels.api import problems
from laurels.api.auth import Auth
from laurels.api.caches import BoardCache, GroupCache
from laurels.api.correction_routes import router as correction_router
from laurels.api.cors import ReadCors
from laurels.api.cursors import Cursors
from laurels.api.fast import FastLane
from laurels.api.group_routes import router as group_router
from laurels.api.routes import board_stream, router
from laurels.metrics import RequestMetrics
from laurels.ratelimit import RateLimiter
from laurels.runtime import Runtime, background_loops
from laurels.supervisor import Supervisor
from laurels.webhooks import store_settings

log = logging.getLogger("laurels.api")


def create_app(rt: Runtime, run_projector: bool = True, migrate: bool = True) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await rt.open(run_migrations=migrate)
        # The deployment's webhook settings, for every process that writes
        # (a CLI command, a projector started alone): webhooks.py.
        await store_settings(rt.db, rt.settings)
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
    app.state.cursors = cursors = Cursors(rt.secrets.user_token_secret)
    app.state.hub = rt.hub
    app.state.limiter = RateLimiter(rt.settings.write_rate_limit)
    app.state.reads = rt.reads
    app.state.board_cache = BoardCache(rt.subscription, cursors)
    app.state.group_cache = GroupCache(rt.subscription, rt.hub.index)
    problems.install(app)
    app.add_middleware(RequestMetrics)
    app.include_router(router)
    app.include_router(group_router)
    app.include_router(correction_router)
    return app


def serving_app(app: FastAPI) -> ASGIApp:
    """What the server runs: the fast lane in front of the whole FastAPI app."""
    rt: Runtime = app.state.runtime
    lane = FastLane(app, app.state, lambda season: board_stream(rt.hub, rt.settings, season))
    if rt.settings.cors_origins:
        return ReadCors(lane, rt.settings.cors_origins)
    return lane


def worker_app() -> ASGIApp:
    """The app of one `laurels serve` process (uvicorn calls this in each
    worker): settings from the environment `serve` prepared, its own store
    connections and background loops."""
    from laurels.api import server
    from laurels.settings import load_settings, resolve_secrets

    settings = load_settings()
    server.configure(settings)
    rt = Runtime(settings, resolve_secrets(settings, announce=False),
                 settings.database_url or "", settings.redis_url or "")
    server.EXIT_HOOKS.append(rt.hub.close_all_soon)
    return serving_app(create_app(rt, run_projector=settings.run_projector, migrate=False))
