"""A stream left half-read is closed with its transaction (db.Tx.forget_cursors).

CI once failed at a test's teardown on "AsyncServerCursor 'erased_since_665'
was deleted while still open": a catch-up cancelled in the middle of a
stream left its generator suspended, and it was collected after the event
loop could no longer close it. The transaction's end closes every named
cursor it opened (PostgreSQL's side at once; here the client's)."""

from __future__ import annotations

import gc
import warnings

import pytest

from laurels.runtime import Runtime


async def test_a_stream_left_half_read_is_closed_with_its_transaction(rt: Runtime) -> None:
    async with rt.db.connection() as conn:
        await conn.execute(
            "INSERT INTO challenges (challenge_id, title, starts_at, ends_at)"
            " SELECT 'c' || n, 'C', now(), now() + interval '1 day'"
            " FROM generate_series(1, 3) n")
    for opened in (rt.db.transaction, rt.db.snapshot):
        stream = None
        with pytest.raises(RuntimeError):
            async with opened() as tx:
                stream = rt.db.stream_column("challenge_ids", tx, 1)
                assert await anext(stream) == ["c1"]  # one of three batches read
                cursor = tx._cursors[0]
                assert not cursor.closed
                raise RuntimeError("the consumer stops here")
        assert cursor.closed  # closed with the transaction, the generator still suspended
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            del stream
            gc.collect()  # (the generator collected: nothing warns)
