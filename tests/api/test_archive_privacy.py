"""Privacy changes reach every cache and every process (issue 25, the two
suspicions): a finalized season read from its archive, and the privacy
filter of another process, follow a visibility change at once, whatever the
timing of its commit."""

from __future__ import annotations

from datetime import UTC, datetime

from laurels.core.seasons import parse_season
from laurels.db import Tx
from laurels.reads.privacy import Privacy
from tests.api.conftest import ApiFactory
from tests.api.test_periods import post
from tests.helpers import INGEST, token_for

ITEMS = [("p1", 1, 10, "2025-12-01T10:00:00Z"), ("p2", 2, 12, "2025-12-01T11:00:00Z"),
         ("p3", 3, 7, "2025-12-01T12:00:00Z")]
SEASON = "2025-W49"


async def test_an_archived_board_s_cached_page_drops_a_learner_who_turns_hidden(
        serve: ApiFactory) -> None:
    """The season is finalized and its Redis keys are gone (read from the
    archive); its page is cached. Learner 2 turns hidden, then anonymous:
    the very next read of the board, the group board and the friends board
    no longer shows them by name."""
    api = await serve(close_seasons=False, keep_seasons=0)
    c = api.client(INGEST)
    await post(c, ITEMS)
    assert (await c.put("/v1/users/2", json={"display_name": "Bea"})).status_code == 200
    assert (await c.put("/v1/groups/g", json={"access": "public"})).status_code == 200
    assert (await c.post("/v1/groups/g/members", json={"add": [1, 2, 3]})).status_code == 200
    await api.close_seasons()
    season = parse_season(SEASON, zone=api.runtime.settings.time_zone)
    assert season in await api.runtime.lifecycle.finalize_due(datetime(2025, 12, 20, tzinfo=UTC))
    assert not await api.runtime.board.present(season)  # read from the archive
    paths = [f"/v1/leaderboards/{SEASON}", f"/v1/groups/g/leaderboards/{SEASON}"]
    for path in paths:  # fill the caches
        for _ in range(2):
            assert "Bea" in (await api.get(path)).text
    assert (await c.put("/v1/users/2", json={"visibility": "hidden"})).status_code == 200
    for path in paths:
        body = (await api.get(path)).json()
        assert [e["user_id"] for e in body["entries"]] == [1, 3], path
    assert (await c.put("/v1/users/2", json={"visibility": "anonymous"})).status_code == 200
    for path in paths:
        body = (await api.get(path)).json()
        assert [e["user_id"] for e in body["entries"]] == [None, 1, 3], path
        assert "Bea" not in str(body)
    friends = await api.client(token_for(api.env, 1)).post(
        f"/v1/leaderboards/{SEASON}/ranks", json={"user_ids": [1, 2, 3]})
    assert [e["user_id"] for e in friends.json()["entries"]] == [1, 3]


async def test_another_process_s_filter_sees_a_change_that_commits_late(
        serve: ApiFactory) -> None:
    """A privacy change whose transaction began (and stamped `updated_at`)
    long before it committed still reaches the filter of another process:
    the filter follows transactions, not a clock with an overlap."""
    api = await serve()
    db = api.runtime.db
    other = Privacy(db)  # another process's filter
    await other.refresh()
    async with db.connection() as conn, conn.transaction():
        await db.fetch_one("upsert_user", Tx(conn), user_id=7, display_name=None,
                           visibility="hidden")
        await conn.execute("UPDATE users SET updated_at = now() - interval '1 hour'"
                           " WHERE user_id = 7")
        await other.refresh()  # runs while the change is not committed yet
        assert other.visibility(7, "public") == "public"
    for _ in range(3):
        await other.refresh()
    assert other.visibility(7, "public") == "hidden"
