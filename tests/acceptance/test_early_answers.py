"""A top page answered by the connection itself (api/early.py), against
`laurels serve`: the same bytes as the usual way's answer but for the
date, `304` to its ETag, the change a write makes seen at once, several
on one kept-alive connection, and CORS headers for a request that names
an `Origin`. The protocol's own rules (what goes the usual way, order
behind a request still answered): tests/unit/test_early.py."""

from __future__ import annotations

import re
import socket
from typing import Any

from tests.helpers import INGEST, completion

TOP = "/v1/leaderboards/current?limit=100"


def exchange(sock: socket.socket, request: bytes) -> tuple[bytes, dict[bytes, bytes], bytes]:
    """Send one request; the status line, headers and body of its answer."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536) or b""
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.split(b"\r\n")
    headers = {k.lower(): v for k, v in (line.split(b": ", 1) for line in lines)}
    while len(body) < int(headers.get(b"content-length", b"0")):
        body += sock.recv(65536)
    return status, headers, body


def get(url: str, extra: bytes = b"") -> bytes:
    return f"GET {url} HTTP/1.1\r\nHost: laurels\r\n".encode() + extra + b"\r\n"


def connect(server: Any) -> socket.socket:
    port = int(server.url.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    return sock


def test_a_known_top_page_answered_early_is_the_usual_answer(serve: Any) -> None:
    server = serve()
    c = server.client(INGEST)
    assert c.post("/v1/completions", json=completion("k1", 1, 5)).status_code == 201
    with connect(server) as sock:
        first = exchange(sock, get(TOP))  # the usual way: it fills the cache
        answers = [exchange(sock, get(TOP)) for _ in range(5)]  # early, kept alive
    for status, headers, body in answers:
        assert (status, body) == (first[0], first[2]) == (b"HTTP/1.1 200 OK", first[2])
        assert {k: v for k, v in headers.items() if k != b"date"} == \
            {k: v for k, v in first[1].items() if k != b"date"}
    assert set(first[1]) == {b"date", b"server", b"content-type", b"etag", b"content-length"}
    assert [int(s) for s in re.findall(rb'"score":(\d+)', first[2])] == [5], first[2]
    etag = first[1][b"etag"]
    with connect(server) as sock:
        status, headers, body = exchange(sock, get(TOP, b"If-None-Match: " + etag + b"\r\n"))
        assert (status, headers[b"etag"], body) == (b"HTTP/1.1 304 Not Modified", etag, b"")
        # A write: its hint drops the body; the next read is of the new board.
        assert c.post("/v1/completions", json=completion("k2", 2, 9)).status_code == 201
        status, headers, body = exchange(sock, get(TOP))
        assert status == b"HTTP/1.1 200 OK" and headers[b"etag"] != etag
        scores = [int(s) for s in re.findall(rb'"score":(\d+)', body)]
        assert scores == [9, 5], body
        again = exchange(sock, get(TOP))
        assert again[2] == body and again[1][b"etag"] == headers[b"etag"]


def test_a_request_naming_an_origin_gets_its_cors_headers(serve: Any) -> None:
    origin = b"https://school.example"
    server = serve(LAURELS_CORS_ORIGINS=origin.decode())
    with connect(server) as sock:
        _, usual, _ = exchange(sock, get(TOP))  # fills the cache
        _, plain, _ = exchange(sock, get(TOP))  # early
        _, cors, _ = exchange(sock, get(TOP, b"Origin: " + origin + b"\r\n"))
    # The early answer is the usual one, `Vary: Origin` included (a shared
    # cache must not send it to a browser's request naming an origin).
    assert {k: v for k, v in plain.items() if k != b"date"} == \
        {k: v for k, v in usual.items() if k != b"date"}
    assert plain[b"vary"] == b"Origin" and b"access-control-allow-origin" not in plain
    assert cors[b"access-control-allow-origin"] == origin
    assert cors[b"access-control-expose-headers"].lower() == b"etag"
