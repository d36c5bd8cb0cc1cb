"""Issue 64, point 9: a board whose only learners are hidden answered in half
the time of a board nobody used (Redis alone, against Redis and then two
PostgreSQL queries), so timing told that someone hidden completed there.
Both now do the same work: the same script call, the same queries in the same
order, and give the same answer. Work counted, not time (timed tests drift)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from laurels.core.seasons import parse_season
from laurels.core.validation import ProfileIn
from laurels.runtime import Runtime

NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)
WEEK = parse_season("2026-W49", zone="America/New_York")


class Queries:
    """The named queries a read runs, in order (a spy on the real database)."""

    def __init__(self, db: Any) -> None:
        self.names: list[str] = []
        for method in ("fetch", "fetch_one", "fetch_val", "execute"):
            real = getattr(db, method, None)
            if real is not None:
                setattr(db, method, self._spy(real))

    def _spy(self, real: Any) -> Any:
        async def spied(name: str, *args: Any, **params: Any) -> Any:
            self.names.append(name)
            return await real(name, *args, **params)
        return spied


@pytest.mark.parametrize("after_erasure", [False, True])
async def test_a_board_of_hidden_learners_costs_what_an_unused_one_does(
        rt: Runtime, after_erasure: bool) -> None:
    svc = rt.derive(clock=lambda: NOW)
    await svc.board_kinds.define("course", {"time_zone": "America/New_York"})
    await svc.ingestor.record([
        {"completion_id": f"h{u}", "user_id": u, "points": 5,
         "completed_at": "2026-12-01T15:00:00Z", "tags": ["course:secret"]}
        for u in (7, 8)])
    await svc.projector.drain(min_age_seconds=0)
    await svc.learners.update(7, ProfileIn(visibility="hidden"))
    if after_erasure:
        await svc.learners.erase(8)
    else:
        await svc.learners.update(8, ProfileIn(visibility="hidden"))
    used, unused = WEEK.on("course:secret", "points"), WEEK.on("course:unused", "points")
    spy = Queries(svc.db)
    answers, work = [], []
    for season in (used, unused, used, unused):
        spy.names.clear()
        page = await svc.reads.top(season, 100)
        answers.append({k: v for k, v in page.items() if k not in ("board", "season")})
        work.append(list(spy.names))
    assert answers[0] == answers[1] and answers[0]["entries"] == [] and answers[0]["total"] == 0
    assert work[0] == work[1] == work[2] == work[3], work
    assert work[0], "a missing board asks PostgreSQL: so must a hidden-only one"
