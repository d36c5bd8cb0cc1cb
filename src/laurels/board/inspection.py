"""Reading a board as it stands, to compare it with PostgreSQL: which
completions its version holds (its idempotency bits), which corrections,
which profile versions. A catch-up after Redis went back in time
(projection/catchup.py) replays only what this shows missing."""

from __future__ import annotations

from dataclasses import dataclass

from redis.client import NEVER_DECODE

from laurels.board.base import BoardBase
from laurels.board.keys import chunk_bits, hashed_bits
from laurels.board.lua_args import Learner, ProfileVersionsArgs, flat
from laurels.core.ranking import member_uid, pad_uid
from laurels.core.seasons import Season

PROFILE_BATCH = 2_000  # learners per profile_versions.lua call
MGET_CHUNKS = 64  # idempotency bitmaps per MGET (8 KiB each at most; HMGET: 32 B)


class BoardChanged(Exception):
    """The version being compared stopped being current (a rebuild switched)."""


@dataclass(frozen=True)
class BoardState:
    """A season's board in Redis: its current version, whether one is being
    built, and `intact` when every idempotency bitmap its chunks set lists
    is there, or on a board of a kind its bits hash when it has learners (a
    board partly evicted cannot be caught up)."""

    version: str
    building: bool
    intact: bool


class Inspecting(BoardBase):
    async def board_state(self, season: Season) -> BoardState | None:
        """The board's state, or None when Redis holds no board of the season."""
        sk = self.season_keys(season)
        current, building = await self.redis.mget([sk.current, sk.building])
        if not current:
            return None
        vk = sk.version(str(current))
        if hashed_bits(season):
            bits, learners = await self.redis.exists(vk.bits), await self.redis.exists(
                vk.public, vk.hidden)
            return BoardState(str(current), bool(building), bool(bits) or not learners)
        chunks = [int(c) for c in await self.redis.smembers(vk.chunks)]
        there = await self.redis.exists(*(vk.applied(c) for c in chunks)) if chunks else 0
        return BoardState(str(current), bool(building), there == len(chunks))

    async def missing(self, season: Season, version: str, seqs: list[int]) -> list[int]:
        """Those of `seqs` (completions of the season) whose idempotency bit
        the version does not hold. The version's bitmaps they fall in are
        read with its current marker in one MGET (one slot: the season's
        hash tag; a snapshot, as a script's), at most 8 KiB each, and the
        bits tested here (Redis numbers a byte's bits from its high end):
        no argument per completion crosses to Redis. Raises BoardChanged if
        the version is no longer current."""
        sk, vk = self.season_keys(season), self.season_keys(season).version(version)
        width = chunk_bits(season)
        chunks = sorted({seq >> width for seq in seqs})
        out: list[int] = []
        for i in range(0, len(chunks), MGET_CHUNKS):
            some = chunks[i:i + MGET_CHUNKS]
            if hashed_bits(season):
                # A board of a kind: its bits hash's fields, read while the
                # version is current before and after (versions only grow:
                # one current on both sides was current in between).
                fields = await self.redis.execute_command(  # type: ignore[no-untyped-call]
                    "HMGET", vk.bits, *some, **{NEVER_DECODE: []})
                reply = [str(await self.redis.get(sk.current) or "").encode(), *fields]
            else:
                reply = await self.redis.execute_command(  # type: ignore[no-untyped-call]
                    "MGET", sk.current, *(vk.applied(c) for c in some), **{NEVER_DECODE: []})
            if reply[0] != version.encode():
                raise BoardChanged(season)
            bitmaps = {c: bitmap or b"" for c, bitmap in zip(some, reply[1:], strict=True)}
            for seq in seqs:
                bitmap = bitmaps.get(seq >> width)
                if bitmap is None:
                    continue  # (its chunk is read in another round)
                offset = seq & ((1 << width) - 1)
                byte = offset >> 3
                if byte >= len(bitmap) or not (bitmap[byte] >> (7 - (offset & 7))) & 1:
                    out.append(seq)
        return out

    async def corrections_of(self, season: Season, version: str) -> dict[int, tuple[int, bool]]:
        """The corrections a version holds: seq -> (correction number, counts)."""
        stored = await self.redis.hgetall(self.season_keys(season).version(version).corrections)
        out = {}
        for seq, state in stored.items():
            n, _, counts = str(state).partition(":")
            out[int(seq)] = (int(n), counts == "1")
        return out

    async def parts_of(self, season: Season, version: str) -> set[str]:
        """The closed seasons a version was built from (their archives)."""
        return {str(p) for p in await self.redis.smembers(
            self.season_keys(season).version(version).parts)}

    async def learners(self, season: Season, version: str, most: int) -> list[int] | None:
        """The learners on a version of the season's board (public and
        hidden), or None when more than `most` are."""
        vk = self.season_keys(season).version(version)
        if await self.redis.zcard(vk.public) + await self.redis.zcard(vk.hidden) > most:
            return None
        members = [*await self.redis.zrange(vk.public, 0, -1),
                   *await self.redis.zrange(vk.hidden, 0, -1)]
        return sorted(member_uid(str(m)) for m in members)

    async def profile_versions(self, season: Season, user_ids: list[int]) -> dict[int, int]:
        """The profile version of each learner on the season's current board
        (0: a default profile); learners not on it are left out."""
        out: dict[int, int] = {}
        for i in range(0, len(user_ids), PROFILE_BATCH):
            batch = user_ids[i:i + PROFILE_BATCH]
            reply = await self._read(
                "profile_versions", season, lambda vk: [vk.public, vk.users],
                lambda current, batch=batch: flat(  # type: ignore[misc]
                    ProfileVersionsArgs(expected_current=current, policy=self.policy),
                    [Learner(pad_uid(u)) for u in batch]), proven=False)
            out.update({u: int(v) for u, v in zip(batch, reply[1:], strict=True) if int(v) >= 0})
        return out
