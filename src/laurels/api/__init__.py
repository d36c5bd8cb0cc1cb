"""The HTTP face of laurels: app factory, lifespan and middleware.

One way to reach things: the app's state is an `ApiState` (api/state.py),
holding the domain services (`services`, built by `runtime.wire`) and the
HTTP layer's own objects (token checks, cursors, the write limit, the page
caches, the supervisor). FastAPI routes reach it through
`services(request)` and `api_state(request)`; the fast lane is given it.
A route never holds a store: it parses, calls one service method, and maps
the answer (or its error, api/problems.py).

The modules: the fast lane (`fast.py`: the hottest operations, plain ASGI,
in front of FastAPI) and FastAPI's routes by concern (`write_routes`,
`learner_routes`, `group_routes`, `league_routes`, `admin_routes`,
`board_kind_routes`, `challenge_routes`, `team_routes`, `webhook_routes`, `page_routes`,
`operation_routes`);
each path has one
handler, and /openapi.json describes them all (`openapi.py`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.types import ASGIApp

from laurels.api import (
    admin_routes,
    board_kind_routes,
    challenge_routes,
    fast,
    group_routes,
    league_routes,
    learner_routes,
    operation_routes,
    page_routes,
    problems,
    team_routes,
    webhook_routes,
    write_routes,
)
from laurels.api.cors import ReadCors
from laurels.api.fast import FastLane
from laurels.api.openapi import App
from laurels.api.state import ApiState
from laurels.core.metrics import RequestMetrics
from laurels.process.supervisor import Supervisor
from laurels.runtime import Runtime, background_loops

log = logging.getLogger("laurels.api")


def create_app(rt: Runtime, run_projector: bool = True, migrate: bool = True) -> FastAPI:
    state = ApiState(rt)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await rt.open(run_migrations=migrate)
        # The deployment's webhook settings, for every process that writes
        # (a CLI command, a projector started alone): live/webhooks.py.
        await rt.deliveries.store_settings()
        await rt.leagues.store_settings()  # whether completions join leagues (leagues/cohorts.py)
        state.supervisor = supervisor = Supervisor()
        for name, loop in background_loops(rt, projector=run_projector).items():
            supervisor.start(name, loop)
        try:
            yield
        finally:
            await supervisor.shutdown()
            await rt.close()

    app = App(title="laurels", version="0.1.0", lifespan=lifespan,
              default_response_class=problems.JSONResponse,
              description="Weekly leaderboards and live notifications.")
    app.state = state
    problems.install(app)
    app.add_middleware(RequestMetrics)
    app.router.routes.extend(fast.routes(state))
    for module in (write_routes, learner_routes, group_routes, league_routes, admin_routes,
                   board_kind_routes, challenge_routes, team_routes, webhook_routes,
                   page_routes, operation_routes):
        app.include_router(module.router)
    return app


def serving_app(app: FastAPI) -> ASGIApp:
    """What the server runs: the fast lane in front of the whole FastAPI app."""
    state = app.state
    if not isinstance(state, ApiState):
        raise TypeError("serving_app takes an app of create_app")
    lane = FastLane(app, state)
    if state.services.settings.cors_origins:
        return ReadCors(lane, state.services.settings.cors_origins)
    return lane


def worker_app() -> ASGIApp:
    """The app of one `laurels serve` process (uvicorn calls this in each
    worker): settings from the environment `serve` prepared, its own store
    connections and background loops."""
    from laurels.api import server
    from laurels.process.datadir import resolve_secrets
    from laurels.process.settings import load_settings

    settings = load_settings()
    server.configure(settings)
    rt = Runtime(settings, resolve_secrets(settings, announce=False),
                 settings.database_url or "", settings.redis_url or "")
    return serving_app(create_app(rt, run_projector=settings.run_projector, migrate=False))
