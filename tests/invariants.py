"""Invariants of the stores that every test of an interleaving checks.

Invariant 6 of the design (privacy) as the stores must hold it, plus the
bookkeeping that keeps Redis from leaking: after any operation, whatever the
timing,
- nobody is in both the public and the hidden set of a board version;
- the public set holds nobody whose profile says hidden, the hidden set
  nobody whose profile says otherwise;
- no erased learner is in any set or users hash of any version (once their
  erasure has returned), in the archive, or in a notification (as its owner
  or named in its data);
- every idempotency bitmap of a version is listed in its chunks set (so
  dropping or expiring the version frees it);
- once a season's keys expire (finalized), every key of it expires.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import orjson

from laurels.keys import SeasonKeys
from laurels.ranking import member_uid
from laurels.runtime import Services
from tests.helpers import eventually


async def erased_ids(svc: Services) -> set[int]:
    async with svc.db.connection() as conn:
        cur = await conn.execute("SELECT user_id FROM users WHERE erased_at IS NOT NULL")
        return {int(r["user_id"]) for r in await cur.fetchall()}


async def _season_keys(svc: Services, sk: SeasonKeys) -> list[str]:
    tag = sk.base.split(":{", 1)[1].split("}", 1)[0]
    pattern = f"{svc.keys.prefix}:{{{tag}}}:*"
    return [k async for k in svc.redis.scan_iter(match=pattern, count=1000)]


async def check_season(svc: Services, season: str, erased: set[int] | None = None) -> None:
    redis = svc.redis
    erased = await erased_ids(svc) if erased is None else erased
    sk = svc.board.season_keys(season)
    keys = await _season_keys(svc, sk)
    versions = {str(v) for v in await redis.smembers(sk.versions)}
    for marker in (sk.current, sk.building):
        v = await redis.get(marker)
        if v:
            versions.add(str(v))
    for v in sorted(versions):
        vk = sk.version(v)
        public = {member_uid(m) for m in await redis.zrange(vk.public, 0, -1)}
        hidden = {member_uid(m) for m in await redis.zrange(vk.hidden, 0, -1)}
        users = await redis.hgetall(vk.users)
        vis = {int(u): p.split("\t")[1] for u, p in users.items()}
        where = f"{season} v{v}"
        assert not public & hidden, f"{where}: in both public and hidden: {public & hidden}"
        assert all(vis.get(u) != "hidden" for u in public), f"{where}: hidden in public set"
        assert all(vis.get(u) == "hidden" for u in hidden), f"{where}: non-hidden in hidden set"
        # Under `shared`, the default profile is stored for nobody (the
        # memory of most learners' entries, _common.lua); a hidden learner
        # always has an entry (their visibility is not the default).
        if svc.board.policy == "shared":
            default = [u for u, p in users.items() if p.split("\t")[0] == "0"
                       and p.split("\t")[1] == "public" and p.split("\t")[3] == ""]
            assert not default, f"{where}: default profiles stored: {default}"
        assert hidden <= set(vis), f"{where}: hidden learners without a profile entry"
        leaked = (public | hidden | set(vis)) & erased
        assert not leaked, f"{where}: erased learners on the board: {leaked}"
        chunks = {int(c) for c in await redis.smembers(vk.chunks)}
        bitmaps = {int(k[len(vk.applied_prefix):]) for k in keys
                   if k.startswith(vk.applied_prefix)}
        assert bitmaps <= chunks, f"{where}: untracked bitmap chunks {bitmaps - chunks}"
    if keys and await redis.pttl(sk.current) > 0:
        forever = [k for k in keys if await redis.pttl(k) == -1]
        assert not forever, f"{season}: keys without the season's expiry: {forever}"


async def check_postgres(svc: Services, erased: set[int]) -> None:
    async with svc.db.connection() as conn:
        cur = await conn.execute(
            "SELECT st.season, st.user_id, st.pos, st.rank, coalesce(u.visibility, 'public') AS vis"
            " FROM season_standings st LEFT JOIN users u ON u.user_id = st.user_id")
        for r in await cur.fetchall():
            assert r["user_id"] not in erased, f"erased learner {r['user_id']} in the archive"
            if r["vis"] == "hidden":
                assert r["pos"] is None and r["rank"] is None, (
                    f"hidden learner {r['user_id']} ranked in the archive of {r['season']}")
        cur = await conn.execute("SELECT user_id, data FROM notifications")
        for r in await cur.fetchall():
            assert r["user_id"] not in erased, f"a notification of erased {r['user_id']}"
            by = r["data"].get("by_user_id")
            assert by not in erased, f"a notification naming erased learner {by}"


async def check_all(svc: Services, seasons: list[str], in_flight: set[int] | None = None
                    ) -> None:
    """Every invariant; `in_flight`: learners whose erasure has not returned
    yet (PostgreSQL forgot them, Redis may still hold them until it does)."""
    erased = await erased_ids(svc)
    for season in seasons:
        await check_season(svc, season, erased - (in_flight or set()))
    await check_postgres(svc, erased)


class HintTap:
    """Hints published for some seasons while the tap is open (on a cluster,
    on each season's shard channel). `drain()` returns those since the last
    drain: it publishes a marker on each channel and reads up to every one,
    so no hint sent before the call can still be on its way."""

    def __init__(self, svc: Services, seasons: list[str]) -> None:
        self.svc = svc
        self.cluster = svc.board.cluster
        keys = svc.keys
        self.channels = ([keys.shard_hint_channel(s) for s in seasons] if self.cluster
                         else [keys.hint_channel()])
        self.pubsub: Any = svc.redis.pubsub()
        self.hints: list[dict[str, Any]] = []

    async def __aenter__(self) -> HintTap:
        for channel in self.channels:
            if self.cluster:
                await self.pubsub.ssubscribe(channel)
            else:
                await self.pubsub.subscribe(channel)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.pubsub.aclose()

    async def _next(self) -> Any:
        if self.cluster:
            return await self.pubsub.get_sharded_message(ignore_subscribe_messages=True,
                                                          timeout=1)
        return await self.pubsub.get_message(ignore_subscribe_messages=True, timeout=1)

    async def drain(self) -> list[dict[str, Any]]:
        markers = set()
        for n, channel in enumerate(self.channels):
            marker = {"season": f"__marker_{n}__"}
            markers.add(marker["season"])
            data = orjson.dumps(marker)
            if self.cluster:
                await self.svc.redis.spublish(channel, data)
            else:
                await self.svc.redis.publish(channel, data)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while markers:
            assert loop.time() < deadline, "the hint markers never arrived"
            message = await self._next()
            if message is None:  # a subscribe confirmation, or nothing yet
                continue
            hint = orjson.loads(message["data"])
            if hint.get("season") in markers:
                markers.discard(hint["season"])
            else:
                self.hints.append(hint)
        hints, self.hints = self.hints, []
        return hints


async def blocked_or_done(svc: Services, task: Awaitable[Any] | asyncio.Task[Any],
                          timeout: float = 10.0) -> None:
    """Wait until `task` has finished or some session of this database waits
    for a lock: proof that it reached a lock another transaction holds."""
    assert isinstance(task, asyncio.Task)
    async with svc.db.connection() as conn:

        async def blocked() -> bool:
            if task.done():
                return True
            cur = await conn.execute(
                "SELECT count(*) AS n FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'")
            row = await cur.fetchone()
            return bool(row and row["n"])

        await eventually(blocked, timeout, "the task to finish or wait for a lock",
                         every=0.005)


async def check_leagues(svc: Services, erased: set[int]) -> None:
    """Weekly leagues as the contract wants them, whatever the timing: a
    learner is placed once a week (a join first), each in the slot of their
    tier's week whose cohort is slot // size (so every cohort is full but the
    newest, erasures aside), no erased learner anywhere; a decided week has
    one result per member, each outcome of its zone's kind (promoted ranks
    above demoted ones, none unranked), the new tier one step at most, and
    each learner's tier that of their latest result."""
    size = svc.settings.league_size
    async with svc.db.connection() as conn:
        async def rows(sql: str) -> list[Any]:
            cur = await conn.execute(sql)
            return await cur.fetchall()

        members = await rows("SELECT m.*, j.user_id IS NOT NULL AS joined FROM league_members m"
                             " LEFT JOIN league_joins j USING (season, user_id)")
        fill = {(r["season"], r["tier"]): r["members"]
                for r in await rows("SELECT * FROM league_fill")}
        results = await rows("SELECT r.*, w.decided_at FROM league_results r"
                             " JOIN league_weeks w USING (season)")
        tiers = {r["user_id"]: r for r in await rows("SELECT * FROM league_tiers")}
        for table in ("league_joins", "league_members", "league_results", "league_tiers"):
            found = await rows(f"SELECT user_id FROM {table}")  # noqa: S608
            assert not {r["user_id"] for r in found} & erased, f"an erased learner in {table}"
    slots: dict[tuple[str, int], set[int]] = {}
    for m in members:
        assert m["joined"], f"{m['user_id']} placed in {m['season']} without joining"
        assert m["cohort"] == m["slot"] // size, f"{m} is not in its slot's cohort"
        taken = slots.setdefault((m["season"], m["tier"]), set())
        assert m["slot"] not in taken, f"two learners in slot {m['slot']} of {m['season']}"
        taken.add(m["slot"])
        assert m["slot"] < fill[(m["season"], m["tier"])]
    by_cohort: dict[tuple[str, int, int], list[Any]] = {}
    for r in results:
        assert r["decided_at"] is not None
        by_cohort.setdefault((r["season"], r["tier"], r["cohort"]), []).append(r)
        assert abs(r["new_tier"] - r["tier"]) <= 1
        assert (r["outcome"] == "stayed") == (r["new_tier"] == r["tier"]), r
        assert r["rank"] is not None or r["outcome"] == "stayed", r
    for cohort in by_cohort.values():
        up = [r["rank"] for r in cohort if r["outcome"] == "promoted"]
        down = [r["rank"] for r in cohort if r["outcome"] == "demoted"]
        assert not up or not down or max(up) < min(down), cohort
    latest: dict[int, Any] = {}
    for r in sorted(results, key=lambda r: r["season"]):
        latest[r["user_id"]] = r
    for uid, r in latest.items():
        # written only when a decision moves them; no row is the lowest tier
        tier = tiers[uid]["tier"] if uid in tiers else 0
        assert tier == r["new_tier"], (uid, r, tiers.get(uid))
