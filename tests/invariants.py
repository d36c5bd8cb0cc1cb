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
import math
from collections.abc import Awaitable
from typing import Any

import orjson

from laurels.board.keys import SeasonKeys
from laurels.core.ranking import member_uid
from laurels.core.seasons import Season, parse_season
from laurels.process.settings import per_tier
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


async def check_season(svc: Services, season: Season, erased: set[int] | None = None) -> None:
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


async def check_all(svc: Services, seasons: list[Season], in_flight: set[int] | None = None
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

    def __init__(self, svc: Services, seasons: list[Season]) -> None:
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
    rules, top = svc.leagues.rules, len(svc.settings.league_tiers) - 1
    for (season, tier, number), cohort in by_cohort.items():
        up = [r["rank"] for r in cohort if r["outcome"] == "promoted"]
        down = [r["rank"] for r in cohort if r["outcome"] == "demoted"]
        assert not up or not down or max(up) < min(down), cohort
        # The zones scale with the ranked (CONTRACT.md, Leagues), written
        # here from the contract, not from leagues/rules.py.
        n = sum(r["rank"] is not None for r in cohort)
        p = math.ceil(per_tier(svc.settings.league_promote, tier) * n / size)
        d = math.floor(per_tier(svc.settings.league_demote, tier) * n / size)
        for r in cohort:
            want = ("stayed" if r["rank"] is None else
                    "promoted" if r["rank"] <= p and tier < top else
                    "demoted" if r["rank"] > max(p, n - d) and tier > 0 else "stayed")
            assert r["outcome"] == want, (r, n, p, d)
        # A decided cohort's board is the decision's, whatever came since.
        board, _ = await svc.leagues.cohort(parse_season(season, zone=rules.time_zone),
                                            f"{season}.{tier}.{number}")
        decided = {r["user_id"]: (r["rank"], r["score"], r["outcome"]) for r in cohort
                   if r["rank"] is not None}
        assert board["decided"], (season, tier, number)
        for e in board["entries"]:
            if e["user_id"] is not None:
                assert (e["rank"], e["score"], e["outcome"]) == decided[e["user_id"]], e
        assert len(board["entries"]) <= len(decided)
    latest: dict[int, Any] = {}
    for r in sorted(results, key=lambda r: r["season"]):
        latest[r["user_id"]] = r
    for uid, r in latest.items():
        # written only when a decision moves them; no row is the lowest tier
        tier = tiers[uid]["tier"] if uid in tiers else 0
        assert tier == r["new_tier"], (uid, r, tiers.get(uid))


# -- erasure and visibility, by enumeration (issue 38) -----------------------------
#
# Checked from what exists, never from a list kept by hand: the tables and
# columns from PostgreSQL's catalogue, the keys from a SCAN of the prefix
# (each read by what board/keys.py declares it holds), the boards from the seasons
# PostgreSQL knows, the groups and cohorts from their tables. A table, key,
# board or cohort added next month is covered without a change here.

# Where an erased learner's id is kept on purpose (CONTRACT.md, erasure): the
# tombstone (their users row; the erasure job, until Redis forgot them), the
# audit entry and the `user.erased` webhook. Each with the rows it may be in.
KEPT = {"users": "true", "erasures": "true", "audit": "true",
        "webhook_deliveries": "type = 'user.erased'"}
# Tables a model machine keeps between examples: the schema's own record,
# the append-only audit, the deployment's settings and the sealed ids'
# filter (stale bits only send an id to the index).
KEPT_ON_RESET = frozenset({"schema_migrations", "audit", "league_settings",
                           "webhook_settings", "redis_epochs", "completion_ids_filter",
                           "completion_ids_filter_size"})
_LEARNER_WORDS = ("user", "learner", "member_id")


def _learner_key(name: str) -> bool:
    return name == "user_id" or name.endswith("_user_id")


async def schema_tables(conn: Any) -> list[str]:
    """Every table of the schema (a partitioned one once, not its parts)."""
    cur = await conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')"
        " AND NOT c.relispartition ORDER BY 1")
    return [r["relname"] for r in await cur.fetchall()]


async def reset_tables(conn: Any) -> None:
    """Empty every table a model machine's example writes (enumerated)."""
    tables = [t for t in await schema_tables(conn) if t not in KEPT_ON_RESET]
    await conn.execute(f"TRUNCATE {', '.join(tables)} CASCADE")


async def learner_columns(conn: Any) -> list[tuple[str, str, str]]:
    """(table, column, how) of every column that may hold a learner's id:
    `id` (an integer `user_id` or `*_user_id`), `ids` (an integer array
    `*user_ids`), `json` (walked for such keys). A column whose name speaks
    of learners in another shape fails: say here how it holds them."""
    cur = await conn.execute(
        "SELECT c.relname AS t, a.attname AS col, format_type(a.atttypid, NULL) AS type"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
        " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')"
        " AND NOT c.relispartition ORDER BY 1, a.attnum")
    out = []
    for r in await cur.fetchall():
        t, col, type_ = r["t"], r["col"], r["type"]
        if type_ in ("json", "jsonb"):
            out.append((t, col, "json"))
        elif _learner_key(col) and type_ in ("bigint", "integer"):
            out.append((t, col, "id"))
        elif col.endswith("user_ids") and type_ in ("bigint[]", "integer[]"):
            out.append((t, col, "ids"))
        else:
            assert not any(w in col for w in _LEARNER_WORDS), (
                f"{t}.{col} ({type_}) seems to hold learners in a shape the erasure"
                " invariant cannot read: name it user_id / *_user_id / *user_ids")
    return out


def json_ids(doc: Any) -> set[int]:
    """The learner ids a JSON document names: under keys `user_id`,
    `*_user_id` and `*user_ids`, at any depth."""
    found: set[int] = set()
    if isinstance(doc, dict):
        for k, v in doc.items():
            if _learner_key(k) and isinstance(v, int):
                found.add(v)
            elif k.endswith("user_ids") and isinstance(v, list):
                found |= {x for x in v if isinstance(x, int)}
            else:
                found |= json_ids(v)
    elif isinstance(doc, list):
        for v in doc:
            found |= json_ids(v)
    return found


async def tables_naming(svc: Services, learners: set[int]) -> list[str]:
    """Where in PostgreSQL `learners` are named outside what KEPT allows."""
    found = []
    async with svc.db.connection() as conn:
        for t, col, how in await learner_columns(conn):
            outside = f"NOT ({KEPT[t]})" if t in KEPT else "true"
            if how == "id":
                cur = await conn.execute(
                    f"SELECT DISTINCT {col} AS u FROM {t}"  # noqa: S608 (catalogue names)
                    f" WHERE {col} = ANY(%s) AND {outside}", (sorted(learners),))
                found += [f"{t}.{col} = {r['u']}" for r in await cur.fetchall()]
            elif how == "ids":
                cur = await conn.execute(
                    f"SELECT {col} AS u FROM {t} WHERE {col} && %s::bigint[]"  # noqa: S608
                    f" AND {outside}", (sorted(learners),))
                found += [f"{t}.{col} holds {sorted(set(r['u']) & learners)}"
                          for r in await cur.fetchall()]
            else:
                cur = await conn.execute(
                    f"SELECT {col} AS doc FROM {t} WHERE {col} IS NOT NULL"  # noqa: S608
                    f" AND {outside}")
                found += [f"{t}.{col} names {sorted(json_ids(r['doc']) & learners)}"
                          for r in await cur.fetchall() if json_ids(r["doc"]) & learners]
        cur = await conn.execute(
            "SELECT user_id FROM users WHERE user_id = ANY(%s) AND erased_at IS NOT NULL"
            " AND display_name IS NOT NULL", (sorted(learners),))
        found += [f"users: the tombstone of {r['user_id']} keeps a name"
                  for r in await cur.fetchall()]
    return found


async def keys_naming(svc: Services, learners: set[int]) -> list[str]:
    """Where in Redis `learners` are named: every key under the prefix, read
    by what board/keys.py declares it holds (an undeclared key is a failure)."""
    redis, keys = svc.redis, svc.keys
    found = []
    async for key in redis.scan_iter(match=f"{keys.prefix}:*", count=1000):
        holds = keys.holds(key)
        assert holds is not None, f"a key board/keys.py does not declare: {key}"
        if holds in ("none", "tombstones"):
            continue
        kind = await redis.type(key)
        if holds == "events":
            ids: set[int] = set()
            for _, fields in await redis.xrange(key):
                ids |= {int(fields["uid"])} | {int(p) for p in fields.get("passed", "")
                                               .split(",") if p}
                assert "name" not in fields, f"{key}: a rank event carries a name"
        elif kind == "zset":
            ids = {member_uid(m) for m in await redis.zrange(key, 0, -1)}
        elif kind == "hash":
            ids = {int(f) for f in await redis.hkeys(key)}
        elif kind == "set":
            ids = {int(m) for m in await redis.smembers(key)}
        else:
            raise AssertionError(f"{key} holds learners as a {kind}: read it here")
        if ids & learners:
            found.append(f"{key} names {sorted(ids & learners)}")
    return found


async def check_erased_everywhere(svc: Services, erased: set[int] | None = None,
                                  in_flight: set[int] | frozenset[int] = frozenset()
                                  ) -> None:
    """Once an erasure has committed, no table names the learner outside the
    tombstone, the audit entry and the `user.erased` webhook; once it has
    returned (not `in_flight`), no key of any board, stream or hash does."""
    erased = await erased_ids(svc) if erased is None else erased
    if not erased:
        return
    where = await tables_naming(svc, erased)
    assert not where, f"erased learners still named in PostgreSQL: {where}"
    where = await keys_naming(svc, erased - set(in_flight))
    assert not where, f"erased learners still named in Redis: {where}"


async def private_learners(svc: Services) -> tuple[set[int], set[int]]:
    """(hidden or suspended, anonymous) learners as PostgreSQL has them."""
    async with svc.db.connection() as conn:
        cur = await conn.execute("SELECT user_id, visibility FROM users WHERE erased_at IS NULL"
                                 " AND visibility <> 'public'")
        rows = await cur.fetchall()
    return ({r["user_id"] for r in rows if r["visibility"] == "hidden"},
            {r["user_id"] for r in rows if r["visibility"] == "anonymous"})


def _ids(entries: list[dict[str, Any]]) -> set[int]:
    return {e["user_id"] for e in entries if e.get("user_id") is not None and not e.get("self")}


Shown = list[tuple[str, set[int]]]  # (which read, the learner ids it showed)


async def _season_reads(svc: Services, name: str, learners: list[int], groups: list[str],
                        private: set[int]) -> Shown:
    """What a season's public reads show: its board, the neighbourhoods of
    everyone not private, the friends board of everyone, each group's board
    and each member's neighbourhood in it."""
    from laurels.core.errors import DomainError
    from laurels.core.seasons import parse_season

    season = parse_season(name, zone="UTC")
    try:
        body = await svc.reads.top(season, 1000)
    except DomainError as exc:
        assert exc.code in ("rebuilding", "not_found"), exc
        return []
    shown = [(f"board {name}", _ids(body["entries"]))]
    for uid in sorted(set(learners) - private):
        try:
            me = await svc.reads.around(season, uid, 50)
        except DomainError as exc:
            assert exc.code in ("not_ranked", "rebuilding", "user_erased"), exc
            continue
        shown.append((f"{uid}'s neighbours on {name}", _ids(me["neighbors"])))
    friends = await svc.groups.friends(season, learners[:1000], None)
    shown.append((f"friends on {name}", _ids(friends["entries"])))
    for group in groups:
        try:
            page, _, _ = await svc.groups.board_top(group, season, 1000, None)
        except DomainError as exc:
            assert exc.code in ("not_found", "rebuilding"), exc
            continue
        shown.append((f"group {group} on {name}", _ids(page["entries"])))
        for uid in sorted(set(learners) - private):
            try:
                near = await svc.groups.board_around(group, season, uid, 50)
            except DomainError as exc:
                assert exc.code in ("not_found", "not_ranked", "rebuilding"), exc
                continue
            shown.append((f"{uid}'s neighbours in group {group} on {name}",
                          _ids(near["neighbors"])))
    return shown


async def _webhooks_shown(svc: Services, deliveries: list[Any]) -> Shown:
    """The learners pending webhooks would name if sent now (the body a
    delivery builds when it is sent: webhooks.Outgoing)."""
    from laurels.live.webhooks import Outgoing

    if not deliveries:
        return []
    async with svc.db.transaction() as tx:
        rows = await svc.db.fetch("leased_deliveries", tx, ids=deliveries)
        nids = sorted({int(r["notification_id"]) for r in rows if r["notification_id"]})
        notes = await svc.db.fetch("notifications_by_id", tx, ids=nids) if nids else []
        out = Outgoing(rows, {n["id"]: n for n in notes})
        names = await svc.notifications.public_names(
            sorted(json_ids([n["data"] for n in notes])), tx)
    shown = []
    titles = await svc.notifications.titles()
    for row in out.rows:
        body = out.body(row, names, titles)
        if body is not None and row["type"] == "notification.created":
            shown.append((f"webhook {row['id']}", json_ids(body["data"]["data"])))
    return shown


async def check_hidden_nowhere(svc: Services, private: set[int]) -> None:
    """No public read shows a learner of `private` (hidden, suspended or
    erased): the board of every season PostgreSQL knows (every period), the
    neighbourhoods of others, every group's board, the friends board, every
    cohort's board, others' notifications, the webhooks as they would be
    sent. Enumerated from the tables, not listed here."""
    from laurels.core.errors import DomainError
    from laurels.leagues.rules import Cohort

    async with svc.db.connection() as conn:
        async def column(sql: str) -> list[Any]:
            cur = await conn.execute(sql)
            return [tuple(r.values()) for r in await cur.fetchall()]

        seasons = [r[0] for r in await column("SELECT season FROM seasons ORDER BY 1")]
        learners = [r[0] for r in await column(
            "SELECT user_id FROM users WHERE erased_at IS NULL UNION"
            " SELECT DISTINCT user_id FROM completions ORDER BY 1")]
        groups = [r[0] for r in await column("SELECT group_id FROM groups ORDER BY 1")]
        cohorts = await column("SELECT DISTINCT season, tier, cohort FROM league_members")
        deliveries = [r[0] for r in await column(
            "SELECT id FROM webhook_deliveries WHERE status = 'pending'")]
    shown: Shown = []
    for name in seasons:
        shown += await _season_reads(svc, name, learners, groups, private)
    if svc.leagues.on:
        for season, tier, number in cohorts:
            week = parse_season(season, zone=svc.leagues.rules.time_zone)
            try:
                board, _ = await svc.leagues.cohort(week, Cohort(season, tier, number).id)
            except DomainError as exc:  # (an undecided week's, while its board is rebuilt)
                assert exc.code == "rebuilding", exc
                continue
            entries = board["entries"]  # (a decided week's: the decision's)
            shown.append((f"cohort {season}.{tier}.{number}", _ids(entries)))
    for uid in learners:
        notes = (await svc.notifications.newest(uid))["notifications"]
        shown.append((f"{uid}'s notifications", json_ids([n["data"] for n in notes]) - {uid}))
    shown += await _webhooks_shown(svc, deliveries)
    leaks = [f"{where} shows {sorted(ids & private)}" for where, ids in shown if ids & private]
    assert not leaks, f"hidden, suspended or erased learners shown: {leaks}"
