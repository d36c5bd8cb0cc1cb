"""The Redis transport: a client whose requests queue for a connection.

redis-py's default asyncio pool raises `MaxConnectionsError` at once when
every connection is busy, so a burst of viewers refetching on a hint turned
into `503`s while Redis itself was idle. Here a request that finds every
connection busy waits for one (`BlockingConnectionPool`; on Redis Cluster, a
semaphore in front of the client's per-node pools) for at most
`timeout_seconds`; only then does it fail. The wait is measured in
`laurels_pool_wait_seconds{store="redis"}`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Callable
from typing import Any, TypeVar

import hiredis
from redis import exceptions as redis_exceptions
from redis.asyncio import BlockingConnectionPool, Redis, RedisCluster
from redis.asyncio.connection import Connection, SSLConnection, UnixDomainSocketConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.maint_notifications import MaintNotificationsConfig

from laurels.board.trust import Trust, Trusting
from laurels.core.errors import StoreUnavailable
from laurels.core.metrics import POOL_WAIT

# Maintenance notifications off: redis-py 8 turns them on ("auto") under
# RESP3, and then skips its check that a pooled connection is still open
# before handing it out, so the first command after a Redis restart or a cut
# connection failed with "Connection closed by server" (a read answered 503
# while Redis was up). They are a Redis Enterprise feature laurels does not use.
OPTIONS: dict[str, Any] = {"decode_responses": True, "socket_connect_timeout": 5,
                           "socket_timeout": 30, "health_check_interval": 15,
                           "maint_notifications_config": MaintNotificationsConfig(enabled=False)}


class MeasuredPool(BlockingConnectionPool):
    """`BlockingConnectionPool` with a lean path for the common case.

    When a connection is free and nobody waits, it is taken and given back
    without the condition, the timeout and redis-py's per-call observability
    hooks (a third of a short read's CPU time in a py-spy profile); the
    connection is still checked as the library checks it. When every
    connection is busy, the library's blocking path runs unchanged."""

    async def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            if (self._available_connections and not self._in_maintenance
                    and not self._condition._waiters):
                connection = self._available_connections.pop()
                self._in_use_connections.add(connection)
                try:
                    await self.ensure_connection(connection)
                except BaseException:
                    await self.release(connection)
                    raise
                return connection
            return await super().get_connection(*args, **kwargs)  # type: ignore[no-untyped-call]
        finally:
            POOL_WAIT.labels("redis").observe(time.perf_counter() - started)

    async def release(self, connection: Any) -> None:
        if self._in_maintenance or self._condition._waiters:
            await super().release(connection)
            return
        self._in_use_connections.remove(connection)
        if connection.should_reconnect():
            await connection.disconnect()
        self._available_connections.append(connection)


class HiredisPacking:
    """Commands packed by hiredis' C packer (`hiredis.pack_command`, what
    redis-py's synchronous client uses when hiredis is installed). redis-py's
    asyncio connection packs every argument in Python: with 14 arguments a
    completion to apply.lua, that was a quarter of the server's samples in a
    py-spy profile of batch ingest (docs/performance.md). Arguments hiredis
    does not take (anything but str, int, float and bytes) go the library's
    own way, and so does a connection whose encoding is not strict UTF-8
    (hiredis always encodes strings so)."""

    encoder: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._hiredis = (self.encoder.encoding.lower().replace("-", "").replace("_", "")
                         == "utf8" and self.encoder.encoding_errors == "strict")

    def pack_command(self, *args: Any) -> list[bytes]:
        if not self._hiredis:
            return super().pack_command(*args)  # type: ignore[misc, no-any-return]
        if isinstance(args[0], str):  # 'CONFIG GET': the server wants two arguments
            args = (*args[0].encode().split(), *args[1:])
        elif b" " in args[0]:
            args = (*args[0].split(), *args[1:])
        try:
            return [hiredis.pack_command(args)]
        except TypeError:
            return super().pack_command(*args)  # type: ignore[misc, no-any-return]


class PackedConnection(Trusting, HiredisPacking, Connection):
    pass


class PackedSSLConnection(Trusting, HiredisPacking, SSLConnection):
    pass


class PackedUnixConnection(Trusting, HiredisPacking, UnixDomainSocketConnection):
    pass


PACKED: dict[type, type] = {Connection: PackedConnection, SSLConnection: PackedSSLConnection,
                            UnixDomainSocketConnection: PackedUnixConnection}


PUBSUB_ROOM = 16  # connections a process's subscriptions may hold on one node


class QueueingRedisCluster(RedisCluster):
    """At most `max_in_flight` commands at once; the others wait their turn.
    Each node's pool holds that many connections plus room for the Pub/Sub
    connections this process keeps open, so none can overflow."""

    def __init__(self, *args: Any, max_in_flight: int = 64, wait_seconds: float = 5.0,
                 **kwargs: Any) -> None:
        kwargs["max_connections"] = max_in_flight + PUBSUB_ROOM
        super().__init__(*args, **kwargs)
        # Every node's connections, those found later too (the nodes manager
        # makes them from this dict), ask their server's run id (trust.py).
        self.trust = Trust()
        trusting = _trusting(self.connection_kwargs.get("connection_class", Connection),
                             self.trust, packed=False)
        self.connection_kwargs["connection_class"] = trusting
        for node in self.startup_nodes:
            node.connection_class = trusting
        self._turns = asyncio.Semaphore(max_in_flight)
        self._wait_seconds = wait_seconds

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            await asyncio.wait_for(self._turns.acquire(), self._wait_seconds)
        except TimeoutError:
            raise RedisConnectionError("no Redis connection became free in time") from None
        finally:
            POOL_WAIT.labels("redis").observe(time.perf_counter() - started)
        try:
            return await super().execute_command(*args, **kwargs)
        finally:
            self._turns.release()


def _trusting(base: type, trust: Trust, packed: bool = True) -> type:
    """`base` telling `trust` each server's run id (and packing with hiredis)."""
    if packed:
        base = PACKED.get(base, base)
    bases = (base,) if issubclass(base, Trusting) else (Trusting, base)
    return type(f"Trusting{base.__name__}", bases, {"trust": trust})


def connect(url: str, cluster: bool, pool_size: int = 64, timeout_seconds: float = 5.0) -> Any:
    """The client of `url`; BadRedisUrl (one line) for options redis-py
    refuses, found now by making one connection object (unconnected), not
    at the first command as a traceback."""
    try:
        client = _connect(url, cluster, pool_size, timeout_seconds)
        if cluster:
            node = client.startup_nodes[0]
            node.connection_class(**node.connection_kwargs)
        else:
            pool = client.connection_pool
            pool.connection_class(**pool.connection_kwargs)
        return client
    except (redis_exceptions.RedisError, ValueError, TypeError) as exc:
        # Its words, never the URL (it may hold a password).
        raise BadRedisUrl(f"LAURELS_REDIS_URL is refused: {exc}") from None


def _connect(url: str, cluster: bool, pool_size: int, timeout_seconds: float) -> Any:
    if cluster:
        return QueueingRedisCluster.from_url(url, max_in_flight=pool_size,
                                             wait_seconds=timeout_seconds, **OPTIONS)
    pool = MeasuredPool.from_url(url, max_connections=pool_size, timeout=timeout_seconds,
                                 **OPTIONS)
    # The class redis-py chose for the URL's scheme, packing with hiredis,
    # and asking each new connection's server its run id (trust.py).
    client = Redis.from_pool(pool)
    client.trust = Trust()  # type: ignore[attr-defined]
    pool.connection_class = _trusting(pool.connection_class, client.trust)  # type: ignore[attr-defined]
    return client


def trust_of(client: Any) -> Trust:
    """The trust of a client connect() made; a client made otherwise (a
    test's, a tool's) gets one that never doubts (no connection tells it)."""
    trust = getattr(client, "trust", None)
    return trust if isinstance(trust, Trust) else Trust()


MIN_VERSION = (7, 0)  # sharded Pub/Sub (SPUBLISH/SSUBSCRIBE) and SMISMEMBER need it


class UnsupportedRedis(Exception):
    """The server is older than laurels supports: one line saying so."""


class BadRedisUrl(UnsupportedRedis):
    """LAURELS_REDIS_URL has options redis-py refuses (an `ssl_cert_reqs`
    other than none, optional or required, ...): one line saying which."""


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")[:2] if p.isdigit())


async def require_supported(client: Any) -> None:
    """Refuse Redis older than 7.0 (Valkey reports 7.2 or later as its
    `redis_version`): every server of a cluster is checked."""
    if isinstance(client, RedisCluster):
        infos = list((await client.info("server", target_nodes=RedisCluster.ALL_NODES)).values())
    else:
        infos = [await client.info("server")]
    for info in infos:
        if not isinstance(info, dict):
            continue
        version = str(info.get("redis_version", "0"))
        if _version(version) < MIN_VERSION:
            raise UnsupportedRedis(
                f"Redis {version} is too old: laurels needs Redis 7.0 or later, or Valkey "
                "7.2 or later (sharded Pub/Sub, SMISMEMBER)")


# The Redis errors that mean "not reachable now" (laurels.core.errors.StoreUnavailable):
# refused or dropped connections, timeouts, a pool with no free connection
# in time, a cluster failing over or re-sharding, a replica promoted. Any
# other (a Lua error, a wrong type) is a bug and stays what it is.
REDIS_DOWN: tuple[type[BaseException], ...] = (
    redis_exceptions.ConnectionError, redis_exceptions.TimeoutError,
    redis_exceptions.ClusterDownError, redis_exceptions.TryAgainError,
    redis_exceptions.MasterDownError, redis_exceptions.ReadOnlyError,
    redis_exceptions.RedisClusterException, OSError)

F = TypeVar("F", bound=Callable[..., Any])


def unavailable_when_down(fn: F) -> F:
    """`fn` (a coroutine or async generator function of the board) raises
    StoreUnavailable where Redis does not answer."""
    if inspect.isasyncgenfunction(fn):

        @functools.wraps(fn)
        async def stream(*args: Any, **kwargs: Any) -> Any:
            try:
                async for item in fn(*args, **kwargs):
                    yield item
            except REDIS_DOWN as exc:
                raise StoreUnavailable("redis", exc) from exc

        return stream  # type: ignore[return-value]

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except REDIS_DOWN as exc:
            raise StoreUnavailable("redis", exc) from exc

    return call  # type: ignore[return-value]


C = TypeVar("C", bound=type)


def raising_unavailable(cls: C) -> C:
    """Every public coroutine of `cls` (the Board, assembled from its parts)
    raises StoreUnavailable where Redis does not answer: callers above the
    board know one error for "Redis is down", never redis-py's."""
    for name in dir(cls):
        attr = getattr(cls, name)
        if not name.startswith("_") and (inspect.iscoroutinefunction(attr)
                                         or inspect.isasyncgenfunction(attr)):
            setattr(cls, name, unavailable_when_down(attr))
    return cls
