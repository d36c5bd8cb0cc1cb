"""Idle, half-open and slow connections never take the API down for others,
and thousands of live viewers fit in one process.

- 4,200 idle connections, then 4,200 half-sent request heads (slowloris): a
  fresh client's `/healthz`, board read and completion post succeed at once,
  and the server closes every one of them within the header timeout plus a
  second.
- At the connection cap, only the excess is refused: a kept-alive client
  goes on being served.
- A body that trickles in is cut off.
- 5,000 SSE viewers connect at once: each gets `ready` and then the hint (or,
  beyond the stream budget, a clean 503 with Retry-After) while ordinary
  requests keep working.

Everything goes to 127.0.0.1, is bounded in count and time, and stops itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import aiohttp
import httpx
import pytest

from tests.helpers import ADMIN_AUTH, INGEST

pytestmark = [pytest.mark.once, pytest.mark.slow]

HEADER_TIMEOUT = 2.0
IDLE = 4_200
VIEWERS = 5_000


def served(url: str, tag: str) -> None:
    """A fresh client gets the health check, a board and a recorded completion."""
    with httpx.Client(base_url=url, timeout=5) as c:
        assert c.get("/healthz").status_code == 200
        assert c.get("/v1/leaderboards/current").status_code == 200
        resp = c.post("/v1/completions", headers={"Authorization": f"Bearer {INGEST}"},
                      json={"completion_id": tag, "user_id": 7, "points": 1})
        assert resp.status_code == 201, resp.text


async def hold(url: str, count: int, head: bytes) -> list[tuple[Any, Any]]:
    host, port = url.removeprefix("http://").split(":")
    conns = []
    for _ in range(count):
        reader, writer = await asyncio.open_connection(host, int(port))
        if head:
            writer.write(head)
        conns.append((reader, writer))
    return conns


async def closed_by_server(conns: list[tuple[Any, Any]], within: float) -> int:
    """How many of the connections the server closed within `within` seconds."""

    async def one(reader: asyncio.StreamReader) -> bool:
        try:
            return await asyncio.wait_for(reader.read(65536), within) == b"" or True
        except (TimeoutError, ConnectionError):
            return False

    done = await asyncio.gather(*(one(r) for r, _ in conns))
    for _, writer in conns:
        writer.close()
    return sum(done)


async def refused_by_server(conns: list[tuple[Any, Any]], within: float) -> int:
    """How many of the connections the server closed or reset within
    `within` seconds (a refused connection is aborted: a reset)."""

    async def one(reader: asyncio.StreamReader) -> bool:
        try:
            return await asyncio.wait_for(reader.read(65536), within) == b""
        except ConnectionError:
            return True
        except TimeoutError:
            return False

    return sum(await asyncio.gather(*(one(r) for r, _ in conns)))


@pytest.mark.parametrize("head", [b"", b"GET /healthz HTTP/1.1\r\nHost: laurels\r\nX-Slow: "],
                         ids=["idle", "half-sent"])
def test_idle_and_half_sent_connections_are_closed(serve: Any, head: bytes) -> None:
    server = serve(LAURELS_HEADER_TIMEOUT_SECONDS=str(HEADER_TIMEOUT))

    async def run() -> tuple[int, float]:
        conns = await hold(server.url, IDLE, head)
        opened = time.monotonic()
        # Others are served at once, with all of them open.
        await asyncio.to_thread(served, server.url, f"fresh-{len(head)}")
        closed = await closed_by_server(conns, HEADER_TIMEOUT + 1)
        return closed, time.monotonic() - opened

    closed, seconds = asyncio.run(run())
    assert closed == IDLE, f"{IDLE - closed} connections still open after {seconds:.1f} s"
    served(server.url, f"after-{len(head)}")
    metrics = httpx.get(f"{server.url}/metrics", headers=ADMIN_AUTH).text
    assert 'laurels_connections_closed_total{reason="header_timeout"}' in metrics


def test_the_cap_refuses_only_the_excess(serve: Any) -> None:
    server = serve(LAURELS_MAX_CONNECTIONS="300", LAURELS_HEADER_TIMEOUT_SECONDS="30")
    with httpx.Client(base_url=server.url, timeout=5) as kept:
        assert kept.get("/healthz").status_code == 200  # a kept-alive connection

        async def run() -> None:
            conns = await hold(server.url, 400, b"")  # 100 beyond the cap
            try:
                # The kept-alive client goes on being served at the cap...
                for _ in range(5):
                    resp = await asyncio.to_thread(kept.get, "/healthz")
                    assert resp.status_code == 200
                # ...while the excess connections were closed at once.
                refused = await closed_by_server(conns[-100:], 2)
                assert refused >= 99, refused
            finally:
                for _, writer in conns:
                    writer.close()

        asyncio.run(run())
    metrics = httpx.get(f"{server.url}/metrics", headers=ADMIN_AUTH).text
    assert 'laurels_connections_closed_total{reason="over_limit"}' in metrics


def test_one_client_holds_at_most_its_share_of_connections(serve: Any) -> None:
    """Issue 64, point 7: one client (127.0.0.1) holding its share of the
    process's connections has its next ones closed at once, while another
    client (127.0.0.2) is served; a connection it closes frees a place."""
    server = serve(LAURELS_MAX_CONNECTIONS="300", LAURELS_MAX_CONNECTIONS_PER_CLIENT="50",
                   LAURELS_HEADER_TIMEOUT_SECONDS="30")
    async def run(other: httpx.Client) -> None:
        conns = await hold(server.url, 80, b"")  # 30 beyond its share
        try:
            assert await refused_by_server(conns[50:], 2) == 30  # the excess, at once
            resp = await asyncio.to_thread(other.get, "/healthz")  # someone else: served
            assert resp.status_code == 200
            conns[0][1].close()  # one of its 50 goes: a place for it again, once seen
            deadline = time.monotonic() + 5
            while True:
                line = b""
                again = await hold(server.url, 1, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                with contextlib.suppress(ConnectionError):  # refused: reset, or closed
                    line = await asyncio.wait_for(again[0][0].readline(), 5)
                again[0][1].close()
                if line or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)  # the server has not seen the close yet
            assert line.startswith(b"HTTP/1.1 200"), line
        finally:
            for _, writer in conns:
                writer.close()

    with httpx.Client(base_url=server.url, timeout=5,  # from another address
                      transport=httpx.HTTPTransport(local_address="127.0.0.2")) as other:
        asyncio.run(run(other))
    metrics = httpx.get(f"{server.url}/metrics", headers=ADMIN_AUTH).text
    assert 'laurels_connections_closed_total{reason="over_client_share"}' in metrics


def test_a_trickling_body_is_cut_off(serve: Any) -> None:
    server = serve(LAURELS_MIN_BODY_RATE="1000")

    async def run() -> bool:
        conns = await hold(server.url, 1, b"POST /v1/completions HTTP/1.1\r\nHost: l\r\n"
                           b"Content-Type: application/json\r\nContent-Length: 100000\r\n"
                           b"Authorization: Bearer " + INGEST.encode() + b"\r\n\r\n{")
        reader, writer = conns[0]
        try:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:  # one byte a second: far below the minimum
                try:
                    writer.write(b" ")
                    await writer.drain()
                    data = await asyncio.wait_for(reader.read(1024), 1)
                    if data == b"" or data.startswith(b"HTTP/1.1"):
                        return True
                except TimeoutError:
                    continue
                except ConnectionError:
                    return True
            return False
        finally:
            writer.close()

    assert asyncio.run(run()), "the slow body was never cut off"
    served(server.url, "after-slow")


async def viewers(url: str, count: int) -> tuple[list[str], float]:
    """`count` SSE clients at once; each reports what it got."""
    outcomes: list[str] = []
    ready = asyncio.Event()
    settled = [0]
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=180)) as session:

        async def one() -> None:
            async with session.get(f"{url}/v1/leaderboards/2026-W48/events") as resp:
                if resp.status == 503:
                    assert resp.headers.get("Retry-After")
                    outcomes.append("refused")
                    settled[0] += 1
                    if settled[0] == count:
                        ready.set()
                    return
                assert resp.status == 200
                async for raw in resp.content:
                    line = raw.decode().strip()
                    if line == "event: ready":
                        settled[0] += 1
                        if settled[0] == count:
                            ready.set()
                    elif line == "event: changed":
                        outcomes.append("hinted")
                        return

        async def ordinary() -> int:
            ok = 0
            async with aiohttp.ClientSession() as s:
                while not ready.is_set():
                    async with s.get(f"{url}/healthz") as r:
                        assert r.status == 200
                        ok += 1
                    await asyncio.sleep(0.05)
            return ok

        started = time.monotonic()
        tasks = [asyncio.create_task(one()) for _ in range(count)]
        health = asyncio.create_task(ordinary())
        await asyncio.wait_for(ready.wait(), 120)
        assert await health > 0
        connected = time.monotonic() - started
        async with session.post(f"{url}/v1/completions",
                                headers={"Authorization": f"Bearer {INGEST}"},
                                json={"completion_id": "hint", "user_id": 5, "points": 3,
                                      "completed_at": "2026-11-25T10:00:00Z"}) as resp:
            assert resp.status == 201
        await asyncio.wait_for(asyncio.gather(*tasks), 120)
        return outcomes, connected


def test_five_thousand_viewers_at_once(serve: Any) -> None:
    server = serve(LAURELS_CLOSE_SEASONS="false")
    outcomes, seconds = asyncio.run(viewers(server.url, VIEWERS))
    assert len(outcomes) == VIEWERS
    assert outcomes.count("hinted") == VIEWERS, {o: outcomes.count(o) for o in set(outcomes)}
    print(f"\nVIEWERS {VIEWERS} connected and ready in {seconds:.1f} s, every one hinted")


def test_beyond_the_stream_budget_a_clean_503(serve: Any) -> None:
    server = serve(LAURELS_CLOSE_SEASONS="false", LAURELS_MAX_STREAMS="1000")
    outcomes, _ = asyncio.run(viewers(server.url, 1_200))
    assert outcomes.count("hinted") == 1000 and outcomes.count("refused") == 200
    served(server.url, "after-budget")
