"""The baseline server of the bench: a plain ASGI app on the same uvicorn
(httptools, uvloop) as laurels, with nothing of laurels in it.

- `GET /healthz`: `{"status": "ok"}`, the least an HTTP answer costs;
- `GET /events`: a server-sent `ready`, then the connection is held until the
  client leaves, the least a held stream costs.

    .venv/bin/uvicorn bench.bare_app:app --http httptools --loop uvloop --no-proxy-headers
"""

from __future__ import annotations

import asyncio
from typing import Any

HEALTH = b'{"status":"ok"}'


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
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
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(HEALTH)).encode())]})
    await send({"type": "http.response.body", "body": HEALTH})
    await asyncio.sleep(0)
