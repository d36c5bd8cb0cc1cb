"""Webhooks at the pace of a decision (issue 40): a process sends up to
LAURELS_WEBHOOK_CONCURRENCY deliveries at once, in workers of a batch each
that take their next batch as soon as the receiver answers the last; a
receiver slow on one delivery holds up only that delivery's batch (at most
the timeout), never the first attempts of the others."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from laurels.runtime import Runtime
from laurels.webhooks import BATCH, store_settings
from tests.helpers import free_port

EVENTS = 120


class Held:
    """A receiver that holds the first event it gets until released, and
    counts the requests it answers at once."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/hooks"
        self.release = asyncio.Event()
        self.held: str | None = None
        self.at_once = self.most_at_once = 0
        self.answered: set[str] = set()

    async def handle(self, request: web.Request) -> web.Response:
        event = request.headers["Laurels-Event-Id"]
        self.at_once += 1
        self.most_at_once = max(self.most_at_once, self.at_once)
        try:
            if self.held is None:
                self.held = event
                await self.release.wait()
            await asyncio.sleep(0.01)  # a receiver that answers in 10 ms
            self.answered.add(event)
            return web.Response(status=204)
        finally:
            self.at_once -= 1


@pytest.fixture
async def held() -> AsyncIterator[Held]:
    receiver = Held()
    app = web.Application()
    app.router.add_post("/hooks", receiver.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", receiver.port).start()
    yield receiver
    receiver.release.set()
    await runner.cleanup()


async def test_deliveries_go_side_by_side_and_a_slow_one_holds_up_nobody(
        rt: Runtime, held: Held) -> None:
    svc = rt.derive(webhook_url=held.url, webhook_concurrency=32)
    await store_settings(svc.db, svc.settings)
    async with svc.db.connection() as conn:
        await conn.execute("SELECT laurels_enqueue_webhook('season.finalized', NULL,"
                           " jsonb_build_object('season', g::text)) FROM generate_series(1, %s) g",
                           (EVENTS,))
    assert svc.webhooks is not None
    stop = asyncio.Event()
    sender = asyncio.create_task(svc.webhooks.run(stop))
    try:
        async with asyncio.timeout(30):
            while len(held.answered) < EVENTS - 1:  # all but the held one
                await asyncio.sleep(0.02)
        assert held.held is not None and held.held not in held.answered
        assert BATCH < held.most_at_once <= 32, held.most_at_once
        held.release.set()
        async with asyncio.timeout(30):
            while len(held.answered) < EVENTS:
                await asyncio.sleep(0.02)
    finally:
        stop.set()
        await sender
    rows: list[Any] = await svc.db.fetch("delivery_counts")
    assert {r["status"]: int(r["n"]) for r in rows} == {"delivered": EVENTS}
