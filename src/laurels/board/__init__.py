"""The Redis projection of PostgreSQL completions: apply, read, profiles.

Every call goes through one Lua script that first checks the season's current
(and building) version against what this process believes; a stale belief
costs one retry, a missing marker means "no board" (never a partial one).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Any, NamedTuple, Required, TypedDict, TypeVar

import orjson
from redis.asyncio import Redis, RedisCluster
from redis.commands.core import AsyncScript
from redis.exceptions import RedisClusterException, RedisError

from laurels.keys import Keys, SeasonKeys, chunk_of
from laurels.ranking import (
    UID_WIDTH,
    Position,
    TiePolicy,
    assign_ranks,
    member_uid,
    pad_ts,
    pad_uid,
    ranks_beside,
)
from laurels.seasons import parse_season
from laurels.states import ApplyResult

T = TypeVar("T")
MAX_STALE_RETRIES = 8
# On Redis Cluster a batch of script calls runs as concurrent routed calls;
# at most this many of one batch at a time (a rebuild streams 2,000 per
# batch), so one caller never takes every connection of the client.
CLUSTER_IN_FLIGHT = 32
MEMBERS_PER_CALL = 2_000  # ids per scores/ranks call: a few ms of Redis
APPLY_BATCH = 500  # events per apply.lua call: one round trip, a few ms of Redis
ROUTES_MAX = 100  # learners a hint may route by (apply.lua has the same)
TIES_TTL_MS = 3_600_000  # a void's mark outlives any apply it precedes (or it reads again)
log = logging.getLogger("laurels.board")


async def gather_bounded(calls: list[Awaitable[T]], limit: int) -> list[T]:
    """Await every call, at most `limit` at once, in order. Every call runs to
    its end (no exception is left unretrieved); the first error is raised."""
    turns = asyncio.Semaphore(limit)

    async def one(call: Awaitable[T]) -> T:
        async with turns:
            return await call

    results = await asyncio.gather(*(one(c) for c in calls), return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results  # type: ignore[return-value]


class BoardMissing(Exception):
    """The season has no board in Redis (never built, or lost): rebuild it."""

    def __init__(self, season: str) -> None:
        super().__init__(season)
        self.season = season


@dataclass(frozen=True)
class Profile:
    version: int
    visibility: str
    display_name: str  # '' when never set


@dataclass(frozen=True)
class Event:
    seq: int
    user_id: int
    points: int
    completed_at: datetime
    season: str
    profile: Profile
    # A correction (void, restore): the completion's correction number (0: as
    # recorded), whether it counts, and the learner's latest counted
    # completion in this board's season (the `first` policy's tie time after
    # a void; None when none counts). apply.lua converges to the newest.
    correction: int = 0
    counted: bool = True
    reset_at: datetime | None = None
    # A void under `first`: the learner's mark in the season's ties hash,
    # taken before `reset_at` was read (apply.lua, "Ties"); '' for none.
    tie_token: str = ""

    @classmethod
    def from_row(cls, row: Mapping[str, Any], season: str | None = None) -> Event:
        """A completion row joined with its learner's profile (queries.sql)."""
        return cls(row["seq"], row["user_id"], row["points"], row["completed_at"],
                   season or row["season"],
                   Profile(row["profile_version"], row["visibility"], row["display_name"]),
                   int(row.get("correction") or 0), bool(row.get("counted", True)))


class Scored(NamedTuple):
    """A learner's standing on a season's board, read by id (group and
    friends boards): `last_ts` orders ties under the `first` policy."""

    user_id: int
    score: int
    visibility: str
    name: str
    last_ts: int
    board_rank: int | None = None


@dataclass(frozen=True)
class Entry:
    rank: int
    user_id: int
    display_name: str
    visibility: str
    score: int


@dataclass(frozen=True)
class Top:
    total: int
    entries: list[Entry]
    next: Position | None = None  # where the next page starts after, if there is one


@dataclass(frozen=True)
class Around:
    me: Entry
    index: int  # position of `me` inside `neighbors`
    neighbors: list[Entry]


class Hint(TypedDict, total=False):
    """A refresh hint (docs/contract.md, Live): which season changed, and
    who, when a single public learner did (None for an anonymous or hidden
    one, absent when several changes were coalesced); `kind` "rebuilt" after
    a rebuild switched the board. `routes`: the learners who changed, when
    all of them are public (group_index.py routes by them; never sent to a
    client); absent when the change may concern anyone."""

    season: Required[str]
    user_id: int | None
    kind: str
    routes: list[int]


def hint_of(message: dict[str, Any]) -> Hint | None:
    """The hint a Pub/Sub message carries (published by apply.lua or
    `Board.publish_hint`), or None if it is not one."""
    season = message.get("season")
    if not isinstance(season, str):
        return None
    hint: Hint = {"season": season}
    if "user_id" in message:
        uid = message["user_id"]
        hint["user_id"] = uid if isinstance(uid, int) else None
    if isinstance(message.get("kind"), str):
        hint["kind"] = message["kind"]
    routes = message.get("routes")
    if isinstance(routes, list) and all(isinstance(u, int) for u in routes):
        hint["routes"] = routes
    elif isinstance(hint.get("user_id"), int):
        hint["routes"] = [hint["user_id"]]  # type: ignore[list-item]
    return hint


def beside(neighbors: list[Entry], index: int, policy: TiePolicy) -> list[Entry]:
    """A hidden learner's neighbourhood, ranked as if they were on the board
    (ranking.ranks_beside)."""
    ranks = ranks_beside([e.rank for e in neighbors], [e.score for e in neighbors], index,
                         policy)
    return [e if e.rank == r else Entry(r, e.user_id, e.display_name, e.visibility, e.score)
            for e, r in zip(neighbors, ranks, strict=True)]


def default_name(user_id: int) -> str:
    return f"Learner {user_id}"


class StoredProfile(NamedTuple):
    """A learner's entry in a version's users hash, as the Lua scripts write
    it (`_common.lua`, format_profile): the one place Python reads it."""

    version: str
    visibility: str
    last_ts: str  # '' until the learner has scored in this version
    name: str  # '' when the learner set none

    @classmethod
    def parse(cls, text: str) -> StoredProfile:
        version, visibility, last_ts, name = text.split("\t", 3)
        return cls(version, visibility, last_ts, name)


def _parse_profile(text: str, user_id: int) -> tuple[str, str]:
    """(visibility, display name) of a stored profile string."""
    if not text:
        return "public", default_name(user_id)
    profile = StoredProfile.parse(text)
    return profile.visibility, profile.name or default_name(user_id)


def _season_batches(events: list[Event]) -> list[list[int]]:
    """Indexes of `events`, in batches of at most APPLY_BATCH of one season
    each, in the order they came."""
    by_season: dict[str, list[int]] = {}
    for i, ev in enumerate(events):
        by_season.setdefault(ev.season, []).append(i)
    return [idxs[k:k + APPLY_BATCH] for idxs in by_season.values()
            for k in range(0, len(idxs), APPLY_BATCH)]


class Scripts:
    """Every Lua script, registered once per client; NOSCRIPT is reloaded by redis-py."""

    NAMES = ("apply", "set_profile", "erase", "read_top", "read_around", "scores",
             "begin_build", "switch", "abort_build", "merge_bits", "load_board",
             "load_erased", "mark_ties")

    def __init__(self, redis: Redis) -> None:
        folder = resources.files(__package__).joinpath("lua")
        common = folder.joinpath("_common.lua").read_text()
        self.by_name: dict[str, AsyncScript] = {
            name: redis.register_script(common + "\n" + folder.joinpath(f"{name}.lua").read_text())
            for name in self.NAMES
        }

    def __getitem__(self, name: str) -> AsyncScript:
        return self.by_name[name]


class Board:
    def __init__(self, redis: Redis, keys: Keys, policy: TiePolicy) -> None:
        self.redis = redis
        self.cluster = isinstance(redis, RedisCluster)
        self.keys = keys
        self.policy = policy
        self.scripts = Scripts(redis)
        # season -> (current, building) as last seen; corrected by STALE replies
        self._versions: dict[str, tuple[str, str]] = {}
        self.on_hint: list[Callable[[Hint], None]] = []
        self.on_group_change: list[Callable[[str], None]] = []
        # Names this process in what it publishes, so it skips its own echo.
        self.origin = uuid.uuid4().hex

    def season_keys(self, season: str) -> SeasonKeys:
        return self.keys.season(season)

    async def version_keys(self, season: str, version: str) -> list[str]:
        """Every key of one version of a season's board: its idempotency
        chunks, then its sets and hash, the chunk index last (so a cleanup
        cut short still finds what is left)."""
        vk = self.season_keys(season).version(version)
        chunks = await self.redis.smembers(vk.chunks)
        return [*(vk.applied(int(c)) for c in chunks), vk.public, vk.hidden, vk.users,
                vk.corrections, vk.chunks]

    def versions(self, season: str) -> tuple[str, str]:
        return self._versions.get(season, ("", ""))

    def forget(self, season: str) -> None:
        self._versions.pop(season, None)

    # -- writes ---------------------------------------------------------

    def _apply_call(self, season: str, events: list[Event], versions: tuple[str, str],
                    targets: list[str], hint: bool = True) -> tuple[list[str], list[Any]]:
        """One apply.lua call: a batch of one season's events, in order; the
        script publishes the refresh hint itself when `hint`."""
        sk = self.season_keys(season)
        start = parse_season(season)
        chunks: list[int] = []
        index: dict[int, int] = {}
        per_event: list[Any] = []
        for ev in events:
            chunk, offset = chunk_of(ev.seq)
            if chunk not in index:
                index[chunk] = len(chunks)
                chunks.append(chunk)
            per_event += [ev.seq, index[chunk], offset, pad_uid(ev.user_id), ev.points,
                          start.pad_ts(ev.completed_at), ev.profile.version,
                          ev.profile.visibility, ev.profile.display_name, ev.correction,
                          "1" if ev.counted else "0",
                          start.pad_ts(ev.reset_at) if ev.reset_at else "", ev.tie_token]
        keys = [sk.current, sk.building, sk.erased, sk.notify_stream, sk.ties]
        for v in targets:
            vk = sk.version(v)
            keys += [vk.public, vk.hidden, vk.users, vk.chunks, vk.corrections]
        for v in targets:
            keys += [sk.version(v).applied(chunk) for chunk in chunks]
        if not hint:
            command, channel = "", ""
        elif self.cluster:  # the season's shard channel: in this script's slot
            command, channel = "SPUBLISH", self.keys.shard_hint_channel(season)
        else:
            command, channel = "PUBLISH", self.keys.hint_channel()
        on_current = bool(targets) and targets[0] == versions[0]
        args: list[Any] = [versions[0], versions[1], self.policy,
                           ("1" if start.period == "week" else "h") if on_current else "0",
                           len(targets), len(chunks), command, channel, season,
                           *chunks, *per_event]
        return keys, args

    async def apply(self, events: list[Event], only_version: str | None = None
                    ) -> list[ApplyResult]:
        """Apply events; per event 'applied', 'duplicate' or 'missing'.

        One script call per season and batch of at most APPLY_BATCH events,
        in order (pipelined on one node; on a cluster each season's calls run
        in order, seasons side by side). With `only_version`, apply to that
        building version alone (the rebuild's own stream); otherwise to the
        current and building versions, and then publish refresh hints for
        the seasons that changed.
        """
        results: list[ApplyResult | None] = [None] * len(events)
        visibility: dict[int, str] = {}
        pending = _season_batches(events)
        for _ in range(MAX_STALE_RETRIES):
            if not pending:
                break
            calls = [self._apply_batch_call(events, batch, only_version) for batch in pending]
            replies = await self._run_in_order("apply", calls)
            pending = [batch for batch, reply in zip(pending, replies, strict=True)
                       if self._settle(events, batch, reply, only_version, results, visibility)]
        if pending:
            raise RuntimeError("board versions kept changing during apply")
        if only_version is None and visibility:
            # The scripts published the hints; this process's caches hear at once.
            for hint in self.hints_of([(events[i], vis) for i, vis in sorted(visibility.items())]):
                for local in self.on_hint:
                    local(hint)
        return [r or "missing" for r in results]

    def _apply_batch_call(self, events: list[Event], batch: list[int], only_version: str | None
                          ) -> tuple[str, tuple[list[str], list[Any]]]:
        """The apply.lua call of one batch (one season), on the versions this
        process believes current and building, or on `only_version` alone."""
        season = events[batch[0]].season
        versions = self.versions(season)
        targets = [v for v in versions if v]
        if only_version is not None:
            # A builder feeds only its own version, and only while that
            # version still holds the building marker.
            versions, targets = (versions[0], only_version), [only_version]
        return season, self._apply_call(season, [events[i] for i in batch], versions, targets,
                                        hint=only_version is None)

    def _settle(self, events: list[Event], batch: list[int], reply: Any,
                only_version: str | None, results: list[ApplyResult | None],
                visibility: dict[int, str]) -> bool:
        """Record one batch's reply in `results` (and the visibility its hints
        carry); True when the batch must be sent again (STALE versions)."""
        status = reply[0]
        if status == "STALE":
            self._versions[events[batch[0]].season] = (reply[1], reply[2])
            if only_version is None or reply[2] == only_version:
                return True
            status = "MISSING"  # the version being built is gone
        if status == "MISSING":
            for i in batch:
                results[i] = "missing"
            return False
        for k, i in enumerate(batch):
            applied, vis = int(reply[1 + 2 * k]), reply[2 + 2 * k]
            results[i] = ("retry" if applied == -2 else "deferred" if applied < 0
                          else "applied" if applied else "duplicate")
            if vis:
                visibility[i] = vis
        return False

    async def _run_in_order(self, script: str,
                            calls: list[tuple[str, tuple[list[str], list[Any]]]]) -> list[Any]:
        """Run script calls keeping their order within each group (a season):
        one pipeline on a single node; on a cluster, each group's calls one
        after another, the groups side by side (each on its own slot's node)."""
        if not self.cluster:
            return await self._run_many(script, [call for _, call in calls])
        groups: dict[str, list[int]] = {}
        for n, (group, _) in enumerate(calls):
            groups.setdefault(group, []).append(n)
        replies: list[Any] = [None] * len(calls)

        async def run_group(members: list[int]) -> None:
            for n in members:
                keys, args = calls[n][1]
                replies[n] = await self.scripts[script](keys=keys, args=args)

        await gather_bounded([run_group(m) for m in groups.values()], CLUSTER_IN_FLIGHT)
        return replies

    async def _run_many(self, script: str, calls: list[tuple[list[str], list[Any]]]
                        ) -> list[Any]:
        """Run a script many times in one round trip: a pipeline, or on Redis
        Cluster (whose pipelines refuse scripts) concurrent calls, each routed
        to its slot's node."""
        if self.cluster:
            return await gather_bounded(
                [self.scripts[script](keys=k, args=a) for k, a in calls], CLUSTER_IN_FLIGHT)
        if len(calls) == 1:  # one call: EVALSHA alone (a pipeline first asks SCRIPT EXISTS)
            keys, args = calls[0]
            return [await self.scripts[script](keys=keys, args=args)]
        async with self.redis.pipeline(transaction=False) as pipe:
            for keys, args in calls:
                await self.scripts[script](keys=keys, args=args, client=pipe)
            return list(await pipe.execute())

    @staticmethod
    def hints_of(changed: list[tuple[Event, str]]) -> list[Hint]:
        """One hint per season: with the user id when a single public learner
        changed, null for an anonymous or hidden one, absent when coalesced;
        `routes` when every learner who changed is public (apply.lua builds
        the same in Redis)."""
        by_season: dict[str, set[tuple[int, str]]] = {}
        for ev, vis in changed:
            by_season.setdefault(ev.season, set()).add((ev.user_id, vis))
        hints = []
        for season, users in by_season.items():
            hint: Hint = {"season": season}
            if len({u for u, _ in users}) == 1:
                uid, vis = next(iter(users))
                hint["user_id"] = uid if vis == "public" else None
            if all(vis == "public" for _, vis in users) and len(users) <= ROUTES_MAX:
                hint["routes"] = sorted({u for u, _ in users})
            hints.append(hint)
        return hints

    async def publish_hint(self, hint: Hint) -> None:
        for local in self.on_hint:  # this process's caches hear of its own changes first
            local(hint)
        try:
            if self.cluster:  # sharded Pub/Sub: the hint stays on the board's shard
                await self.redis.spublish(self.keys.shard_hint_channel(hint["season"]),
                                          orjson.dumps(hint))
            else:
                await self.redis.publish(self.keys.hint_channel(), orjson.dumps(hint))
        except (RedisError, RedisClusterException) as exc:  # a lost hint costs freshness
            log.warning("hint not published: %s", exc)

    async def publish_group_change(self, group_id: str) -> None:
        """Tell every process that a group's membership or access changed
        (their group caches and member indexes, group_index.py), this one first."""
        for local in self.on_group_change:
            local(group_id)
        try:
            await self.redis.publish(self.keys.notification_channel(), orjson.dumps(
                {"group_changed": group_id, "origin": self.origin}))
        except (RedisError, RedisClusterException) as exc:  # caches expire; indexes reload
            log.warning("group change not published: %s", exc)

    async def _write(self, script: str, season: str, keys_of: Any, head: list[str],
                     args: list[Any]) -> bool:
        """Run a write script on the current and building versions; False if no board."""
        sk = self.season_keys(season)
        for _ in range(MAX_STALE_RETRIES):
            versions = self.versions(season)
            keys = [sk.current, sk.building, *head]
            for v in versions:
                if v:
                    keys += keys_of(sk.version(v))
            reply = await self.scripts[script](keys=keys, args=[*versions, *args])
            if reply[0] == "STALE":
                self._versions[season] = (reply[1], reply[2])
                continue
            return bool(reply[0] == "OK")
        raise RuntimeError(f"board versions kept changing during {script}")

    async def mark_ties(self, season: str, user_ids: list[int]) -> list[str]:
        """Mark learners a void is about to be applied for, before their
        fallback tie time is read (apply.lua, "Ties"): their tokens, in order."""
        reply = await self.scripts["mark_ties"](
            keys=[self.season_keys(season).ties],
            args=[TIES_TTL_MS, *(pad_uid(u) for u in user_ids)])
        return [str(t) for t in reply]

    async def set_profile(self, season: str, user_id: int, profile: Profile) -> bool:
        """Project a profile onto one season; False when the season has no board."""
        return await self._write(
            "set_profile", season, lambda vk: [vk.public, vk.hidden, vk.users],
            [self.season_keys(season).erased],
            [pad_uid(user_id), profile.version, profile.visibility, profile.display_name,
             self.policy])

    async def erase(self, season: str, user_id: int, tombstone_until: datetime) -> bool:
        """Remove an erased learner from a season's board; False when it has no
        board (the tombstone is kept all the same, until `tombstone_until`)."""
        return await self._write(
            "erase", season, lambda vk: [vk.public, vk.hidden, vk.users],
            [self.season_keys(season).erased],
            [pad_uid(user_id), self.policy, int(tombstone_until.timestamp() * 1000)])

    # -- reads ----------------------------------------------------------

    async def _read(self, script: str, season: str, version_keys: Any,
                    args: list[Any]) -> list[Any]:
        sk = self.season_keys(season)
        for _ in range(MAX_STALE_RETRIES):
            current = self.versions(season)[0]
            keys = [sk.current, *version_keys(sk.version(current or "0"))]
            reply: list[Any] = await self.scripts[script](keys=keys, args=[current, *args])
            if reply[0] == "STALE":
                self._versions[season] = (reply[1], self.versions(season)[1])
                continue
            if reply[0] == "MISSING":
                self._versions.pop(season, None)
                raise BoardMissing(season)
            return reply
        raise RuntimeError("board versions kept changing during a read")

    def _entries(self, flat: list[Any], first_rank: int, first_index: int) -> list[Entry]:
        triples = [flat[i:i + 3] for i in range(0, len(flat), 3)]
        scores = [-int(float(t[1])) for t in triples]
        ranks = assign_ranks(scores, first_rank, first_index, self.policy)
        out = []
        for (member, _score, profile), rank, score in zip(triples, ranks, scores, strict=True):
            uid = member_uid(member)
            vis, name = _parse_profile(profile, uid)
            out.append(Entry(rank, uid, name, vis, score))
        return out

    async def top(self, season: str, limit: int, after: Position | None = None) -> Top:
        """`limit` public entries from the top, or after the position `after`
        (an entry's (stored score, tie time, user id), as `Top.next` gives)."""
        erased = self.season_keys(season).erased
        where = ["", ""] if after is None else [str(after[0]), self._member(season, after)]
        reply = await self._read("read_top", season, lambda vk: [vk.public, vk.users, erased],
                                 [limit, *where])
        total, start, better = int(reply[1]), int(reply[2]), int(reply[3])
        last_member, last_score = str(reply[4]), reply[5]
        more = start + limit < total and last_member != ""
        return Top(total, self._entries(reply[6:], better + 1, start),
                   self._position(last_member, last_score) if more else None)

    def _member(self, season: str, position: Position) -> str:
        _score, ts, uid = position
        width = parse_season(season).ts_width
        return (pad_ts(ts, width) if self.policy == "first" else "") + pad_uid(uid)

    def _position(self, member: str, score: Any) -> Position:
        ts = int(member[:-UID_WIDTH]) if self.policy == "first" else 0
        return int(float(score)), ts, member_uid(member)

    async def around(self, season: str, user_id: int, radius: int) -> Around | None:
        """A learner's entry and neighbours, or None when they have no score this season."""
        erased = self.season_keys(season).erased
        reply = await self._read(
            "read_around", season, lambda vk: [vk.public, vk.hidden, vk.users, erased],
            [pad_uid(user_id), radius, self.policy])
        if reply[0] == "NOT_RANKED":
            return None
        _, profile, score_text, index, better, start, start_better = reply[:7]
        index, better, start, start_better = int(index), int(better), int(start), int(start_better)
        vis, name = _parse_profile(profile, user_id)
        score = -int(float(score_text))
        rank = better + 1 if self.policy == "shared" else index + 1
        me = Entry(rank, user_id, name, vis, score)
        neighbors = self._entries(reply[7:], start_better + 1, start)
        if vis == "hidden":  # placed where they would stand, the others ranked beside them
            pos = index - start
            neighbors.insert(pos, me)
            neighbors = beside(neighbors, pos, self.policy)
        else:
            pos = next(i for i, e in enumerate(neighbors) if e.user_id == user_id)
            neighbors[pos] = me
        return Around(me, pos, neighbors)

    async def standings_of(self, season: str, user_ids: list[int], board_rank: bool = False
                           ) -> list[Scored]:
        """The learners among `user_ids` who have a score on the season's
        current board, with their stored profile (and, with `board_rank`, their
        rank on the whole public board): one script call per MEMBERS_PER_CALL
        ids, none of which scans the board."""
        width = 3 if board_rank else 2
        out: list[Scored] = []
        for i in range(0, len(user_ids), MEMBERS_PER_CALL):
            chunk = user_ids[i:i + MEMBERS_PER_CALL]
            reply = await self._read("scores", season,
                                     lambda vk: [vk.public, vk.hidden, vk.users],
                                     [self.policy, "rank" if board_rank else "",
                                      *(pad_uid(u) for u in chunk)])
            for k, uid in enumerate(chunk):
                score, raw = reply[1 + width * k], reply[2 + width * k]
                if score == "" or not raw:
                    continue
                profile = StoredProfile.parse(raw)
                rank = int(reply[3 + width * k]) if board_rank else None
                out.append(Scored(uid, -int(float(score)), profile.visibility,
                                  profile.name or default_name(uid),
                                  int(profile.last_ts or 0), rank))
        return out

    async def scores(self, season: str, user_ids: list[int]
                     ) -> dict[int, tuple[int | None, str, str, int | None]]:
        """Each learner's (total or None, visibility, name, tie time or None)
        on the current board; the tie time is the stored offset of their
        latest completion (the `first` policy orders ties by it)."""
        reply = await self._read("scores", season,
                                 lambda vk: [vk.public, vk.hidden, vk.users],
                                 [self.policy, "", *(pad_uid(u) for u in user_ids)])
        out: dict[int, tuple[int | None, str, str, int | None]] = {}
        for i, uid in enumerate(user_ids):
            score, profile = reply[1 + 2 * i], reply[2 + 2 * i]
            parsed = StoredProfile.parse(profile) if profile else None
            vis, name = (parsed.visibility, parsed.name) if parsed else ("public", "")
            tie = int(parsed.last_ts) if parsed and parsed.last_ts else None
            out[uid] = (-int(float(score)) if score != "" else None, vis, name, tie)
        return out

    async def scan_scored(self, season: str, count: int = 2000) -> AsyncIterator[list[int]]:
        """Batches of the learners scored on the current board (HSCAN: bounded memory)."""
        current = await self.redis.get(self.season_keys(season).current)
        if not current:
            return
        users = self.season_keys(season).version(str(current)).users
        cursor = 0
        while True:
            reply: Any = await self.redis.hscan(users, cursor, count=count)
            cursor, batch = reply
            ids = [int(uid) for uid, prof in batch.items()
                   if StoredProfile.parse(str(prof)).last_ts]
            if ids:
                yield ids
            if cursor == 0:
                return

    async def present(self, season: str) -> bool:
        return bool(await self.redis.exists(self.season_keys(season).current))

    async def wait_present(self, season: str, timeout_seconds: float) -> bool:
        deadline = asyncio.get_running_loop().time() + timeout_seconds
        while True:
            if await self.present(season):
                return True
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(0.05)

