"""A receiver's answer is read at most a few KiB (issue 64, point 6): only
its status counts. A receiver that answers 200 with 256 MB is delivered to,
and the sender stops reading after ANSWER_READ_MAX bytes (the receiver
manages to write what the sockets' buffers take, far less than its body);
a short answer is read to its end and its connection kept."""

from __future__ import annotations

import asyncio

from aiohttp import web

from laurels.runtime import Runtime
from laurels.webhooks import store_settings
from tests.helpers import free_port

CHUNK = 1 << 20  # 1 MiB
BODY_MB = 256


async def test_a_huge_answer_is_not_read(rt: Runtime) -> None:
    written = {"bytes": 0, "requests": 0}
    ended = asyncio.Event()  # the receiver's handler is done writing

    async def huge(request: web.Request) -> web.StreamResponse:
        await request.read()
        written["requests"] += 1
        resp = web.StreamResponse(status=200)
        resp.content_length = BODY_MB * CHUNK
        await resp.prepare(request)
        block = b"x" * CHUNK
        try:
            for _ in range(BODY_MB):
                await resp.write(block)
                written["bytes"] += CHUNK
        except (ConnectionError, RuntimeError):
            pass  # the sender went away: what it needed, it read
        finally:
            ended.set()
        return resp

    port = free_port()
    app = web.Application()
    app.router.add_post("/hooks", huge)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        svc = rt.derive(webhook_url=f"http://127.0.0.1:{port}/hooks")
        await store_settings(svc.db, svc.settings)
        async with svc.db.connection() as conn:
            await conn.execute("SELECT laurels_enqueue_webhook('season.finalized', NULL,"
                               " jsonb_build_object('season', '2026-W49'))")
        assert svc.webhooks is not None
        async with svc.webhooks.client() as http:
            assert await svc.webhooks.deliver_due(http) == 1
        await asyncio.wait_for(ended.wait(), 30)  # it wrote all it could
        rows = await svc.db.fetch("delivery_counts")
        assert {r["status"]: int(r["n"]) for r in rows} == {"delivered": 1}
        assert written["requests"] == 1
        assert written["bytes"] < BODY_MB * CHUNK // 4, written  # never read whole
    finally:
        await runner.cleanup()
