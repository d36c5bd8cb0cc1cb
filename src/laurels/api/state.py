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

import asyncio
from typing import Any, Protocol

from fastapi import Request
from starlette.datastructures import State

from laurels.api.auth import Auth
from laurels.api.caches import AROUND_BYTES, TEAM_BYTES, BoardCache, Cached, GroupCache, KnownPages
from laurels.api.cursors import Cursors
from laurels.api.ratelimit import InFlight, RateLimiter
from laurels.board.signals import Signals
from laurels.challenges.definitions import Challenges
from laurels.challenges.standings import Standings
from laurels.ingest.corrections import Corrections
from laurels.ingest.record import GroupCommit, Ingestor
from laurels.leagues.cohorts import Leagues
from laurels.learners.profiles import Learners
from laurels.lifecycle.board_kinds import BoardKinds
from laurels.lifecycle.teams import Teams
from laurels.live.hub import Hub
from laurels.live.notifications import Notifications
from laurels.live.webhooks import Deliveries
from laurels.process.settings import Settings
from laurels.process.supervisor import Supervisor
from laurels.projection.rebuild import Rebuilder
from laurels.projection.verify import Verifier
from laurels.reads.boards import Reads
from laurels.reads.groups import Groups
from laurels.reads.teams import TeamReads
from laurels.runtime import Services

GROUP_PAGES_PER_CLIENT = 2  # uncached group pages one client may have computed at once


class RouteServices(Protocol):
    """What the HTTP layer may reach of the service graph: the domain
    services, never a store (no PostgreSQL pool, Redis client, keys or board).
    `Services` is one; mypy holds every route to this."""

    settings: Settings
    ingestor: Ingestor
    reads: Reads
    learners: Learners
    groups: Groups
    leagues: Leagues
    corrections: Corrections
    notifications: Notifications
    rebuilder: Rebuilder
    verifier: Verifier
    deliveries: Deliveries
    hub: Hub
    board_kinds: BoardKinds
    challenges: Challenges
    challenge_standings: Standings
    teams: Teams
    team_reads: TeamReads

    async def ping(self) -> None: ...

    async def proven(self) -> None: ...


class ApiState(State):
    """Starlette's `State`, with the attributes the HTTP layer uses, typed."""

    services: RouteServices
    auth: Auth
    cursors: Cursors
    limiter: RateLimiter
    board_cache: BoardCache
    top_pages: KnownPages  # (path, query) -> the top page it names, for the lane
    around_pages: KnownPages  # (path, query) -> the neighbourhood it names
    around_cache: BoardCache  # learners' neighbourhoods (learner, radius)
    group_cache: GroupCache
    team_cache: BoardCache  # team boards' pages read without a learner's token
    group_pages: InFlight  # uncached group pages each client computes at once
    group_fills: dict[tuple[str, str, int], asyncio.Future[Cached]]  # top pages being computed
    group_commit: GroupCommit  # single posts of one moment, in one transaction
    supervisor: Supervisor | None  # set while the app's lifespan runs

    def __init__(self, services: Services) -> None:
        cursors = Cursors(services.secrets.user_token_secret)
        metrics_token = services.settings.metrics_token
        fields: dict[str, Any] = {
            "services": services,
            "auth": Auth(services.secrets,
                         metrics_token.get_secret_value() if metrics_token else None),
            "cursors": cursors,
            "limiter": RateLimiter(services.settings.write_rate_limit),
            "board_cache": BoardCache(services.subscription, cursors),
            "top_pages": KnownPages(),
            "around_pages": KnownPages(),
            "around_cache": BoardCache(services.subscription, cursors,
                                       max_entries=100_000, max_bytes=AROUND_BYTES),
            "group_cache": GroupCache(services.subscription, services.hub.index),
            "team_cache": BoardCache(services.subscription, cursors, max_entries=10_000,
                                     max_bytes=TEAM_BYTES),
            "group_pages": InFlight(GROUP_PAGES_PER_CLIENT, "uncached group pages"),
            "group_fills": {},
            "group_commit": GroupCommit(services.ingestor),
            "supervisor": None,
        }
        super().__init__(fields)
        connect_caches(services.signals, fields["board_cache"], fields["around_cache"],
                       fields["group_cache"], fields["team_cache"])
        # Their bodies live until a hint (or 60 s): a learner newly not
        # public that the privacy filter hears of drops them all.
        services.privacy.on_tightened += [fields["board_cache"].invalidate,
                                          fields["around_cache"].invalidate]


def connect_caches(signals: Signals, board: BoardCache, around: BoardCache,
                   group: GroupCache, teams: BoardCache) -> None:
    """The API's part of the live path (board/signals.py): every hint drops
    the pages it makes stale, before any stream hears it; a group change
    drops that group's boards, and every team board's page (its members,
    name, access or team kind may have changed, or a team kind's)."""
    signals.caches += [board.hint, around.hint, group.hint, teams.hint]
    signals.group_changes += [group.group_changed, lambda _: teams.invalidate()]


def api_state(request: Request) -> ApiState:
    state: ApiState = request.app.state
    return state


def services(request: Request) -> RouteServices:
    """The domain services: what a route calls."""
    return api_state(request).services
