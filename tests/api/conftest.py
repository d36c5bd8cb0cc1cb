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
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from laurels.api import create_app, serving_app
from laurels.runtime import Runtime
from laurels.settings import Secrets
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
        task = self.app.state.supervisor.tasks.pop("seasons")
        deadline = asyncio.get_running_loop().time() + 30
        while "seasons" in awaiting(task):
            assert asyncio.get_running_loop().time() < deadline, "the seasons pass hangs"
            await asyncio.sleep(0.01)  # its pass ends; then it waits for the next tick
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self.runtime.settings.close_seasons = True

    async def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.client().get(path, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.client().delete(path, **kwargs)


def awaiting(task: asyncio.Task[Any]) -> list[str]:
    """The names of the coroutines `task` is inside now, outermost first."""
    names, coro = [], task.get_coro()
    while coro is not None and hasattr(coro, "cr_code"):
        names.append(coro.cr_code.co_name)
        coro = coro.cr_await
    return names


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
