"""The baseline server of the bench: a plain ASGI app on the same uvicorn
(httptools, uvloop) as laurels, with nothing of laurels in it.

- `GET /healthz`: `{"status": "ok"}`, the least an HTTP answer costs;
- `GET /events`: a server-sent `ready`, then the connection is held until the
  client leaves, the least a held stream costs;
- `GET /bytes/{n}`: a JSON body of n bytes (12 to 1 MiB), the least an
  answer of that size costs (a top-100 page is about 7 KB);
- `GET /bodies/{i}`: the i-th of `BENCH_BARE_BODIES` distinct bodies of 7 KB
  (made at start), the least a body drawn from many costs (bench/bodies.py:
  what 10,000 cached boards cost a server with nothing else to do);
- `POST /v1/completions`, when `BENCH_BARE_DATABASE_URL` names a database
  with the tables `bench_raw` and `bench_raw_outbox`: the body's completion
  inserted as one row and its outbox row, in a transaction of its own, from a
  pool of 20 connections (laurels' default): the least a durable single post
  costs.

    .venv/bin/uvicorn bench.bare_app:app --http httptools --loop uvloop --no-proxy-headers
"""

from __future__ import annotations

import asyncio
import functools
import os
from typing import Any

import orjson
from psycopg_pool import AsyncConnectionPool

HEALTH = b'{"status":"ok"}'
ACCEPTED = b'{"status":"accepted"}'
DATABASE_URL = os.environ.get("BENCH_BARE_DATABASE_URL")
BODIES = [b'{"entries":"' + (b"%07d" % i) * 1000 + b'"}'
          for i in range(int(os.environ.get("BENCH_BARE_BODIES") or 0))]
pool: AsyncConnectionPool | None = None


async def insert(body: bytes) -> None:
    item = orjson.loads(body)
    assert pool is not None
    async with pool.connection() as conn, conn.transaction():
        cur = await conn.execute(
            "INSERT INTO bench_raw (completion_id, user_id, points, completed_at) "
            "VALUES (%s, %s, %s, %s) RETURNING seq",
            (item["completion_id"], item["user_id"], item["points"], item["completed_at"]))
        row = await cur.fetchone()
        assert row is not None
        await conn.execute("INSERT INTO bench_raw_outbox (seq) VALUES (%s)", (row[0],))


def padded(text: str) -> bytes:
    n = int(text) if text.isdigit() and len(text) < 8 else 15
    return _padded(max(12, min(n, 1 << 20)))


@functools.cache
def _padded(n: int) -> bytes:
    return b'{"pad":"' + b"x" * (n - 10) + b'"}'


async def read_body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            global pool
            if message["type"] == "lifespan.startup":
                if DATABASE_URL:
                    pool = AsyncConnectionPool(DATABASE_URL, min_size=20, max_size=20,
                                               open=False, kwargs={"autocommit": True})
                    await pool.open(wait=True)
                await send({"type": "lifespan.startup.complete"})
            else:
                if pool is not None:
                    await pool.close()
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["path"] == "/events":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b"event: ready\r\ndata: {}\r\n\r\n",
                    "more_body": True})
        while (await receive())["type"] != "http.disconnect":
            pass
        return
    answer = HEALTH
    if scope["path"].startswith("/bytes/"):
        answer = padded(scope["path"][len("/bytes/"):])
    elif scope["path"].startswith("/bodies/") and BODIES:
        tail = scope["path"][len("/bodies/"):]
        answer = BODIES[int(tail) % len(BODIES)] if tail.isdigit() else HEALTH
    if scope["method"] == "POST" and scope["path"] == "/v1/completions" and pool is not None:
        await insert(await read_body(receive))
        answer = ACCEPTED
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(answer)).encode())]})
    await send({"type": "http.response.body", "body": answer})
    await asyncio.sleep(0)
