"""The suite's one webhook receiver: a `ThreadingHTTPServer` on a free
loopback port (the kind docs/webhooks.md shows), in a thread of its own, so
that a test talks to it alike whether the sender is `laurels serve` in a
subprocess, a CLI, or the service in the test's own event loop.

It records every request it gets (path, headers, body, the attempt of its
event), answers each as a script says (a status code, a hold or a delay
first, a redirect, a long body), and keeps the events it took (answered
2xx). Given the secret, it verifies every request's two signatures as
docs/webhooks.md tells a receiver to: `Laurels-Signature` (with `verify`
below, the docs' own) and the Standard Webhooks one (with that
specification's library). Whatever the script, a request whose body's `id`
is not its `Laurels-Event-Id`, or whose `webhook-id` differs from it, is a
problem; on leaving its `with` block without an error, the receiver asserts
it saw none.

    with Receiver([FAIL, SLOW], secret=WEBHOOK_SECRET) as receiver:
        ...  # each event: 500, then an answer past the timeout, then 204
    async with Receiver() as receiver:  # the same, from an async test
        ...
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

PATH = "/hooks"
CHUNK = 1 << 20  # a long answer's body is written a MiB at a time


def verify(secret: str, header: str, body: bytes, tolerance: int = 300) -> bool:
    """`Laurels-Signature` as docs/webhooks.md verifies it: genuine when
    any v1 matches and the timestamp is within `tolerance` seconds."""
    pairs = [p.split("=", 1) for p in header.split(",") if "=" in p]
    stamps = [v for k, v in pairs if k == "t"]
    if len(stamps) != 1 or not stamps[0].isdigit():
        return False
    t = int(stamps[0])
    want = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return abs(time.time() - t) <= tolerance and any(
        hmac.compare_digest(want, v) for k, v in pairs if k == "v1")


def standard_key(secret: str) -> str:
    """What a receiver gives the Standard Webhooks library for laurels'
    secret (docs/webhooks.md): a `whsec_` one as it is, any other as `whsec_`
    and the base64 of its UTF-8 bytes."""
    if secret.startswith("whsec_"):
        return secret
    return "whsec_" + base64.b64encode(secret.encode()).decode()


@dataclass(frozen=True)
class Answer:
    """How the receiver answers one request: it holds it `hold` seconds
    (math.inf: until `Receiver.release` is set, which also ends a finite
    hold), waits `delay` seconds more, then answers `status`, with a
    `location` (a path is on the receiver itself) and a body of `body`
    bytes. A 2xx answer takes the event (`Receiver.received`) unless `keep`
    is false (an answer its sender is known not to hear)."""

    status: int = 204
    hold: float = 0.0
    delay: float = 0.0
    location: str | None = None
    body: int = 0
    keep: bool = True


OK = Answer()
FAIL = Answer(500)
SLOW = Answer(delay=2.0, keep=False)  # past any timeout the tests give a sender
REDIRECT = Answer(302, location=PATH + "/elsewhere")


@dataclass
class Delivery:
    """One request, as the receiver got it."""

    index: int  # its place among every request, from 0
    path: str
    headers: Message  # case-insensitive: delivery.headers["laurels-event-id"]
    body: bytes
    cut: bool  # its sender went away before the whole body came
    event_id: str  # its Laurels-Event-Id ("" without one)
    attempt: int = 0  # the requests of its event before it (cut ones not counted)
    answer: Answer | None = None  # None: a cut one, not answered
    problems: list[str] = field(default_factory=list)
    kept: bool = False  # the event was taken (in Receiver.received)
    written: int = 0  # bytes of the answer's body written
    done: threading.Event = field(default_factory=threading.Event)  # answered, or given up

    @property
    def event(self) -> Any:
        return orjson.loads(self.body)


Script = Sequence[Answer] | Callable[["Receiver", Delivery], Answer]


class Receiver:
    """A webhook receiver on a free loopback port; `url` is where to send.

    `script`: the answer to each event's attempts in turn (OK past its
    end), or a function of the receiver and the delivery (called under the
    receiver's lock: it may read the receiver's state). `secret`: verify
    both signatures of every request with it (`bad_signatures` counts the
    requests where one does not match)."""

    def __init__(self, script: Script = (), *, secret: str | None = None) -> None:
        self.script = script
        self.secret = secret
        self.deliveries: list[Delivery] = []  # every request, cut ones too
        self.attempts: Counter[str] = Counter()  # whole requests per event id
        self.raw: list[bytes] = []  # every whole body, taken or not
        self.received: dict[str, Any] = {}  # event id -> the event, once taken
        self.events: list[Any] = []  # the events taken, in order (repeats too)
        self.bad_signatures = 0
        self.problems: list[str] = []
        self.held: list[str] = []  # event ids of the requests held (hold > 0)
        self.holding = threading.Event()  # set when the first request is held
        self.release = threading.Event()  # ends every hold (set on stop)
        self.at_once = self.most_at_once = 0  # requests being answered side by side
        self.lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.url = ""

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- running -------------------------------------------------------------------

    def start(self) -> Receiver:
        self._server = _Server(self)
        self.port = self._server.server_address[1]
        self.url = self.base + PATH
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.02}, daemon=True,
                                        name=f"webhook-receiver-{self.port}")
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop taking connections; a held request is released. Requests in
        flight finish in their own (daemon) threads."""
        self.release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        self.stop()
        if kind is None:
            assert not self.problems, self.problems

    async def __aenter__(self) -> Receiver:
        return self.start()

    async def __aexit__(self, kind: object, error: object, tb: object) -> None:
        self.__exit__(kind, error, tb)

    # -- one request -----------------------------------------------------------------

    def _answer_for(self, delivery: Delivery) -> Answer:
        if callable(self.script):
            return self.script(self, delivery)
        return self.script[delivery.attempt] if delivery.attempt < len(self.script) else OK

    def _check(self, d: Delivery) -> list[str]:
        """What is wrong with a whole request (nothing, for a well-formed
        and, given the secret, genuine one)."""
        wrong = []
        try:
            body_id = d.event.get("id") if isinstance(d.event, dict) else None
        except orjson.JSONDecodeError:
            body_id = None
        if body_id != d.event_id:
            wrong.append(f"request {d.index}: body id {body_id!r}, "
                         f"Laurels-Event-Id {d.event_id!r}")
        if "webhook-id" in d.headers and d.headers["webhook-id"] != d.event_id:
            wrong.append(f"request {d.index}: webhook-id {d.headers['webhook-id']!r}")
        if self.secret is not None:
            bad = not verify(self.secret, d.headers.get("Laurels-Signature", ""), d.body)
            try:
                Webhook(standard_key(self.secret)).verify(d.body, dict(d.headers.items()))
            except WebhookVerificationError:
                bad = True
            if "webhook-id" not in d.headers:
                bad = True
            if bad:
                wrong.append(f"request {d.index}: a signature does not match")
        return wrong

    def _handle(self, request: _Handler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length)
        cut = len(body) < length
        with self.lock:
            d = Delivery(len(self.deliveries), request.path, request.headers, body, cut,
                         request.headers.get("Laurels-Event-Id") or "")
            self.deliveries.append(d)
            if not cut:
                self.raw.append(body)
                d.attempt = self.attempts[d.event_id]
                self.attempts[d.event_id] += 1
                d.problems = self._check(d)
                self.problems += d.problems
                self.bad_signatures += any("signature" in p for p in d.problems)
                d.answer = self._answer_for(d)
                if d.answer.hold > 0:
                    self.held.append(d.event_id)
                    self.holding.set()
                self.at_once += 1
                self.most_at_once = max(self.most_at_once, self.at_once)
        if d.answer is None:  # its sender was killed while sending it
            request.close_connection = True
            d.done.set()
            return
        try:
            self._respond(request, d, d.answer)
        finally:
            with self.lock:
                self.at_once -= 1
            d.done.set()

    def _respond(self, request: _Handler, d: Delivery, answer: Answer) -> None:
        if answer.hold > 0:
            self.release.wait(None if math.isinf(answer.hold) else answer.hold)
        if answer.delay > 0:
            time.sleep(answer.delay)
        if 200 <= answer.status < 300 and answer.keep:
            with self.lock:  # taken before its sender hears the answer
                d.kept = True
                self.received[d.event_id] = d.event
                self.events.append(d.event)
        try:
            request.send_response(answer.status)
            if answer.location is not None:
                location = answer.location
                request.send_header("Location", self.base + location
                                    if location.startswith("/") else location)
            if answer.status != 204:
                request.send_header("Content-Length", str(answer.body))
            request.end_headers()
            block = b"x" * min(CHUNK, answer.body)
            while d.written < answer.body:
                part = block[:answer.body - d.written]
                request.wfile.write(part)
                d.written += len(part)
        except OSError:  # its sender is gone (timed out, killed, or read enough)
            request.close_connection = True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # connections kept, as a sender's pool expects
    timeout = 120  # an idle kept connection's thread ends after this
    server: _Server

    def do_POST(self) -> None:
        self.server.receiver._handle(self)

    def log_message(self, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # a sender's 32 connections at once wait in no SYN retry

    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver
        super().__init__(("127.0.0.1", 0), _Handler)
