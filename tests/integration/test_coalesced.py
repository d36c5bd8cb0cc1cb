"""Reads of one turn of the event loop share one round trip to Redis
(board/base.py, Coalesced; issue 30): many neighbourhoods and tops read at
once answer exactly what each read alone answers, and a Redis that lost
its scripts (NOSCRIPT) is answered too."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from laurels.core.seasons import parse_season
from laurels.runtime import Runtime

W49 = "2026-W49"
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


async def test_reads_at_once_answer_as_reads_alone(rt: Runtime) -> None:
    svc = rt.derive(clock=lambda: NOW)
    start = parse_season(W49, zone="UTC").starts_at
    await svc.ingestor.record([
        {"completion_id": f"c{u}", "user_id": u, "points": 1 + u % 13,
         "completed_at": (start + timedelta(minutes=u)).isoformat()} for u in range(1, 200)])
    season = parse_season(W49, zone="UTC")
    alone = [await svc.board.around(season, u, 3) for u in range(1, 60)]
    top_alone = await svc.board.top(season, 20)
    for _ in range(2):  # and once more after Redis lost its scripts
        together = await asyncio.gather(*(svc.board.around(season, u, 3)
                                          for u in range(1, 60)))
        tops = await asyncio.gather(*(svc.board.top(season, 20) for _ in range(10)))
        assert together == alone
        assert all(t == top_alone for t in tops)
        if svc.board.cluster:
            break  # (not coalesced on a cluster: each call goes to its slot's node)
        await svc.redis.script_flush()
