"""Names that outlive privacy (issue 25): a notification names another
learner as they are when it is read or sent, and no webhook leased before an
erasure goes out unscrubbed after it. Each interleaving is forced with the
notifier's pass run by the test, or with a held pause point, never a sleep.

The service here has webhooks on and no background loops: the test runs the
notifier and the deliveries itself, to a receiver on a loopback port.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from laurels.core import failpoints
from laurels.core.seasons import parse_season
from laurels.core.validation import ProfileIn
from laurels.live.webhooks import store_settings
from laurels.process.settings import Secrets
from laurels.runtime import Runtime, Services
from tests.helpers import (
    ADMIN,
    INGEST,
    USER_SECRET,
    WEBHOOK_SECRET,
    Receiver,
    make_settings,
    receiving,
)
from tests.invariants import blocked_or_done

W49 = "2026-W49"
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
SECRET_NAME = "Bob Secret"


def item(cid: str, uid: int, points: int, hour: int = 1) -> dict[str, Any]:
    at = parse_season(W49, zone="UTC").starts_at + timedelta(hours=hour)
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": at.isoformat()}


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with receiving() as r:
        yield r


@pytest.fixture
async def hooked(tmp_path: Path, database_url: str, redis_url: str, key_prefix: str,
                 receiver: Receiver) -> AsyncIterator[Runtime]:
    """The service with webhooks to `receiver` (no loops run by themselves)."""
    settings = make_settings(tmp_path, database_url, redis_url, key_prefix,
                             webhook_url=receiver.url)
    runtime = Runtime(settings, Secrets(INGEST, ADMIN, USER_SECRET, WEBHOOK_SECRET),
                      database_url, redis_url)
    await runtime.open(run_migrations=False)
    await store_settings(runtime.db, settings)  # as `laurels serve` does
    yield runtime
    await runtime.close()


async def passed_by_bob(rt: Runtime) -> Services:
    """Learner 2 ("Bob Secret", public) passes learner 1 on the live board;
    the rank events wait in the stream for the notifier."""
    svc = rt.derive(clock=lambda: NOW)
    await svc.rebuilder.run(
        parse_season(W49, zone="UTC"))  # a live board: rank events are computed
    await svc.learners.update(2, ProfileIn(display_name=SECRET_NAME))
    await svc.ingestor.record([item("n1", 1, 5)])
    await svc.ingestor.record([item("n2", 2, 9)])
    return svc


async def overtaken_of(svc: Services, uid: int = 1) -> dict[str, Any]:
    [note] = [n for n in (await svc.notifications.newest(uid))["notifications"]
              if n["kind"] == "overtaken"]
    return dict(note["data"])


async def deliver(rt: Runtime) -> None:
    assert rt.webhooks is not None
    async with rt.webhooks.client() as http:
        while await rt.webhooks.deliver_due(http):
            pass


def sent_overtaken(receiver: Receiver) -> list[dict[str, Any]]:
    return [e["data"]["data"] for e in receiver.events if e["type"] == "notification.created"
            and e["data"]["kind"] == "overtaken"]


# -- 3. a notification names the mover as they are when read or sent ------------------


@pytest.mark.parametrize("change", ["anonymous", "hidden", "suspended"])
async def test_a_mover_who_turns_private_before_the_notifier_is_never_named(
        hooked: Runtime, receiver: Receiver, change: str) -> None:
    """The rank event recorded Bob as public; before the notifier's pass he
    turns anonymous, hidden or is suspended. Neither the notification (read
    through the API's service) nor its webhook may name him."""
    svc = await passed_by_bob(hooked)
    if change == "suspended":
        await svc.learners.suspend(2, True, "test")
    else:
        await svc.learners.update(2, ProfileIn(visibility=change))  # type: ignore[arg-type]
    await svc.notifier.consume()
    assert await overtaken_of(svc) == {"by_user_id": None, "by_display_name": "Anonymous",
                                       "season": W49}
    await deliver(hooked)
    assert sent_overtaken(receiver) == [{"by_user_id": None, "by_display_name": "Anonymous",
                                         "season": W49}]
    assert not any(SECRET_NAME.encode() in raw for raw in receiver.raw)


async def test_a_notification_follows_the_mover_s_privacy_when_read(hooked: Runtime) -> None:
    """Written while Bob was public, the notification names him; once he is
    anonymous it no longer does (learner 1 could otherwise match him to an
    Anonymous entry of the board); public again, under his new name, it
    names him again."""
    svc = await passed_by_bob(hooked)
    await svc.notifier.consume()
    assert await overtaken_of(svc) == {"by_user_id": 2, "by_display_name": SECRET_NAME,
                                       "season": W49}
    await svc.learners.update(2, ProfileIn(visibility="anonymous"))
    assert await overtaken_of(svc) == {"by_user_id": None, "by_display_name": "Anonymous",
                                       "season": W49}
    await svc.learners.update(2, ProfileIn(visibility="public", display_name="Bob"))
    assert await overtaken_of(svc) == {"by_user_id": 2, "by_display_name": "Bob",
                                       "season": W49}
    await svc.learners.erase(2)
    assert await overtaken_of(svc) == {"by_user_id": None, "by_display_name": "Anonymous",
                                       "season": W49}


async def test_a_webhook_names_the_mover_as_they_are_when_sent(hooked: Runtime,
                                                               receiver: Receiver) -> None:
    """The event is written while Bob is public and sent after he turned
    anonymous: the body sent does not name him (the signature covers the
    body as sent)."""
    svc = await passed_by_bob(hooked)
    await svc.notifier.consume()
    await svc.learners.update(2, ProfileIn(visibility="anonymous"))
    await deliver(hooked)
    assert sent_overtaken(receiver) == [{"by_user_id": None, "by_display_name": "Anonymous",
                                         "season": W49}]
    assert not any(SECRET_NAME.encode() in raw for raw in receiver.raw)


# -- 4. a webhook leased before an erasure ---------------------------------------------------


async def test_a_delivery_leased_before_an_erasure_goes_out_scrubbed(
        hooked: Runtime, receiver: Receiver) -> None:
    """The deliveries are leased (claimed) and held before they are sent;
    Bob is erased meanwhile and the erasure commits. What goes out then is
    read after it: Bob's own events are gone, and learner 1's `overtaken`
    no longer names him."""
    svc = await passed_by_bob(hooked)
    await svc.notifier.consume()
    with failpoints.hold("webhook_claimed") as held:
        delivery = asyncio.create_task(deliver(hooked))
        await held.reached()
        await asyncio.wait_for(svc.learners.erase(2), 10)  # nothing in flight holds it
    await delivery
    await deliver(hooked)  # the erasure's own event
    assert not any(SECRET_NAME.encode() in raw or b'"by_user_id":2' in raw
                   for raw in receiver.raw)
    assert {e["data"].get("user_id") for e in receiver.events
            if e["type"] == "notification.created"} == {1}
    assert sent_overtaken(receiver) == [{"by_user_id": None, "by_display_name": "Anonymous",
                                         "season": W49}]
    assert [e["data"] for e in receiver.events if e["type"] == "user.erased"] == [
        {"user_id": 2}]


async def test_an_erasure_waits_for_a_delivery_in_flight(hooked: Runtime,
                                                        receiver: Receiver) -> None:
    """The deliveries hold their learners' erasure locks (shared) and are
    about to be sent: the erasure waits until they are answered, so what
    they say was true when it was sent, and nothing goes out after the
    erasure commits."""
    svc = await passed_by_bob(hooked)
    await svc.notifier.consume()
    with failpoints.hold("webhook_locked") as held:
        delivery = asyncio.create_task(deliver(hooked))
        await held.reached()
        erase = asyncio.create_task(svc.learners.erase(2))
        await blocked_or_done(svc, erase)
        assert not erase.done()
        assert receiver.events == []
    await delivery
    await erase
    before = len(receiver.events)
    assert any(SECRET_NAME.encode() in raw for raw in receiver.raw)  # sent before the erasure
    await deliver(hooked)
    assert [e["type"] for e in receiver.events[before:]] == ["user.erased"]
