"""The HTTP server: uvicorn with httptools and uvloop, and the limits it lacks.

uvicorn has no timeout for a request's headers and no minimum body rate, and
its `limit_concurrency` answers *every* new request with 503 once the cap is
reached, so one client holding thousands of idle sockets took the API down
for everyone. `GuardedProtocol` adds, below the app:

- a connection cap that refuses only the excess: a connection beyond
  `max_connections` is closed at once; established ones go on being served;
- a share per client (api/clients.py): a client holding
  `max_connections_per_client` has its next connection closed at once;
- a header timeout: a connection that has not sent a complete request head
  within `header_timeout_seconds` of opening (or of starting a request) is
  closed (slowloris), at most `HEAD_SWEEP_SECONDS` late: one timer a
  server sweeps the heads due, not one timer a request;
- a minimum body rate: a body that trickles in slower than `min_body_rate`
  bytes a second (measured over `BODY_WINDOW_SECONDS`) is cut off;
- the header limits the h11 parser used to give: at most `MAX_HEADERS`
  headers and `MAX_HEADER_BYTES` of them, an URL of at most `MAX_URL_BYTES`
  (`431` / `414`, then close).

Keep-alive stays uvicorn's own (5 s after a response). Streams have their own
budget (`api/sse.py`), so live viewers cannot starve ordinary requests. When
the server starts shutting down (SIGTERM, Ctrl-C) it asks every connection
to finish (`shutdown`): a connection ends its streams then, so each sends
its last frame and closes cleanly instead of being cut off after the
graceful-shutdown timeout.
"""

from __future__ import annotations

import asyncio
import gc
import resource
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from laurels.api.clients import ClientShares, share_of
from laurels.api.early import answer_early
from laurels.core.metrics import CONNECTIONS_CLOSED
from laurels.process.settings import IPNetwork, Settings

MAX_HEADERS = 100
MAX_HEADER_BYTES = 64 * 1024
MAX_URL_BYTES = 16 * 1024
BODY_WINDOW_SECONDS = 5.0
HEAD_SWEEP_SECONDS = 0.25  # a late request head is closed at most this much after its deadline
BODY_HEADERS = frozenset((b"content-length", b"transfer-encoding"))
FD_HEADROOM = 256  # descriptors kept for stores, logs and files


@dataclass(frozen=True)
class Limits:
    max_connections: int = 10_000
    header_timeout_seconds: float = 10.0
    min_body_rate: int = 1024  # bytes per second
    max_per_client: int = 1_000
    trusted_proxies: tuple[IPNetwork, ...] = ()
    v6_prefix: int = 64


def raise_fd_limit(wanted: int) -> int:
    """Raise this process's open-file limit to its hard limit (the usual soft
    limit, 1,024, is far below thousands of live viewers); returns how many
    connections it allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, wanted + FD_HEADROOM)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return max(1, min(wanted, soft - FD_HEADROOM))


class _Guard:
    """Per-connection state of the limits (slots: a few dozen bytes)."""

    __slots__ = ("answered", "body_seen", "body_timer", "body_window_start", "client",
                 "has_body", "header_bytes", "header_count", "in_body", "on_close",
                 "url_bytes")

    def __init__(self) -> None:
        self.client: str | None = None  # counted against its share (None: not counted)
        self.body_timer: asyncio.TimerHandle | None = None
        self.has_body = False
        self.header_count = self.header_bytes = self.url_bytes = 0
        self.body_seen = self.body_window_start = 0
        self.in_body = False
        self.answered = False  # this request was answered early (api/early.py)
        # Callbacks to run when the connection goes or the server shuts down
        # (the ASGI extension "laurels.on_close"): a stream learns of either
        # without a task of its own, and ends.
        self.on_close: list[Callable[[], None]] = []


# The collector's first generation: collected every this many allocations
# (Python's default is 700). A tagged batch makes tens of thousands of
# short-lived objects; at 700 the collector ran about a hundred times a
# batch and cost 15-25% of ingest's Python (bench/tags.py, docs/performance.md,
# "The garbage collector").
GC_FIRST_GENERATION = 50_000


def tune_collector() -> None:
    """This process's garbage collector for serving: everything made so far
    (modules, the service's objects) moved out of the collector's way for
    good, and its first generation collected less often. A serving process
    holds its objects for its life; the cycles it makes are few and small."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_FIRST_GENERATION, *gc.get_threshold()[1:])


def configure(settings: Settings) -> Limits:
    """This process's limits (each worker calls it before it serves), and
    its garbage collector (tune_collector)."""
    tune_collector()
    limits = Limits(max_connections=raise_fd_limit(settings.max_connections),
                    header_timeout_seconds=settings.header_timeout_seconds,
                    min_body_rate=settings.min_body_rate,
                    max_per_client=settings.max_connections_per_client,
                    trusted_proxies=settings.trusted_proxies,
                    v6_prefix=settings.client_ipv6_prefix)
    GuardedProtocol.limits = limits
    return limits


def options(settings: Settings) -> dict[str, Any]:
    """uvicorn's settings: httptools and uvloop, the GuardedProtocol, keep-alive
    5 s, 10 s for a graceful shutdown, no proxy headers (laurels reads no
    client address, and every frame a request keeps alive is multiplied by
    thousands of live streams), the access log only when asked for."""
    return {"http": "laurels.api.server:GuardedProtocol", "loop": "uvloop",
            "timeout_keep_alive": 5, "timeout_graceful_shutdown": 10,
            "proxy_headers": False, "access_log": settings.access_log}


class Served:
    """What one server's connections share, made once per server
    (uvicorn's ServerState): the deadlines of the request heads being
    read, swept by one timer a few times a second, and the response heads
    held until the end of their turn, released by one callback a turn. Each
    was a timer or a callback of its own for every request (issue 45: 2-4 us
    a request of /healthz's 30)."""

    __slots__ = ("due", "held", "loop", "shares", "sweeper")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.shares = ClientShares()  # the connections each client holds
        self.due: dict[GuardedProtocol, float] = {}  # connection -> its head's deadline
        self.sweeper: asyncio.TimerHandle | None = None
        self.held: list[Corked] = []

    @staticmethod
    def of(server_state: Any, loop: asyncio.AbstractEventLoop) -> Served:
        served: Served | None = getattr(server_state, "laurels_served", None)
        if served is None:
            served = server_state.laurels_served = Served(loop)
        return served

    def arm(self, protocol: GuardedProtocol, seconds: float) -> None:
        """A head is due within `seconds` (from when first armed: a
        connection's first request has its time from the connection on)."""
        self.due.setdefault(protocol, self.loop.time() + seconds)
        if self.sweeper is None:
            self.sweeper = self.loop.call_later(HEAD_SWEEP_SECONDS, self.sweep)

    def disarm(self, protocol: GuardedProtocol) -> None:
        self.due.pop(protocol, None)

    def sweep(self) -> None:
        """Close every connection whose head is late (at most
        HEAD_SWEEP_SECONDS after its deadline); again while any is due."""
        self.sweeper = None
        now = self.loop.time()
        for protocol in [p for p, deadline in self.due.items() if deadline <= now]:
            del self.due[protocol]
            protocol._close("header_timeout")
        if self.due:
            self.sweeper = self.loop.call_later(HEAD_SWEEP_SECONDS, self.sweep)

    def hold(self, corked: Corked) -> None:
        if not self.held:
            self.loop.call_soon(self.release)
        self.held.append(corked)

    def release(self) -> None:
        held, self.held = self.held, []
        for corked in held:
            corked.release()


class Corked:
    """A connection's transport whose response head waits for its body:
    uvicorn writes the status line and headers on `http.response.start` and
    the body on `http.response.body`, two sends for every response; held
    until the body follows (in the same turn of the loop, as the fast lane
    and FastAPI send them), both go in one (issue 30). A head no body
    follows in that turn (a live stream's) goes out at the end of the turn;
    closing sends what is held first. Everything else is the transport's."""

    __slots__ = ("_held", "_served", "_transport")

    def __init__(self, transport: asyncio.Transport, served: Served) -> None:
        self._transport = transport
        self._served = served
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        if self._held is not None:
            data, self._held = self._held + data, None
        elif data.startswith(b"HTTP/1.1 ") and not data.startswith(b"HTTP/1.1 100 "):
            self._held = data
            self._served.hold(self)
            return
        self._transport.write(data)

    def write_whole(self, data: bytes) -> None:
        """A whole response (head and body), after what is held."""
        self.release()
        self._transport.write(data)

    def release(self) -> None:
        if self._held is not None:
            data, self._held = self._held, None
            self._transport.write(data)

    def close(self) -> None:
        self.release()
        self._transport.close()

    # What uvicorn and the guard ask of a transport on every request, named
    # (a name found only through __getattr__ costs a failed lookup first).
    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class GuardedProtocol(HttpToolsProtocol):
    limits: ClassVar[Limits] = Limits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = _Guard()  # one attribute: the instance's dict stays small
        self.served = Served.of(self.server_state, self.loop)

    # -- connections -------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limits.max_connections:
            CONNECTIONS_CLOSED.labels("over_limit").inc()
            transport.abort()  # the excess only; everyone connected goes on
            return
        client = share_of(transport.get_extra_info("peername"), self.limits.trusted_proxies,
                          self.limits.v6_prefix)
        if client is not None:
            if not self.served.shares.take(client, self.limits.max_per_client):
                CONNECTIONS_CLOSED.labels("over_client_share").inc()
                transport.abort()  # this client's excess; everyone else goes on
                return
            self.guard.client = client
        super().connection_made(transport)
        self.transport = Corked(transport, self.served)  # type: ignore[assignment]
        self._arm_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.guard.client is not None:
            self.served.shares.give(self.guard.client)
            self.guard.client = None
        if self.transport is None:  # refused in connection_made
            return
        super().connection_lost(exc)
        callbacks, self.guard.on_close = self.guard.on_close, []
        for callback in callbacks:
            callback()

    def shutdown(self) -> None:
        """The server is shutting down: end this connection's streams (they
        finish their response), then uvicorn's own (close when idle, else
        after the response)."""
        for callback in list(self.guard.on_close):
            callback()
        super().shutdown()

    def _disarm(self) -> None:
        self.served.disarm(self)
        if self.guard.body_timer is not None:
            self.guard.body_timer.cancel()
            self.guard.body_timer = None

    def _close(self, reason: str) -> None:
        CONNECTIONS_CLOSED.labels(reason).inc()
        self._disarm()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    # -- the request head ----------------------------------------------------------

    def _arm_head(self) -> None:
        self.served.arm(self, self.limits.header_timeout_seconds)

    def data_received(self, data: bytes) -> None:
        if self.parser is None:
            return
        super().data_received(data)
        if self.guard.in_body:
            self.guard.body_seen += len(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope["extensions"] = {"laurels.on_close": self.guard.on_close}  # type: ignore[dict-item]
        self.guard.header_count = self.guard.header_bytes = self.guard.url_bytes = 0
        self.guard.has_body = False
        self._arm_head()  # a new request on a kept-alive connection: its head is timed

    def on_url(self, url: bytes) -> None:
        self.guard.url_bytes += len(url)
        if self.guard.url_bytes > MAX_URL_BYTES:
            self._refuse(414, b"URI Too Long")
            return
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.guard.header_count += 1
        self.guard.header_bytes += len(name) + len(value)
        if self.guard.header_count > MAX_HEADERS or self.guard.header_bytes > MAX_HEADER_BYTES:
            self._refuse(431, b"Request Header Fields Too Large")
            return
        super().on_header(name, value)
        if self.headers[-1][0] in BODY_HEADERS:  # (lowered by uvicorn)
            self.guard.has_body = True

    def _refuse(self, status: int, reason: bytes) -> None:
        if self.transport.is_closing():
            return
        self.transport.write(b"HTTP/1.1 %d %s\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                             % (status, reason))
        self._close("header_limit")

    def on_headers_complete(self) -> None:
        if self.transport.is_closing():
            return
        self.served.disarm(self)
        if answer_early(self):  # a known top page: no ASGI cycle at all
            self.guard.answered = True
            return
        # No keep-alive timer while a request is answered: one an early
        # answer armed in this same read would close the connection under
        # it (uvicorn cancels its own when data arrives, before parsing).
        self._unset_keepalive_if_required()
        super().on_headers_complete()
        if self.guard.has_body and self.cycle is not None and self.cycle.more_body:
            self.guard.in_body = True
            self.guard.body_seen = self.guard.body_window_start = 0
            self.guard.body_timer = self.loop.call_later(BODY_WINDOW_SECONDS, self._check_body)

    # -- the request body --------------------------------------------------------------

    def _check_body(self) -> None:
        self.guard.body_timer = None
        if not self.guard.in_body or self.transport.is_closing():
            return
        received = self.guard.body_seen - self.guard.body_window_start
        # Reading paused by our own back-pressure is not the client's slowness.
        if not self.flow.read_paused and received < self.limits.min_body_rate \
                * BODY_WINDOW_SECONDS:
            self._close("slow_body")
            return
        self.guard.body_window_start = self.guard.body_seen
        self.guard.body_timer = self.loop.call_later(BODY_WINDOW_SECONDS, self._check_body)

    def on_message_complete(self) -> None:
        if self.guard.answered:  # it has no cycle of its own to tell
            self.guard.answered = False
            return
        if self.cycle is None:  # a refused head (431, 414): no cycle to tell
            return
        self.guard.in_body = False
        if self.guard.body_timer is not None:
            self.guard.body_timer.cancel()
            self.guard.body_timer = None
        super().on_message_complete()
