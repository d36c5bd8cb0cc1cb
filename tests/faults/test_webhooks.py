"""Webhooks survive a kill mid-delivery: `laurels serve` is SIGKILLed while
the receiver holds one of its deliveries, restarted, and every event still
arrives at least once, with a valid signature; none is lost. The receiver
(a loopback port of this test) answers each event's first attempt 500,
holds one second attempt past the timeout (the kill comes then), and takes
the rest. Bounded in count and time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import ADMIN, INGEST, completion, wait_until
from tests.webhook_receiver import FAIL, OK, Answer, Delivery, Receiver

pytestmark = pytest.mark.slow

SECRET = "fault-webhook-secret"
EVENTS = 30  # voids and restores


HELD = Answer(hold=3, keep=False)  # the server is killed while it is held


def answer(receiver: Receiver, delivery: Delivery) -> Answer:
    """Each event's first attempt 500; the first second attempt of any
    event held (never taken: its sender is killed meanwhile); the rest 204."""
    if delivery.attempt == 0:
        return FAIL
    if delivery.attempt == 1 and not receiver.holding.is_set():
        return HELD
    return OK


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver(answer, secret=SECRET) as r:
        yield r


def test_a_kill_mid_delivery_loses_no_event(serve: Any, receiver: Receiver) -> None:
    env = {"LAURELS_WEBHOOK_URL": receiver.url,
           "LAURELS_WEBHOOK_SECRET": SECRET, "LAURELS_WEBHOOK_TIMEOUT_SECONDS": "1",
           "LAURELS_CLOSE_SEASONS": "false"}
    server = serve(**env)
    c = server.client(INGEST)
    for i in range(EVENTS // 2):
        assert c.post("/v1/completions", json=completion(f"w{i}", 1 + i % 5, 3)).status_code \
            == 201
    admin = server.client(ADMIN)
    for i in range(EVENTS // 2):
        assert admin.post(f"/v1/admin/completions/w{i}/void",
                          json={"reason": "fault"}).status_code == 200
        assert admin.post(f"/v1/admin/completions/w{i}/restore").status_code == 200
    assert receiver.holding.wait(30), "no delivery was ever held"
    server.process.kill()  # SIGKILL, mid-delivery
    server.process.wait(10)
    again = serve(**env)
    listed = again.client(ADMIN).get("/v1/admin/webhooks/deliveries",
                                     params={"limit": 1000}).json()["deliveries"]
    ids = {d["id"] for d in listed}  # the corrections, and the top-10 notifications
    assert Counter(d["type"] for d in listed)["completion.voided"] == EVENTS // 2
    wait_until(lambda: ids <= set(receiver.received), seconds=90)
    done = again.client(ADMIN).get("/v1/admin/webhooks/deliveries",
                                   params={"limit": 1000, "status": "delivered"}).json()
    def delivered() -> set[str]:
        return {d["id"] for d in again.client(ADMIN).get(
            "/v1/admin/webhooks/deliveries",
            params={"limit": 1000, "status": "delivered"}).json()["deliveries"]}

    assert delivered() == ids or wait_until(lambda: delivered() == ids, seconds=30)
    assert done["deliveries"] is not None and receiver.bad_signatures == 0
    types = Counter(e["type"] for e in receiver.received.values())
    assert types["completion.voided"] == types["completion.restored"] == EVENTS // 2
    print(f"\nWEBHOOK FAULT FIGURES events={EVENTS} requests={receiver.attempts.total()} "
          f"redelivered={sum(n - 1 for n in receiver.attempts.values())}")
