"""The HTTP face of laurels: app factory, lifespan and middleware."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi.responses import ORJSONResponse
from redis.exceptions import RedisError

from laurels.api import problems
from laurels.api.auth import Auth
from laurels.api.routes import router
from laurels.metrics import RequestMetrics
from laurels.ratelimit import RateLimiter
from laurels.runtime import Runtime

log = logging.getLogger("laurels.api")


def create_app(rt: Runtime, run_projector: bool = True, migrate: bool = True) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await rt.open(run_migrations=migrate)
        try:
            await rt.rebuilder.prepare()
        except (RedisError, OSError) as exc:  # Redis may come later; reads heal then
            log.warning("could not prepare this week's board: %s", exc)
        stop = asyncio.Event()
        tasks = [asyncio.create_task(app.state.hub.run(stop))]
        if run_projector:
            tasks.append(asyncio.create_task(rt.projector.run(stop)))
        try:
            yield
        finally:
            stop.set()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                    await asyncio.wait_for(task, 5)
            await rt.close()

    app = FastAPI(title="laurels", version="0.1.0", lifespan=lifespan,
                  default_response_class=ORJSONResponse,
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
