"""Building a board version from PostgreSQL (projection/rebuild.py drives it), the
version's lifetime (switch, abort, drop, expiry) and the server's identity
(projection/epoch.py watches it). Each step is one script or pipelined call; the rows
come from the rebuild's snapshot, the keys from board/keys.py."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from redis.asyncio import RedisCluster

from laurels.board.base import CLUSTER_IN_FLIGHT, BoardBase, gather_bounded
from laurels.board.lua_args import (
    Field,
    Learner,
    LoadBoardArgs,
    LoadCorrection,
    LoadErasedArgs,
    LoadRow,
    MergeBitsArgs,
    MergeFieldsArgs,
    Part,
    VersionArgs,
    flat,
)
from laurels.board.values import Standing
from laurels.core.ranking import pad_uid
from laurels.core.seasons import Season, parse_season

UNLINK_BATCH = 500  # keys per UNLINK of a dropped version


class BuildGone(Exception):
    """The version being built lost its building marker (another rebuild
    took over, or the board vanished from Redis)."""


class Building(BoardBase):
    async def begin_build(self, season: Season, parts: Sequence[str] = ()
                          ) -> tuple[str, str, list[str]]:
        """Mark a new version of the season as building (every apply from now
        on reaches it too), with the closed seasons (`parts`) it is built
        from their archives: (the new version, the current one or '', stale
        versions a dead builder left, to drop)."""
        sk = self.season_keys(season)
        version = str(await self.redis.incr(sk.next_version))
        current, *stale = await self.scripts["begin_build"](
            keys=[sk.building, sk.versions, sk.current, sk.version(version).parts,
                  sk.next_version],
            args=flat(VersionArgs(version), [Part(p) for p in parts]))
        return version, str(current), [str(v) for v in stale]

    async def switch(self, season: Season, version: str) -> str:
        """Make the built version current, atomically; the previous one ('' if
        none). BuildGone if it no longer holds the building marker."""
        sk = self.season_keys(season)
        reply = await self.scripts["switch"](keys=[sk.current, sk.building],
                                             args=list(VersionArgs(version)))
        if reply[0] != "OK":
            raise BuildGone("another rebuild took over the building marker")
        self.forget(season)
        return str(reply[1] or "")

    async def abort_build(self, season: Season, version: str) -> None:
        """Stop feeding a version being built (the current one keeps serving)."""
        await self.scripts["abort_build"](keys=[self.season_keys(season).building],
                                          args=list(VersionArgs(version)))

    async def merge_bits(self, season: Season, version: str, chunk: int, bits: bytes
                         ) -> list[int]:
        """Set a chunk's idempotency bits (65,536 seqs) on the version being
        built; the seqs among them an apply had set first (they reached the
        version live)."""
        sk = self.season_keys(season)
        vk = sk.version(version)
        reply = await self.scripts["merge_bits"](
            keys=[sk.building, vk.applied(chunk), vk.chunks, vk.scratch(1), vk.scratch(2)],
            args=list(MergeBitsArgs(version=version, chunk=chunk, bits=bits)))
        if reply[0] != "OK":
            raise BuildGone("the building board vanished from Redis")
        return [int(offset) for offset in reply[1:]]

    async def merge_fields(self, season: Season, version: str, fields: list[tuple[int, bytes]]
                           ) -> list[int]:
        """merge_bits on a board of a kind (keys.hashed_bits): many chunks'
        bits in one call; the seqs among them an apply had set first."""
        sk = self.season_keys(season)
        reply = await self.scripts["merge_fields"](
            keys=[sk.building, sk.version(version).bits],
            args=flat(MergeFieldsArgs(version=version), [Field(c, b) for c, b in fields]))
        if reply[0] != "OK":
            raise BuildGone("the building board vanished from Redis")
        return [int(seq) for seq in reply[1:]]

    async def load_erased(self, season: Season, version: str, current: str,
                          user_ids: Sequence[int]) -> None:
        """Put tombstones back and take those learners off the version being
        built and the current one (load_erased.lua)."""
        sk = self.season_keys(season)
        keys = [sk.building, sk.current, sk.erased]
        for v in (version, current) if current else (version,):
            vk = sk.version(v)
            keys += [vk.public, vk.hidden, vk.users]
        reply = await self.scripts["load_erased"](
            keys=keys, args=flat(LoadErasedArgs(version=version, current=current,
                                                 policy=self.policy),
                                 [Learner(pad_uid(u)) for u in user_ids]))
        if reply[0] != "OK":
            raise BuildGone("the building board vanished from Redis")

    async def load_corrections(self, season: Season, version: str,
                               corrected: Iterable[tuple[int, int, bool]]) -> None:
        """The snapshot's state (seq, correction number, counts) of corrected
        completions, unless a newer one reached the version live
        (load_corrections.lua; the stored form is _common.lua's)."""
        sk = self.season_keys(season)
        keys = [sk.building, sk.version(version).corrections]
        items = [LoadCorrection(seq=seq, correction=correction, counts="1" if counted else "0")
                 for seq, correction, counted in corrected]
        for i in range(0, len(items), 1000):
            reply = await self.scripts["load_corrections"](
                keys=keys, args=flat(VersionArgs(version), items[i:i + 1000]))
            if reply[0] != "OK":
                raise BuildGone("the building board vanished from Redis")

    async def load_standings(self, season: Season, version: str,
                             standings: Sequence[Standing]) -> int:
        """Add learners' points (user id, points, tie time, profile
        version, visibility, name) to the version being built
        (load_board.lua); how many it holds afterwards or kept off (erased).
        A tie time is a datetime, or microseconds since the season began."""
        sk = self.season_keys(season)
        vk = sk.version(version)
        start = season
        # Built positionally (LoadRow's order): a rebuild loads every learner
        # of its board, and by keyword a row cost three times as much.
        rows: list[Any] = []
        width = start.ts_width
        for uid, points, tie, profile_version, visibility, name in standings:
            rows += LoadRow(pad_uid(uid), points,
                            "" if tie is None else start.pad_ts(tie) if isinstance(
                                tie, datetime) else f"{tie:0{width}d}",
                            profile_version, visibility, name)
        args = [*LoadBoardArgs(version=version, policy=self.policy, metric=start.metric), *rows]
        reply = await self.scripts["load_board"](
            keys=[sk.building, sk.erased, vk.public, vk.hidden, vk.users], args=args)
        if reply[0] != "OK":
            raise BuildGone("the building board vanished from Redis")
        return int(reply[1]) + int(reply[2])

    async def drop_version(self, season: Season, version: str) -> None:
        """Free a version's keys without blocking Redis (UNLINK frees lazily)."""
        names = await self.version_keys(season, version)
        for i in range(0, len(names), UNLINK_BATCH):
            await self.redis.unlink(*names[i:i + UNLINK_BATCH])
        await self.redis.srem(self.season_keys(season).versions, version)

    async def expire(self, season: Season, at: datetime) -> int:
        """Give every key of a season (each version's too) the expiry `at`;
        returns how many keys."""
        sk = self.season_keys(season)
        names = sk.own()
        for v in await self.redis.smembers(sk.versions):
            names += await self.version_keys(season, str(v))
        replies = await gather_bounded([self.redis.pexpireat(n, at) for n in names],
                                       CLUSTER_IN_FLIGHT)
        return sum(1 for r in replies if r)

    async def drop_season(self, season: Season) -> int:
        """Delete every key of a season (each version's too) now; how many.
        Not an expiry at this process's clock: a clock ahead of Redis's would
        leave them for that long."""
        sk = self.season_keys(season)
        names = [*sk.own()[1:], sk.current]  # its marker last
        for v in await self.redis.smembers(sk.versions):
            names[:0] = await self.version_keys(season, str(v))
        self.forget(season)
        return await self.unlink_keys(names)

    async def expire_many(self, seasons: dict[Season, datetime]) -> int:
        """`expire` for many seasons, in four pipelined round trips (their
        versions, their versions' chunks and team boards, the expiries);
        returns how many keys."""
        names = list(seasons)
        pipe = self.redis.pipeline(transaction=False)
        for season in names:
            pipe.smembers(self.season_keys(season).versions)
        versions = [(s, str(v)) for s, vs in zip(names, await pipe.execute(), strict=True)
                    for v in vs]
        pipe = self.redis.pipeline(transaction=False)
        for season, v in versions:
            pipe.smembers(self.season_keys(season).version(v).chunks)
        chunks = await pipe.execute()
        pipe = self.redis.pipeline(transaction=False)
        for season, v in versions:
            pipe.exists(self.season_keys(season).version(v).teams)
        teamed = {sv for sv, n in zip(versions, await pipe.execute(), strict=True) if n}
        pipe = self.redis.pipeline(transaction=False)
        for season in names:
            for name in self.season_keys(season).own():
                pipe.pexpireat(name, seasons[season])
        for (season, v), held in zip(versions, chunks, strict=True):
            every = (await self.version_keys(season, v) if (season, v) in teamed  # (rare)
                     else self.season_keys(season).version(v).every(held))
            for name in every:
                pipe.pexpireat(name, seasons[season])
        return sum(1 for r in await pipe.execute() if r)

    async def held_boards(self, kind: str | None = None) -> dict[Season, list[str]]:
        """Every key Redis holds of a board of `kind` (or of any kind), by
        season: found by a scan, not from rows (a deleted kind's boards
        brought back by a Redis restored from before the deletion have no
        row left). On a cluster, every primary is scanned. (A board's
        season names its zone: its name read back from a key is the season.)"""
        held: dict[str, list[str]] = {}
        async for key in self.redis.scan_iter(match=self.keys.boards_pattern(kind),
                                              count=1000):
            season = self.keys.season_of_key(str(key))
            if season is not None:
                held.setdefault(season, []).append(str(key))
        out: dict[Season, list[str]] = {}
        for name, keys in held.items():
            try:
                out[parse_season(name, zone="UTC")] = keys
            except ValueError:  # no season's name: not laurels's key
                continue
        return out

    async def unlink_keys(self, keys: Sequence[str]) -> int:
        """Delete these keys of one season (one hash tag), UNLINK_BATCH at a time."""
        done = 0
        for i in range(0, len(keys), UNLINK_BATCH):
            done += int(await self.redis.unlink(*keys[i:i + UNLINK_BATCH]))
        return done

    async def fingerprint(self) -> str:
        """The run ids of the servers that hold the boards, sorted: a restart
        or a failover changes it (projection/epoch.py)."""
        if isinstance(self.redis, RedisCluster):
            info = await self.redis.info("server", target_nodes=RedisCluster.PRIMARIES)
            ids = sorted(str(v["run_id"]) for v in info.values() if isinstance(v, dict))
        else:
            ids = [str((await self.redis.info("server"))["run_id"])]
        return ",".join(ids)
