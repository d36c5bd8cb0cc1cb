"""Known top pages answered by the connection itself, before any ASGI.

A kind may have 10,000 boards, each with its own top page, read at random
(issue 42). The fast lane sent a known page from the cache without routing
(`KnownPages`, api/fast.py), but every request still paid uvicorn's cycle:
a `RequestResponseCycle`, an asyncio task, two ASGI messages and a head
built from a list of headers. Measured at 10,000 boards, that was 45-51 us
of the server's CPU a request against `/healthz`'s 26-28 us (0.51-0.57 of
its rate: docs/performance.md, "A known top page, answered early").

So, when the request head is complete, `GuardedProtocol` asks the app
(`answer_early`): a `GET` with no body, HTTP/1.1 kept alive, nothing before
it still being answered on the connection (no pipelining to keep in
order), the connection's writes not paused (a client that pipelines
without reading meets uvicorn's back-pressure, as on the usual way: the
usual way waits for the socket to drain and stops reading meanwhile),
no access log to write, and a (path, query string) whose top page
the cache holds now gets the lane's own answer (the same status, headers
and body: `known_top`) written in one piece, and the connection goes on as
after any response (uvicorn's `on_response_complete`: the keep-alive timer,
reading resumed). Anything else, and every request the cache does not hold
a body for, goes the usual way, unchanged. The rules that keep a body
exact are the cache's (api/caches.py): this is only a shorter way to send
it.

With cross-origin reads configured (`ReadCors`), a request that names an
`Origin` goes the usual way, so it gets its CORS headers; one that does not
gets `Vary: Origin`, as CORS gives it on the usual way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE

from laurels.api.caches import not_modified

if TYPE_CHECKING:
    from laurels.api.server import Corked, GuardedProtocol
    from laurels.api.state import ApiState

Headers = list[tuple[bytes, bytes]]
Answer = tuple[int, Headers, bytes]
# An app that may answer a request from its head alone has this method
# (FastLane, ReadCors): (path, query string, headers) -> answer or None.
Early = Callable[[str, bytes, Headers], "Answer | None"]
JSON_HEADERS: Headers = [(b"content-type", b"application/json")]


def known_top(state: ApiState, path: str, query: bytes, headers: Headers) -> Answer | None:
    """The answer to a (path, query string) answered before with a top page,
    while the cache holds its body (`304` to a matching `If-None-Match`)."""
    page = state.top_pages.get(path, query)
    if page is None:
        return None
    hit = state.board_cache.get(*page)
    if hit is None:
        return None
    if not_modified(headers, hit.etag):
        return 304, [(b"etag", hit.etag)], b""
    return 200, [*JSON_HEADERS, (b"etag", hit.etag)], hit.body


def answer_early(protocol: GuardedProtocol) -> bool:
    """Answer the request whose head `protocol` just read, if the app knows
    the answer and nothing asks for the usual way (see the module's doc);
    True if it was answered."""
    early: Early | None = getattr(protocol.app, "answer_early", None)
    parser = protocol.parser
    if early is None or protocol.guard.has_body or protocol.pipeline or protocol.access_log \
            or protocol.flow.write_paused \
            or (protocol.cycle is not None and not protocol.cycle.response_complete) \
            or parser.get_method() != b"GET" or parser.get_http_version() != "1.1" \
            or not parser.should_keep_alive() or parser.should_upgrade():
        return False
    url = httptools.parse_url(protocol.url)
    if b"%" in url.path:
        return False  # as uvicorn would decode it: the usual way
    answer = early(protocol.root_path + url.path.decode("ascii"), url.query or b"",
                   protocol.headers)
    if answer is None:
        return False
    status, headers, body = answer
    content = [STATUS_LINE[status]]
    for name, value in (*protocol.server_state.default_headers, *headers):
        content += (name, b": ", value, b"\r\n")
    content += (b"content-length: ", b"%d" % len(body), b"\r\n\r\n", body)
    corked: Corked = protocol.transport  # type: ignore[assignment]
    corked.write_whole(b"".join(content))
    protocol.on_response_complete()
    return True
