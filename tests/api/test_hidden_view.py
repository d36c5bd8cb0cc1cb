"""A hidden learner's own neighbourhood is one consistent view (issue 26):
they stand where they would, and the others are ranked as if they were on
the board, so no two rows share a unique rank. On the live board and on a
finalized season's archive, under both tie policies."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from laurels.core.seasons import parse_season
from tests.api.conftest import ApiFactory
from tests.api.test_periods import post
from tests.helpers import INGEST, eventually, token_for

ITEMS = [("v1", 1, 20, "2025-12-01T10:00:00Z"), ("v2", 2, 12, "2025-12-01T11:00:00Z"),
         ("v3", 3, 8, "2025-12-01T12:00:00Z"), ("v4", 4, 8, "2025-12-01T13:00:00Z"),
         ("v5", 5, 12, "2025-12-01T09:00:00Z")]
SEASON = "2025-W49"
# Learner 2 (12 points, hidden) among 1 (20), 5 (12, earlier), 3 and 4 (8).
WANT = {"shared": [(1, 1), (2, 2), (2, 5), (4, 3), (4, 4)],
        "first": [(1, 1), (2, 5), (3, 2), (4, 3), (5, 4)]}


@pytest.mark.parametrize("policy", sorted(WANT))
async def test_a_hidden_learner_s_neighbourhood_ranks_them_all_consistently(
        serve: ApiFactory, policy: str) -> None:
    api = await serve(close_seasons=False, keep_seasons=0, tie_policy=policy)
    c = api.client(INGEST)
    await post(c, ITEMS)
    assert (await c.put("/v1/users/2", json={"visibility": "hidden"})).status_code == 200
    me = api.client(token_for(api.env, 2))

    async def view() -> list[tuple[int, int]]:
        resp = await me.get(f"/v1/leaderboards/{SEASON}/users/2", params={"radius": 5})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["user"]["rank"] == {"shared": 2, "first": 3}[policy]
        return [(n["rank"], n["user_id"]) for n in body["neighbors"]]

    assert await view() == WANT[policy]  # the live board
    public = (await api.get(f"/v1/leaderboards/{SEASON}")).json()["entries"]
    assert [e["user_id"] for e in public] == [1, 5, 3, 4]  # nobody pushed down there
    await api.close_seasons()
    # (The app's own lifecycle loop may close it first, now that it may.)
    await api.runtime.lifecycle.finalize_due(datetime(2025, 12, 20, tzinfo=UTC))
    season = parse_season(SEASON, zone=api.runtime.settings.time_zone)
    assert season in await api.runtime.lifecycle.finalized([season])

    async def dropped() -> bool:  # (the closer drops the board after its commit)
        return not await api.runtime.board.present(season)

    await eventually(dropped, what=f"the board of {SEASON} dropped once archived")
    assert await view() == WANT[policy]  # the archive
