"""How long a cached top page lives (api/caches.py, `BOARD_SECONDS`): every
hint drops it, so it may live long (a kind's 10,000 boards read at random,
issue 42), but never past the moment its season's `status` changes."""

from __future__ import annotations

import asyncio
import math
import time
from datetime import UTC, datetime, timedelta

from laurels.api.caches import (
    BOARD_SECONDS,
    BOARD_SECONDS_LEAST,
    CACHE_SECONDS,
    TOP_BYTES,
    BoardCache,
    lasting,
)
from laurels.core.seasons import season_of
from tests.api.conftest import ApiFactory
from tests.api.test_around_cache import Subscription, board_cache
from tests.helpers import INGEST, completion


async def test_a_cached_top_page_lives_no_longer_than_its_season_is_open(
        serve: ApiFactory) -> None:
    now = datetime.now(UTC)
    last = season_of(now, "week", zone="UTC").previous()
    # Last week closes about 3 s from now.
    grace = math.ceil((now - last.ends_at).total_seconds()) + 3
    api = await serve(late_grace_seconds=grace)
    at = (last.ends_at - timedelta(minutes=1)).isoformat()
    resp = await api.client(INGEST).post("/v1/completions", json=completion("c1", 1, 10, at))
    assert resp.status_code in (200, 201, 202), resp.text
    closes = last.closes_at(grace)
    path = f"/v1/leaderboards/{last.name}"
    async with asyncio.timeout(10):
        while not board_cache(api, TOP_BYTES).entries.get(last.name):  # kept once subscribed
            body = (await api.get(path)).json()
    assert body["status"] == "open" and body["total"] == 1
    assert datetime.now(UTC) < closes  # the body was kept while it is open
    await asyncio.sleep((closes - datetime.now(UTC)).total_seconds() + 0.05)
    body = (await api.get(path)).json()
    assert body["status"] == "closed" and body["total"] == 1


def test_a_body_lives_until_its_season_s_status_changes_at_most() -> None:
    cache = BoardCache(Subscription(), None)  # type: ignore[arg-type]
    assert BOARD_SECONDS > CACHE_SECONDS
    soon = datetime.now(UTC) + timedelta(seconds=2)
    kept = cache.put("2026-W49", 100, b"{}", cache.generation("2026-W49"), lasting(soon))
    assert 1 < kept.expires - time.monotonic() <= 2
    assert cache.get("2026-W49", 100) is kept
    # A status that changed before the body was put: answered, never kept.
    gone = datetime.now(UTC) - timedelta(seconds=1)
    cache.put("2026-W50", 100, b"{}", cache.generation("2026-W50"), lasting(gone))
    assert cache.get("2026-W50", 100) is None
    # A closed season (no change ahead): BOARD_SECONDS at most, and bodies
    # put together expire apart (from BOARD_SECONDS_LEAST of it up).
    for limit in range(1, 101):
        cache.put("2026-W51", limit, b"{}", cache.generation("2026-W51"), lasting(None))
        assert cache.get("2026-W51", limit) is not None
    left = [e.expires - time.monotonic() for e in cache.entries["2026-W51"].values()]
    assert all(BOARD_SECONDS * BOARD_SECONDS_LEAST - 1 < s <= BOARD_SECONDS for s in left)
    assert max(left) - min(left) > BOARD_SECONDS * (1 - BOARD_SECONDS_LEAST) / 2


async def test_a_learner_hidden_where_the_hint_was_lost_leaves_the_cached_pages(
        serve: ApiFactory) -> None:
    """Bodies live until a hint: when another process's change reaches this
    one only through the privacy filter's refresh (its hint lost: its
    publish failed, or its writer died after the commit, before it
    projected anything), the refresh drops the tops and neighbourhoods."""
    api = await serve()
    c = api.client(INGEST)
    for uid, points in ((1, 10), (2, 20), (3, 30)):
        resp = await c.post("/v1/completions", json=completion(f"h{uid}", uid, points))
        assert resp.status_code in (200, 201, 202), resp.text
    async with asyncio.timeout(10):
        while not board_cache(api, TOP_BYTES).entries:
            body = (await api.get("/v1/leaderboards/current")).json()
    assert 2 in {e["user_id"] for e in body["entries"]}
    await api.runtime.privacy.refresh()  # (loaded: later refreshes compare)
    async with api.runtime.db.connection() as conn:  # another process's commit
        await conn.execute("UPDATE users SET visibility = 'hidden', profile_version ="
                           " profile_version + 1, change_xid = pg_current_xact_id()"
                           " WHERE user_id = 2")
    await api.runtime.privacy.refresh()
    assert not board_cache(api, TOP_BYTES).entries
    body = (await api.get("/v1/leaderboards/current")).json()
    assert [e["user_id"] for e in body["entries"]] == [3, 1]
