"""The transport of the board: one client, its registered scripts, the
versions this process believes current, and the calls every part of the
board makes through them (a pipeline on one node; on a cluster, calls routed
to each slot's node, at most CLUSTER_IN_FLIGHT at once).

Every call goes through one Lua script that first checks the season's current
(and building) version against what this process believes; a stale belief
costs one retry, a missing marker means "no board" (never a partial one).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any, TypeVar

from redis.asyncio import Redis, RedisCluster
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError, ResponseError

from laurels.board.connection import require_supported, trust_of
from laurels.board.keys import Keys, SeasonKeys
from laurels.board.lua_args import SCRIPTS, preamble
from laurels.board.signals import Signals
from laurels.board.values import BoardMissing
from laurels.core.ranking import TiePolicy
from laurels.core.seasons import Season

T = TypeVar("T")
MAX_STALE_RETRIES = 8
# On Redis Cluster a batch of script calls runs as concurrent routed calls;
# at most this many of one batch at a time (a rebuild streams 2,000 per
# batch), so one caller never takes every connection of the client.
CLUSTER_IN_FLIGHT = 32
MEMBERS_PER_CALL = 2_000  # ids per scores/ranks call: a few ms of Redis
APPLY_BATCH = 500  # entries (a delta on a board) per apply.lua call: 10-15 ms of Redis


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


def lua_text(name: str) -> str:
    """A file of lua/ as shipped (`apply`: apply.lua)."""
    return resources.files(__package__).joinpath("lua", f"{name}.lua").read_text()


def script_source(name: str, body: str | None = None) -> str:
    """A script as Scripts registers it: the shared helpers, its arguments'
    names, then its body (the shipped one, or a variant a bench or a test
    compares with it)."""
    return "\n".join((lua_text("_common"), preamble(name),
                      lua_text(name) if body is None else body))


class Scripts:
    """Every Lua script, registered once per client; NOSCRIPT is reloaded by redis-py."""

    NAMES = tuple(SCRIPTS)  # each with its arguments' names (lua_args.py)

    def __init__(self, redis: Redis) -> None:
        self.by_name: dict[str, AsyncScript] = {
            name: redis.register_script(script_source(name)) for name in self.NAMES}

    def __getitem__(self, name: str) -> AsyncScript:
        return self.by_name[name]


Call = tuple[str, list[str], list[Any], "asyncio.Future[Any]"]  # script, keys, args, answer


class Coalesced:
    """The read script calls of one turn of the event loop, sent to Redis in
    one round trip (issue 30): concurrent requests (a page refetching after
    a hint, many learners' neighbourhoods) share one write and one read of
    the connection instead of one each. A call alone goes out at once, as
    before. The calls go as plain EVALSHA (a script pipeline of redis-py
    would ask SCRIPT EXISTS first); one that finds its script missing
    (NOSCRIPT: a Redis restarted) is sent again on its own, which loads it.
    Redis Cluster routes each call to its slot's node: not coalesced."""

    def __init__(self, redis: Redis, scripts: Scripts) -> None:
        self.redis = redis
        self.scripts = scripts
        self._queue: list[Call] = []
        self._sending: set[asyncio.Future[None]] = set()

    async def call(self, script: str, keys: list[str], args: list[Any]) -> Any:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.append((script, keys, args, future))
        if len(self._queue) == 1:
            loop.call_soon(self._flush)  # after what this turn of the loop runs
        return await future

    def _flush(self) -> None:
        calls, self._queue = self._queue, []
        if calls:
            task = asyncio.ensure_future(self._send(calls))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _send(self, calls: list[Call]) -> None:
        try:
            replies = await self._replies(calls)
        except BaseException as exc:
            for *_, future in calls:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for (*_, future), reply in zip(calls, replies, strict=True):
            if future.done():
                continue
            if isinstance(reply, Exception):
                future.set_exception(reply)
            else:
                future.set_result(reply)

    async def _replies(self, calls: list[Call]) -> list[Any]:
        if len(calls) == 1:
            script, keys, args, _ = calls[0]
            return [await self.scripts[script](keys=keys, args=args)]
        async with self.redis.pipeline(transaction=False) as pipe:
            for script, keys, args, _ in calls:
                pipe.evalsha(self.scripts[script].sha, len(keys), *keys, *args)
            replies = list(await pipe.execute(raise_on_error=False))
        for i, reply in enumerate(replies):
            if isinstance(reply, NoScriptError):
                script, keys, args, _ = calls[i]
                replies[i] = await self.scripts[script](keys=keys, args=args)
        return replies


class BoardBase:
    def __init__(self, redis: Redis, keys: Keys, policy: TiePolicy,
                 signals: Signals | None = None, *, zone: str) -> None:
        self.redis = redis
        self.zone = zone  # the calendar of its seasons' names (LAURELS_TIME_ZONE)
        self.cluster = isinstance(redis, RedisCluster)
        self.keys = keys
        self.policy = policy
        self.scripts = Scripts(redis)
        self.coalesced = Coalesced(redis, self.scripts)
        # Whether the servers are proven to hold what PostgreSQL says (trust.py).
        self.trust = trust_of(redis)
        # season -> (current, building) as last seen; corrected by STALE replies
        self._versions: dict[str, tuple[str, str]] = {}
        # Who in this process hears its own changes at once (board/signals.py).
        self.signals = signals or Signals()
        # Names this process in what it publishes, so it skips its own echo.
        self.origin = uuid.uuid4().hex
        self._stream_groups: set[str] = set()  # rank-event consumer groups known to exist

    async def open(self) -> None:
        """Ready the client: on a cluster, load the topology before any
        concurrent use (redis-py 8.1's async cluster client, first used by
        many calls at once, can hand one of them a connection that is being
        replaced); refuse a server too old (connection.py)."""
        if self.cluster:
            await self.redis.initialize()
        await require_supported(self.redis)

    async def close(self) -> None:
        await self.redis.aclose()

    async def ping(self) -> None:
        await self.redis.ping()

    async def rewrite_files(self) -> bool:
        """Have the server write its files afresh from what it holds now: its
        append-only file (BGREWRITEAOF) and its snapshot (BGSAVE, once the
        rewrite is done), so an erased learner's name and id leave them.
        False when a rewrite is already running (try again later)."""
        try:
            await self.redis.bgrewriteaof()
        except ResponseError as exc:
            if "in progress" in str(exc):
                return False
            raise
        await self.redis.bgsave(schedule=True)
        return True

    def season_keys(self, season: Season) -> SeasonKeys:
        return self.keys.season(season)

    async def version_keys(self, season: Season, version: str) -> list[str]:
        """Every key of one version of a season's board: its team boards'
        (found from its teams hash), its idempotency chunks, then its sets
        and hashes, the teams hash and the chunk index last (so a cleanup
        cut short still finds what is left)."""
        vk = self.season_keys(season).version(version)
        names = vk.every(await self.redis.smembers(vk.chunks))
        for kind in await self.redis.hkeys(vk.teams):  # its team boards (board/teams.py)
            tk = vk.team(str(kind))
            names[:0] = [*(tk.top(str(g)) for g in await self.redis.hkeys(tk.counts)),
                         tk.members, tk.points, tk.scores, tk.sums, tk.counts]
        return names

    def versions(self, season: Season) -> tuple[str, str]:
        return self._versions.get(season.name, ("", ""))

    def forget(self, season: Season) -> None:
        self._versions.pop(season.name, None)

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

    async def _write(self, script: str, season: Season, keys_of: Any, head: list[str],
                     args_of: Callable[[str, str], tuple[Any, ...]]) -> bool:
        """Run a write script on the current and building versions (its
        arguments, given the versions this process believes: `args_of`);
        False if no board."""
        sk = self.season_keys(season)
        for _ in range(MAX_STALE_RETRIES):
            versions = self.versions(season)
            keys = [sk.current, sk.building, *head]
            for v in versions:
                if v:
                    keys += keys_of(sk.version(v))
            reply = await self.scripts[script](keys=keys, args=list(args_of(*versions)))
            if reply[0] == "STALE":
                self._versions[season.name] = (reply[1], reply[2])
                continue
            return bool(reply[0] == "OK")
        raise RuntimeError(f"board versions kept changing during {script}")

    async def _read(self, script: str, season: Season, version_keys: Any,
                    args_of: Callable[[str], list[Any]], proven: bool = True) -> list[Any]:
        """Run a read script on the current version (its arguments, given the
        version this process believes current: `args_of`). Never from a
        server not yet proven (trust.py), but for the repair's own reads
        (`proven=False`): checked before, and after, since a new connection
        to a restarted server tells the trust as it connects, before this
        read is sent on it."""
        sk = self.season_keys(season)
        for _ in range(MAX_STALE_RETRIES):
            if proven:
                await self.trust.check()
            current = self.versions(season)[0]
            keys = [sk.current, *version_keys(sk.version(current or "0"))]
            call = args_of(current)
            reply: list[Any] = (await self.scripts[script](keys=keys, args=call)
                                if self.cluster else
                                await self.coalesced.call(script, keys, call))
            if proven:
                await self.trust.check()
            if reply[0] == "STALE":
                self._versions[season.name] = (reply[1], self.versions(season)[1])
                continue
            if reply[0] == "MISSING":
                self._versions.pop(season.name, None)
                raise BoardMissing(season)
            return reply
        raise RuntimeError("board versions kept changing during a read")

    async def present(self, season: Season) -> bool:
        return bool(await self.redis.exists(self.season_keys(season).current))

    async def wait_present(self, season: Season, timeout_seconds: float) -> bool:
        deadline = asyncio.get_running_loop().time() + timeout_seconds
        while True:
            if await self.present(season):
                return True
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(0.05)

