"""Webhooks at the pace of a decision (issue 40): a process sends up to
LAURELS_WEBHOOK_CONCURRENCY deliveries at once, in workers of a batch each
that take their next batch as soon as the receiver answers the last; a
receiver slow on one delivery holds up only that delivery's batch (at most
the timeout), never the first attempts of the others."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from typing import Any

import pytest

from laurels.live.webhooks import BATCH, store_settings
from laurels.runtime import Runtime
from tests.webhook_receiver import Answer, Delivery, Receiver

EVENTS = 120


QUICK = Answer(delay=0.01)  # a receiver that answers in 10 ms
HELD = Answer(hold=math.inf, delay=0.01)  # ... but holds the first request until released


def hold_the_first(receiver: Receiver, delivery: Delivery) -> Answer:
    return HELD if delivery.index == 0 else QUICK


@pytest.fixture
def held() -> Iterator[Receiver]:
    """A receiver that holds the first event it gets until released, and
    counts the requests it answers at once."""
    with Receiver(hold_the_first) as receiver:
        yield receiver


async def test_deliveries_go_side_by_side_and_a_slow_one_holds_up_nobody(
        rt: Runtime, held: Receiver) -> None:
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
            while len(held.received) < EVENTS - 1:  # all but the held one
                await asyncio.sleep(0.02)
        [first] = held.held
        assert first not in held.received
        assert BATCH < held.most_at_once <= 32, held.most_at_once
        held.release.set()
        async with asyncio.timeout(30):
            while len(held.received) < EVENTS:
                await asyncio.sleep(0.02)
    finally:
        stop.set()
        await sender
    rows: list[Any] = await svc.db.fetch("delivery_counts")
    assert {r["status"]: int(r["n"]) for r in rows} == {"delivered": EVENTS}
