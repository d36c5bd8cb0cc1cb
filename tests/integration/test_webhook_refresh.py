"""A refreshed `overtaken` racing the delivery that carries it (issue 63,
point 5), forced with a held pause point: the notifier has refreshed the
notification (its trigger found the delivery still waiting for its first
attempt, and let it carry the new state) but not committed; the sender
claims meanwhile. The delivery must not go out with the old state and the
new one never: the trigger holds the delivery until the refresh commits,
so the sender takes it after, with the latest state."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from laurels.core import failpoints
from laurels.core.seasons import parse_season
from laurels.live.webhooks import store_settings
from laurels.runtime import Runtime
from tests.helpers import receiving

W49 = "2026-W49"
NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)


def item(cid: str, uid: int, points: int) -> dict[str, Any]:
    at = parse_season(W49, zone="UTC").starts_at + timedelta(hours=1)
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": at.isoformat()}


async def test_a_refresh_racing_its_deliverys_claim_is_sent_as_it_is_now(
        rt: Runtime) -> None:
    async with receiving() as receiver:
        svc = rt.derive(clock=lambda: NOW, webhook_url=receiver.url)
        await store_settings(svc.db, svc.settings)
        assert svc.webhooks is not None
        await svc.ingestor.record([item("a1", 1, 10)])
        await svc.ingestor.record([item("a3", 3, 20)])  # 3 passes 1
        await svc.notifier.consume()
        notes = await svc.db.fetch("list_notifications", user_id=1, limit=10)
        overtaken = next(n for n in notes if n["kind"] == "overtaken")
        assert overtaken["data"]["by_user_id"] == 3
        await svc.ingestor.record([item("a4", 4, 30)])  # 4 passes 3 and 1
        with failpoints.hold("notification_written") as held:
            refresh = asyncio.create_task(svc.notifier.consume())
            await held.reached()  # 1's overtaken refreshed (by 4), not committed
            async with svc.webhooks.client() as http:
                await svc.webhooks.deliver_due(http)
        await refresh
        async with svc.webhooks.client() as http:
            for _ in range(5):  # whatever is due now (the refresh's delivery)
                await svc.webhooks.deliver_due(http)
    sent = [e["data"]["data"].get("by_user_id") for e in receiver.events
            if e["type"] == "notification.created" and e["data"]["id"] == overtaken["id"]]
    assert sent and sent[-1] == 4, sent  # the latest state reached the platform
