"""A request answered by the connection itself (api/early.py): the app's
early answer in one write, with no ASGI call, only when nothing asks for
the usual way; and the usual way, in order, for everything else. The
lane's own early answers against a real server: tests/acceptance/
test_early_answers.py."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from laurels.api.early import Answer, Headers
from laurels.api.server import GuardedProtocol
from tests.unit.test_served import Transport as Written

DEFAULTS = [(b"date", b"Sat, 05 Dec 2026 22:00:00 GMT"), (b"server", b"uvicorn")]
KNOWN = (b"HTTP/1.1 200 OK\r\ndate: Sat, 05 Dec 2026 22:00:00 GMT\r\nserver: uvicorn\r\n"
         b"content-type: application/json\r\netag: \"e\"\r\ncontent-length: 9\r\n\r\n"
         b'{"top":1}')


class Transport(Written):
    """What reaches the socket, and what uvicorn asks of a transport."""

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class App:
    """Knows `/known?a=1` early; answers everything else the usual way, after
    `release` is set for `/slow`. `started(path)` and `finished(path)` wait
    for its usual answer to a path to begin and to be sent."""

    def __init__(self) -> None:
        self.called: list[str] = []
        self.asked: list[tuple[str, bytes]] = []
        self.release = asyncio.Event()
        self.events: defaultdict[tuple[str, str], asyncio.Event] = defaultdict(asyncio.Event)

    async def started(self, path: str) -> None:
        await asyncio.wait_for(self.events["started", path].wait(), 5)

    async def finished(self, path: str) -> None:
        await asyncio.wait_for(self.events["finished", path].wait(), 5)

    def answer_early(self, path: str, query: bytes, headers: Headers) -> Answer | None:
        self.asked.append((path, query))
        if (path, query) == ("/known", b"a=1"):
            return 200, [(b"content-type", b"application/json"), (b"etag", b'"e"')], b'{"top":1}'
        return None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope["path"]
        self.called.append(path)
        self.events["started", path].set()
        if path == "/slow":
            await self.release.wait()
        body = f"usual {path}".encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
        self.events["finished", path].set()


def connect(app: App, **options: Any) -> tuple[GuardedProtocol, Transport]:
    config = Config(app=app, http=GuardedProtocol, proxy_headers=False, access_log=False,
                    **options)
    config.load()
    state = ServerState()
    state.default_headers = DEFAULTS
    protocol = GuardedProtocol(config=config, server_state=state, app_state={})
    transport = Transport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, transport


async def test_a_known_page_is_one_write_and_no_asgi_call() -> None:
    app = App()
    protocol, transport = connect(app)
    request = b"GET /known?a=1 HTTP/1.1\r\nHost: x\r\n\r\n"
    protocol.data_received(request)
    assert transport.writes == [KNOWN] and app.called == []
    protocol.data_received(request + request)  # kept alive; two in one read
    assert transport.writes == [KNOWN] * 3 and app.called == []
    assert protocol.server_state.total_requests == 3
    assert protocol.timeout_keep_alive_task is not None  # as after any response
    protocol.data_received(b"GET /other HTTP/1.1\r\nHost: x\r\n\r\n")  # not known
    await app.finished("/other")
    assert app.called == ["/other"] and transport.writes[-1].endswith(b"usual /other")
    assert not transport.closed


async def test_one_keep_alive_timer_however_many_answered_in_one_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each answer arms the keep-alive timer, as after any response
    (uvicorn's on_response_complete); one armed before in the same read must
    not stay armed (it would close the connection 5 s later, in use or not)."""
    app = App()
    protocol, transport = connect(app)
    loop, armed = asyncio.get_running_loop(), []  # (handle, its callback)

    def call_later(delay: float, callback: Any, *args: Any) -> asyncio.TimerHandle:
        handle = asyncio.BaseEventLoop.call_later(loop, delay, callback, *args)
        armed.append((handle, callback))
        return handle

    monkeypatch.setattr(loop, "call_later", call_later)
    protocol.data_received(b"GET /known?a=1 HTTP/1.1\r\nHost: x\r\n\r\n" * 3)
    assert transport.writes == [KNOWN] * 3
    keep_alive = [h for h, c in armed if c == protocol.timeout_keep_alive_handler]
    assert len(keep_alive) == 3
    assert [h.cancelled() for h in keep_alive] == [True, True, False]
    assert protocol.timeout_keep_alive_task is keep_alive[-1]


async def test_no_keep_alive_timer_while_the_next_request_is_answered() -> None:
    """A known page then a slow request in one read: the timer the early
    answer armed must not close the connection under the slow one."""
    app = App()
    protocol, transport = connect(app)
    protocol.data_received(b"GET /known?a=1 HTTP/1.1\r\nHost: x\r\n\r\n"
                           b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
    await app.started("/slow")
    assert transport.writes == [KNOWN] and app.called == ["/slow"]
    assert protocol.timeout_keep_alive_task is None  # none while /slow runs
    app.release.set()
    await app.finished("/slow")
    assert transport.writes[-1].endswith(b"usual /slow")
    assert protocol.timeout_keep_alive_task is not None  # idle again: armed


async def test_a_client_that_does_not_read_meets_back_pressure() -> None:
    """While the connection's writes are paused (its buffer past the high
    mark), a known page goes the usual way, which waits for the drain."""
    app = App()
    protocol, transport = connect(app)
    protocol.pause_writing()  # what the transport calls past its high mark
    protocol.data_received(b"GET /known?a=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    await app.started("/known")  # (its send then waits for the drain)
    assert transport.writes == [] and app.called == ["/known"]
    protocol.resume_writing()
    await app.finished("/known")
    assert transport.writes[-1].endswith(b"usual /known")


async def test_a_refused_head_after_early_answers_is_refused_once() -> None:
    app = App()
    protocol, transport = connect(app)
    protocol.data_received(b"GET /known?a=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    protocol.data_received(b"GET /known?a=1 HTTP/1.1\r\n"
                           + b"".join(b"X-%d: y\r\n" % i for i in range(101)) + b"\r\n")
    assert len(transport.writes) == 2 and transport.writes[0] == KNOWN
    assert transport.writes[1].startswith(b"HTTP/1.1 431 ") and transport.closed


async def test_behind_a_request_still_answered_it_waits_its_turn() -> None:
    app = App()
    protocol, transport = connect(app)
    protocol.data_received(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"
                           b"GET /known?a=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    await app.started("/slow")
    assert transport.writes == []  # nothing overtakes /slow (decided as it was read)
    app.release.set()
    await app.finished("/known")
    assert b"".join(transport.writes).index(b"usual /slow") \
        < b"".join(transport.writes).index(b"usual /known")
    assert app.called == ["/slow", "/known"]


@pytest.mark.parametrize("request_", [
    b"GET /known?a=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    b"GET /known?a=1 HTTP/1.0\r\nHost: x\r\n\r\n",
    b"GET /known?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
    b"HEAD /known?a=1 HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /known?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
    b"GET /%6Bnown?a=1 HTTP/1.1\r\nHost: x\r\n\r\n",
], ids=["close", "http-1.0", "body", "head", "post", "percent"])
async def test_anything_unusual_goes_the_usual_way(request_: bytes) -> None:
    app = App()
    protocol, transport = connect(app)
    protocol.data_received(request_)
    await app.finished("/known")
    assert app.called == ["/known"], transport.writes
    assert KNOWN not in transport.writes


async def test_with_an_access_log_every_request_goes_the_usual_way() -> None:
    app = App()
    protocol, _ = connect(app)
    protocol.access_log = True  # (uvicorn's --access-log: each request logged)
    protocol.data_received(b"GET /known?a=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    await app.finished("/known")
    assert app.called == ["/known"] and app.asked == []
