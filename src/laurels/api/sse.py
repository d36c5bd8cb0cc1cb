"""Server-sent events at a few kilobytes per idle viewer.

A live page holds its stream for hours, and a process should hold thousands.
sse-starlette runs four tasks and a task group per stream, about 50 KiB per
idle viewer. `EventStream` runs in the request's own task, with one small
task waiting for the client to go away and a timer for the keep-alive
comment:

- `ready` is sent once the source says every later change will reach it;
- then it sleeps until its listener is woken (a hint, a notification, the
  15 s comment timer, a disconnect, the server shutting down), sends what is
  due in one write, and keeps at least `min_gap_seconds` between writes;
- a client that accepts nothing for `SEND_TIMEOUT_SECONDS` is dropped;
- on shutdown the stream ends with a last empty body, never cut off.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

PING_SECONDS = 15  # the contract: a comment line at least every 15 s
SEND_TIMEOUT_SECONDS = 30  # a client that accepts nothing for this long is dropped
HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8"),
           (b"cache-control", b"no-store"), (b"x-accel-buffering", b"no")]


class Listener(Protocol):
    wake: asyncio.Event
    closed: bool


def frame(name: str, data: bytes | str) -> bytes:
    """One server-sent message: `event: <name>` and its data."""
    text = data.decode() if isinstance(data, bytes) else data
    return b"event: " + name.encode() + b"\r\ndata: " + text.encode() + b"\r\n\r\n"


async def _disconnected(receive: Receive) -> None:
    """Return once the client has gone (a GET's empty body comes first)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class EventStream(Response):
    # Only what a stream needs (Response.__init__ would render headers and a
    # body it never uses): a stream lives for hours, thousands at a time.
    def __init__(self, listener: Listener, ready: Callable[[], Awaitable[bytes]],
                 due: Callable[[], Awaitable[list[bytes]]], close: Callable[[], None],
                 min_gap_seconds: float = 0.0) -> None:
        self.status_code = 200
        self.background = None
        self.listener = listener
        self.ready = ready  # waits until the stream may say `ready`; returns that frame
        self.due = due  # the frames to send now (and clears the listener's wake)
        self.close = close
        self.min_gap_seconds = min_gap_seconds

    def _closed(self) -> None:
        """The client went away (or the server tears the request down)."""
        self.listener.closed = True
        self.listener.wake.set()

    def _gone(self, watcher: asyncio.Future[Any]) -> None:
        self._closed()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        listener, loop = self.listener, asyncio.get_running_loop()
        pinged = False

        def ping() -> None:
            nonlocal pinged
            pinged = True
            listener.wake.set()

        # The server tells us when the client goes (api/server.py); under
        # another server, a small task waits for the disconnect instead.
        on_close = scope.get("extensions", {}).get("laurels.on_close")
        watcher: asyncio.Future[None] | None = None
        if on_close is not None:
            on_close.append(self._closed)
        else:
            watcher = asyncio.ensure_future(_disconnected(receive))
            watcher.add_done_callback(self._gone)
        timer = loop.call_later(PING_SECONDS, ping)
        try:
            await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
            await send({"type": "http.response.body", "body": await self.ready(),
                        "more_body": True})
            while not listener.closed:
                await listener.wake.wait()
                if listener.closed:
                    break
                listener.wake.clear()  # before collecting: a wake meanwhile is kept
                chunks = await self.due()
                if pinged:
                    pinged = False
                    chunks.append(b": ping\r\n\r\n")
                    timer = loop.call_later(PING_SECONDS, ping)
                if chunks:
                    async with asyncio.timeout(SEND_TIMEOUT_SECONDS):
                        await send({"type": "http.response.body", "body": b"".join(chunks),
                                    "more_body": True})
                    if self.min_gap_seconds:
                        await asyncio.sleep(self.min_gap_seconds)
        except (TimeoutError, OSError):
            return  # a client that does not read, or a broken socket: drop it
        finally:
            timer.cancel()
            if watcher is not None:
                watcher.remove_done_callback(self._gone)
                watcher.cancel()
            elif self._closed in on_close:
                on_close.remove(self._closed)
            self.close()
        await send({"type": "http.response.body", "body": b"", "more_body": False})
