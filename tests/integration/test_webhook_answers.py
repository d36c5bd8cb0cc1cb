"""A receiver's answer is read at most a few KiB (issue 64, point 6): only
its status counts. A receiver that answers 200 with 256 MB is delivered to,
and the sender stops reading after ANSWER_READ_MAX bytes (the receiver
manages to write what the sockets' buffers take, far less than its body);
a short answer is read to its end and its connection kept."""

from __future__ import annotations

import asyncio

from laurels.live.webhooks import store_settings
from laurels.runtime import Runtime
from tests.webhook_receiver import CHUNK, Answer, Receiver

BODY_MB = 256  # of CHUNK (1 MiB) each
HUGE = Answer(200, body=BODY_MB * CHUNK)


async def test_a_huge_answer_is_not_read(rt: Runtime) -> None:
    with Receiver([HUGE]) as receiver:
        svc = rt.derive(webhook_url=receiver.url)
        await store_settings(svc.db, svc.settings)
        async with svc.db.connection() as conn:
            await conn.execute("SELECT laurels_enqueue_webhook('season.finalized', NULL,"
                               " jsonb_build_object('season', '2026-W49'))")
        assert svc.webhooks is not None
        async with svc.webhooks.client() as http:
            assert await svc.webhooks.deliver_due(http) == 1
        [answered] = receiver.deliveries
        assert await asyncio.to_thread(answered.done.wait, 30)  # it wrote all it could
        rows = await svc.db.fetch("delivery_counts")
        assert {r["status"]: int(r["n"]) for r in rows} == {"delivered": 1}
        assert len(receiver.deliveries) == 1
        assert answered.written < BODY_MB * CHUNK // 4, answered.written  # never read whole
