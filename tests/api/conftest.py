"""The in-process HTTP tier: the app that `laurels serve` runs (the fast lane
in front of FastAPI, built by `wire()` through `Runtime`), called through
`httpx.ASGITransport` without a server process. Its lifespan runs as in a
server: the stores are opened and the background loops start.

What needs a real process (signals, kill -9, embedded start-up, the
connection guard in front of the app, several workers) stays in
`tests/acceptance`, against `laurels serve` as a subprocess.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from laurels.api import create_app, serving_app
from laurels.board.hints import Hint
from laurels.process.settings import Secrets
from laurels.runtime import Runtime
from tests.helpers import ADMIN, INGEST, USER_SECRET, WEBHOOK_SECRET, make_settings

BASE_URL = "http://laurels.test"


@dataclass
class Api:
    """The app in this process, with the interface of a `Server` of the
    subprocess tier: `client(token)`, anonymous `get`/`delete`, and `env`
    (for `token_for`); `runtime` is the service graph behind it."""

    transport: httpx.ASGITransport
    runtime: Runtime
    app: Any = None
    env: dict[str, str] = field(default_factory=lambda: {"LAURELS_USER_TOKEN_SECRET":
                                                            USER_SECRET})
    clients: list[httpx.AsyncClient] = field(default_factory=list)
    echoes: Echoes | None = None

    def client(self, token: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        client = httpx.AsyncClient(transport=self.transport, base_url=BASE_URL,
                                   headers=headers, timeout=30)
        self.clients.append(client)
        return client

    async def close_seasons(self) -> None:
        """Let seasons close from now on, with the background "seasons" loop
        stopped first: the test's own `finalize_due(when)` is then the only
        one to close a past season (the loop, on the real clock, finalized
        it first now and then, and the test's call found nothing to do).
        It is stopped between two passes, never inside one (a pass cut off
        in a query would hand the pool a connection mid-statement)."""
        await self.app.state.supervisor.stop_loop("seasons")
        self.runtime.settings.close_seasons = True

    async def echoed(self, season: str) -> None:
        """Return once this process's subscription has heard every hint of
        `season` published so far (Echoes): a test that asserts what a
        cache holds after a write waits for it first."""
        if self.echoes is None:
            self.echoes = Echoes(self.runtime)
        await self.echoes.heard(season)

    async def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.client().get(path, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.client().delete(path, **kwargs)


class Echoes:
    """A write's hint reaches this process's caches twice: at once, and
    again when its subscription hears the hint come back from Redis; a body
    read between the two is dropped by the second. `heard(season)` returns
    once the subscription has heard every hint of the season published
    before the call: a marker published after them on the same channel
    (Pub/Sub keeps a channel's order) comes back after them, once the
    subscription carries the season's hints (on a cluster its shard
    channel, which a cache's read follows). The marker names a learner in
    no group and on no board, so it drops no group's body; it does drop the
    season's cached top pages and neighbourhoods (a hint naming a learner
    drops those whoever it names)."""

    MARKER = 999_999_999

    def __init__(self, runtime: Runtime) -> None:
        self.board, self.subscription = runtime.board, runtime.subscription
        self.sent = self.back = 0
        self.wake = asyncio.Event()
        inner = self.subscription._hint

        def hear(hint: Hint) -> None:
            inner(hint)
            if hint.get("user_id") == self.MARKER:
                self.back += 1
                self.wake.set()

        self.subscription._hint = hear  # type: ignore[method-assign]

    async def heard(self, season: str) -> None:
        board = self.board
        marker = orjson.dumps({"season": season, "user_id": self.MARKER})
        async with asyncio.timeout(10):
            await self.subscription.hinted(season)
            self.sent += 1
            if board.cluster:  # (a season's hints go on its shard channel)
                await board.redis.spublish(board.keys.shard_hint_channel(season), marker)
            else:
                await board.redis.publish(board.keys.hint_channel(), marker)
            while self.back < self.sent:
                self.wake.clear()
                await self.wake.wait()


ApiFactory = Callable[..., Awaitable[Api]]


@pytest.fixture
async def serve(tmp_path: Path, database_url: str, redis_url: str,
                key_prefix: str) -> AsyncIterator[ApiFactory]:
    """A factory: `await serve(**settings)` starts the app in this process."""
    async with AsyncExitStack() as stack:

        async def start(**overrides: Any) -> Api:
            settings = make_settings(tmp_path, database_url, redis_url, key_prefix,
                                     **overrides)
            runtime = Runtime(settings, Secrets(INGEST, ADMIN, USER_SECRET, WEBHOOK_SECRET),
                              database_url,
                              redis_url)
            app = create_app(runtime, migrate=False)
            await stack.enter_async_context(app.router.lifespan_context(app))
            api = Api(httpx.ASGITransport(app=serving_app(app)), runtime, app=app)

            async def close_clients() -> None:
                for client in api.clients:
                    await client.aclose()

            stack.push_async_callback(close_clients)
            return api

        yield start


def challenge_clock(api: Api, when: str) -> None:
    """Set the challenges' clock (definitions, joins, reads and decisions)
    to `when` (UTC, no offset written)."""
    from datetime import UTC, datetime

    moment = datetime.fromisoformat(when).replace(tzinfo=UTC)
    api.runtime.challenges.clock = lambda: moment  # type: ignore[method-assign]
    api.runtime.decider.clock = lambda: moment  # type: ignore[method-assign]


@pytest.fixture
async def challenge_api(serve: ApiFactory) -> Api:
    """The app with the seasons never closing and the challenges' loop
    stopped (the test decides), its challenges' clock on 30 November 2025."""
    started = await serve(close_seasons=False)
    await started.app.state.supervisor.stop_loop("challenges")
    challenge_clock(started, "2025-11-30T12:00:00")
    return started
