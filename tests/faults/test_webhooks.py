"""Webhooks survive a kill mid-delivery: `laurels serve` is SIGKILLed while
the receiver holds one of its deliveries, restarted, and every event still
arrives at least once, with a valid signature; none is lost. The receiver
(a loopback port of this test) answers each event's first attempt 500,
holds one second attempt past the timeout (the kill comes then), and takes
the rest. Bounded in count and time."""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import ADMIN, INGEST, completion, free_port, wait_until

pytestmark = pytest.mark.slow

SECRET = "fault-webhook-secret"
EVENTS = 30  # voids and restores


class Receiver(http.server.ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", free_port()), Handler)
        self.lock = threading.Lock()
        self.seen: Counter[str] = Counter()  # attempts per event id
        self.taken: dict[str, dict[str, Any]] = {}
        self.bad_signatures = 0
        self.holding = threading.Event()  # a delivery is held: kill now
        self.requests = 0


class Handler(http.server.BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length)
        if len(body) < length:
            return  # its sender was killed while sending it
        parts = dict(p.split("=", 1) for p in self.headers["Laurels-Signature"].split(","))
        want = hmac.new(SECRET.encode(), f"{parts['t']}.".encode() + body,
                        hashlib.sha256).hexdigest()
        r = self.server
        event_id = self.headers["Laurels-Event-Id"]
        with r.lock:
            r.requests += 1
            if not hmac.compare_digest(want, parts["v1"]):
                r.bad_signatures += 1
            attempt = r.seen[event_id]
            r.seen[event_id] += 1
            hold = attempt == 1 and not r.holding.is_set()
            if hold:
                r.holding.set()
        if hold:  # the server is killed while this delivery is held
            time.sleep(3)
        status = 500 if attempt == 0 else 204  # each event: 500 first
        if status == 204 and not hold:
            with r.lock:
                r.taken[event_id] = json.loads(body)
        try:
            self.send_response(status)
            self.end_headers()
        except OSError:
            pass  # its sender is gone

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    thread = threading.Thread(target=r.serve_forever, daemon=True)
    thread.start()
    yield r
    r.shutdown()
    r.server_close()


def test_a_kill_mid_delivery_loses_no_event(serve: Any, receiver: Receiver) -> None:
    env = {"LAURELS_WEBHOOK_URL": f"http://127.0.0.1:{receiver.server_address[1]}/hooks",
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
    wait_until(lambda: ids <= set(receiver.taken), seconds=90)
    done = again.client(ADMIN).get("/v1/admin/webhooks/deliveries",
                                   params={"limit": 1000, "status": "delivered"}).json()
    def delivered() -> set[str]:
        return {d["id"] for d in again.client(ADMIN).get(
            "/v1/admin/webhooks/deliveries",
            params={"limit": 1000, "status": "delivered"}).json()["deliveries"]}

    assert delivered() == ids or wait_until(lambda: delivered() == ids, seconds=30)
    assert done["deliveries"] is not None and receiver.bad_signatures == 0
    types = Counter(e["type"] for e in receiver.taken.values())
    assert types["completion.voided"] == types["completion.restored"] == EVENTS // 2
    print(f"\nWEBHOOK FAULT FIGURES events={EVENTS} requests={receiver.requests} "
          f"redelivered={sum(n - 1 for n in receiver.seen.values())}")
