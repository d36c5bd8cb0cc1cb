"""What the HTTP layer reaches, in one object: the app's state.

`ApiState` is the FastAPI app's `app.state` (create_app sets it): the
domain services (`services`, built by runtime.wire) and the few objects of
the HTTP layer that are not services (the token checks, the cursor seal,
the write limit, the page caches, the background loops' supervisor). The
FastAPI routes reach it through `api_state(request)` or `services(request)`
(api/dependencies.py), the fast lane is given it; nothing reads
`request.app.state` otherwise.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from starlette.datastructures import State

from laurels.api.auth import Auth
from laurels.api.caches import AROUND_BYTES, BoardCache, GroupCache, KnownPages
from laurels.api.cursors import Cursors
from laurels.api.ratelimit import RateLimiter
from laurels.ingest import GroupCommit
from laurels.runtime import Services
from laurels.supervisor import Supervisor


class ApiState(State):
    """Starlette's `State`, with the attributes the HTTP layer uses, typed."""

    services: Services
    auth: Auth
    cursors: Cursors
    limiter: RateLimiter
    board_cache: BoardCache
    top_pages: KnownPages  # (path, query) -> the top page it names, for the lane
    around_cache: BoardCache  # learners' neighbourhoods (learner, radius)
    group_cache: GroupCache
    group_commit: GroupCommit  # single posts of one moment, in one transaction
    supervisor: Supervisor | None  # set while the app's lifespan runs

    def __init__(self, services: Services) -> None:
        cursors = Cursors(services.secrets.user_token_secret)
        fields: dict[str, Any] = {
            "services": services,
            "auth": Auth(services.secrets),
            "cursors": cursors,
            "limiter": RateLimiter(services.settings.write_rate_limit),
            "board_cache": BoardCache(services.subscription, cursors),
            "top_pages": KnownPages(),
            "around_cache": BoardCache(services.subscription, cursors,
                                       max_entries=100_000, max_bytes=AROUND_BYTES),
            "group_cache": GroupCache(services.subscription, services.hub.index),
            "group_commit": GroupCommit(services.ingestor),
            "supervisor": None,
        }
        super().__init__(fields)


def api_state(request: Request) -> ApiState:
    state: ApiState = request.app.state
    return state


def services(request: Request) -> Services:
    """The domain services: what a route calls."""
    return api_state(request).services
