"""Single posts at the rate PostgreSQL commits them (issue 30): the posts
that arrive together are recorded in one transaction, each still answered
alone (an item that fails fails alone) and only after the commit."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.api.conftest import ApiFactory
from tests.helpers import INGEST, completion


async def test_posts_arriving_together_share_a_commit_and_keep_their_answers(
        serve: ApiFactory) -> None:
    api = await serve()
    ingestor = api.runtime.ingestor
    groups: list[int] = []
    record = ingestor.record

    async def counted(items: list[Any]) -> Any:
        groups.append(len(items))
        return await record(items)

    ingestor.record = counted  # type: ignore[method-assign]
    c = api.client(INGEST)
    bodies = [completion(f"g{i}", 1 + i % 7, 1 + i % 3) for i in range(60)]
    bodies += [completion("g0", 1, 1),  # the same as g0: a duplicate
               completion("g1", 2, 9),  # g1 with other points: a conflict
               {"completion_id": "bad id!", "user_id": 1, "points": 1}]  # invalid
    answers = await asyncio.gather(*(c.post("/v1/completions", json=b) for b in bodies))
    statuses = [a.status_code for a in answers]
    assert statuses[1:60] == [201] * 59
    assert sorted([statuses[0], statuses[60]]) == [200, 201]  # g0 and its copy: one records
    assert statuses[61:] == [409, 422]
    assert answers[62].json()["code"] == "validation_error"
    assert sum(groups) == len(bodies) and len(groups) < len(bodies) / 4, groups
    # Recorded, and applied: the board has every point (the answer came after).
    top = (await api.get("/v1/leaderboards/current", params={"limit": 10})).json()
    assert sum(e["score"] for e in top["entries"]) == sum(1 + i % 3 for i in range(60))
