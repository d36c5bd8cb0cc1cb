"""Applying deltas to a season's board: completions and corrections,
exactly once (apply.lua: the idempotency bit and the score in one script),
profiles and erasures."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple

import orjson

from laurels.board.base import APPLY_BATCH, MAX_STALE_RETRIES, BoardBase
from laurels.board.hints import Hint, hint_of
from laurels.board.keys import Keys, VersionKeys, chunk_bits, hashed_bits
from laurels.board.lua_args import (
    ApplyHead,
    ApplySeason,
    EraseArgs,
    Learner,
    MarkTiesArgs,
    SetProfileArgs,
    flat,
    json_list,
)
from laurels.board.values import Delta, Profile
from laurels.core.ranking import UNIX_EPOCH, pad_uid
from laurels.core.seasons import Season, whole_week
from laurels.core.states import ApplyResult

# Seasons whose parsed name and keys a process keeps, the last used (about
# 1.5 kB each, and as much a version's keys: 6 MB each cache at most). A
# batch's seasons are a few hundred; with more boards in use than this,
# the rest are made as before, a call at a time.
SEASONS_KNOWN = 4_096
TIES_TTL_MS = 3_600_000  # a void's mark outlives any apply it precedes (or it reads again)
# An entry's answer (apply.lua): how many targets took it, -1 deferred, -2 retry.
_ANSWERS: dict[int, ApplyResult] = {0: "duplicate", -1: "deferred", -2: "retry"}


class _Call:
    """One apply.lua call being built: its seasons (each with the versions
    this process believes, its chunks), its items (a completion once,
    whatever the boards it counts on) and its entries (an item on a
    season's board), in the batch's order: a season's together, its
    deltas in their order (`_batches`)."""

    def __init__(self, deltas: list[int]) -> None:
        self.seasons: dict[str, _SeasonCall] = {}
        self.items: dict[tuple[Any, ...], int] = {}
        self.item_args: list[Any] = []
        self.entry_args: list[Any] = []
        self.reset_args: list[Any] = []
        self.deltas = deltas  # the index of each entry's delta, in order


class _Season(NamedTuple):
    """What a call needs of a season that its name alone decides: made once
    a process (`_known`), not once a call."""

    start: Season
    bits: int
    hashed: bool
    ranked: bool
    origin: int  # the season's start, seconds since 1970
    fixed_keys: tuple[str, ...]  # current, building, erased, notify stream, ties, window


class _SeasonCall:
    def __init__(self, index: int, season: Season, versions: tuple[str, str], targets: list[str],
                 known: _Season, first: int) -> None:
        self.index = index
        self.first = first  # the call's entry its entries start at
        self.season = season
        self.versions = versions
        self.targets = targets
        self.known = known
        self.start = known.start
        self.bits = known.bits
        self.chunks: dict[int, None] = {}  # in order of first use
        self.ranked = known.ranked


@lru_cache(maxsize=SEASONS_KNOWN)
def _known(keys: Keys, season: Season) -> _Season:
    sk = keys.season(season)
    origin = season.starts_at - UNIX_EPOCH
    return _Season(season, chunk_bits(season), hashed_bits(season), whole_week(season.name),
                   origin.days * 86400 + origin.seconds,
                   (sk.current, sk.building, sk.erased, sk.notify_stream, sk.ties, sk.window))


@lru_cache(maxsize=SEASONS_KNOWN)
def _version_keys(keys: Keys, season: str, version: str
                  ) -> tuple[VersionKeys, tuple[str, ...]]:
    """A version's keys, and the six a call names (apply.lua, KEYS)."""
    vk = keys.season(season).version(version)
    return vk, (vk.public, vk.hidden, vk.users, vk.chunks, vk.corrections, vk.parts)


class Applying(BoardBase):
    def _apply_call(self, deltas: list[Delta], batch: list[int], only_version: str | None = None,
                    believed: dict[str, tuple[str, str]] | None = None,
                    encoded: dict[tuple[Any, ...], tuple[Any, ...]] | None = None
                    ) -> tuple[_Call, list[str], list[Any]]:
        """One apply.lua call: the deltas `batch` names, in order, each
        season's together (`_batches`), of one or more seasons, on the
        versions this process believes current and building (or
        `believed`), or on `only_version` alone (a builder feeds only its
        own version, and only while it still holds the building marker; no
        hint then). The script publishes the refresh hints.
        `encoded` keeps each completion's item values for the next call
        (a completion's boards are mostly in several calls)."""
        call = _Call(batch)
        self._encode(call, deltas, only_version, believed, {} if encoded is None else encoded)
        keys, args = self._keys_and_args(call, only_version)
        return call, keys, args

    def _encode(self, call: _Call, deltas: list[Delta], only_version: str | None,
                believed: dict[str, tuple[str, str]] | None,
                encoded: dict[tuple[Any, ...], tuple[Any, ...]]) -> None:
        """A call's seasons, items and entries, from its deltas in order."""
        batch, items, item_args, entry_args = call.deltas, call.items, call.item_args, \
            call.entry_args
        seasons = call.seasons
        sc = None
        chunks: dict[int, None] = {}
        bits = 0
        # The loop below is a tagged batch's hottest Python (a completion
        # with three tags is five entries): a delta in one unpacking (its
        # fields in order, values.Delta), an item's values once, an entry's
        # positional (ApplyItem's, ApplyEntry's order), the season's chunks
        # in locals.
        for k, (seq, user_id, points, completed_at, season, p, correction, counted, reset_at,
                reset_score, tie_token, part, _, notify) in enumerate(
                    map(deltas.__getitem__, batch)):
            if sc is None or (sc.season is not season and sc.season != season):
                sc = self._season_call(seasons, season, only_version, believed, k)
                chunks, bits = sc.chunks, sc.bits
            chunks[seq >> bits] = None
            if notify:  # the weeks of a kind that notifies make rank events too
                sc.ranked = True
            # (a completion's boards are copies sharing its profile and
            # instant: by identity, the key hashes cheaply; equal objects not
            # shared would only make two items)
            key = (seq, correction, counted, user_id, id(completed_at), id(p))
            item = items.get(key)
            if item is None:
                item = items[key] = len(items)
                values = encoded.get(key)
                if values is None:
                    at = completed_at - UNIX_EPOCH
                    values = encoded[key] = (
                        seq, pad_uid(user_id), at.days * 86400 + at.seconds,
                        at.microseconds, str(p.version), p.visibility, p.display_name,
                        correction, "1" if counted else "0")
                item_args += values
            entry_args += (item, points, part)
            if reset_at or reset_score or tie_token:  # (a correction's: few)
                call.reset_args += (k, sc.start.pad_ts(reset_at) if reset_at else "",
                                    reset_score or 0, tie_token)

    def _keys_and_args(self, call: _Call, only_version: str | None
                       ) -> tuple[list[str], list[Any]]:
        """The call's KEYS (each season's fixed keys, its versions' keys,
        its chunks) and ARGV (apply.lua's head, items, entries, resets)."""
        seasons, batch = call.seasons, call.deltas
        keys: list[str] = []
        head: list[Any] = []
        chunk_ids: list[str] = []
        hint_channel = "" if self.cluster else self.keys.hint_channel()
        # (a season's entries: from its first to the next season's first)
        firsts = [sc.first for sc in seasons.values()]
        ends = [*firsts[1:], len(batch)] if firsts else []
        for sc, end in zip(seasons.values(), ends, strict=True):
            known = sc.known
            keys += known.fixed_keys
            per_version = [_version_keys(self.keys, sc.season.name, v) for v in sc.targets]
            for _, named in per_version:
                keys += named
            for vk, _ in per_version:  # (one hash holds every chunk of a board of a kind)
                if known.hashed:
                    keys.append(vk.bits)
                else:
                    keys += [vk.applied(chunk) for chunk in sc.chunks]
            on_current = bool(sc.targets) and sc.targets[0] == sc.versions[0]
            head += ApplySeason(
                expected_current=sc.versions[0], expected_building=sc.versions[1],
                on_current=("1" if sc.ranked else "h") if on_current else "0",
                targets=len(sc.targets), chunks=len(sc.chunks), season=sc.season.name,
                hint_channel=hint_channel or self.keys.shard_hint_channel(sc.season),
                metric=sc.start.metric, bits="h" if known.hashed else "s", chunk_bits=sc.bits,
                origin=known.origin, width=sc.start.ts_width, entries=end - sc.first,
                window="1" if sc.start.window else "0")
            chunk_ids += map(str, sc.chunks)  # (strings: field names and members as sent)
        # On a cluster the shard channel is in the season's slot: one season a call.
        command = "" if only_version is not None else "SPUBLISH" if self.cluster else "PUBLISH"
        args = list(ApplyHead(
            policy=self.policy, hint_command=command, seasons=len(seasons),
            heads=json_list(head + chunk_ids), items=json_list(call.item_args),
            entries=json_list(call.entry_args), resets=json_list(call.reset_args)))
        return keys, args

    def _season_call(self, seasons: dict[str, _SeasonCall], season: Season,
                     only_version: str | None, believed: dict[str, tuple[str, str]] | None,
                     first: int) -> _SeasonCall:
        """A call's next season (`_apply_call`), on the versions it applies to."""
        if season.name in seasons:
            raise ValueError("a call's deltas come a season at a time")
        versions = (believed or {}).get(season.name) or self.versions(season)
        targets = [v for v in versions if v]
        if only_version is not None:
            versions, targets = (versions[0], only_version), [only_version]
        sc = seasons[season.name] = _SeasonCall(len(seasons), season, versions, targets,
                                                _known(self.keys, season), first)
        return sc

    async def apply(self, deltas: list[Delta], only_version: str | None = None
                    ) -> list[ApplyResult]:
        """Apply deltas; per delta 'applied', 'duplicate' or 'missing'.

        One script call per batch of at most APPLY_BATCH deltas, in order
        (pipelined), on one node whatever their seasons; on a cluster one
        season a call, each season's calls in order, seasons side by side.
        With `only_version`, apply to that building version alone (the
        rebuild's own stream); otherwise to the current and building
        versions, and then publish refresh hints for the seasons that
        changed.
        """
        results: list[ApplyResult | None] = [None] * len(deltas)
        hints: list[Hint] = []
        pending = list(range(len(deltas)))
        for _ in range(MAX_STALE_RETRIES):
            if not pending:
                break
            encoded: dict[tuple[Any, ...], tuple[Any, ...]] = {}
            calls = [(group, self._apply_call(deltas, batch, only_version, encoded=encoded))
                     for group, batch in self._batches(deltas, pending)]
            replies = await self._run_in_order(
                "apply", [(group, (keys, args)) for group, (_, keys, args) in calls])
            again: list[int] = []
            for (_, (call, _, _)), reply in zip(calls, replies, strict=True):
                again += self._settle(call, reply, deltas, only_version, results, hints)
            pending = sorted(again)
        if pending:
            raise RuntimeError("board versions kept changing during apply")
        if only_version is None:
            # The scripts published these hints (built there, the one place a
            # hint of applied completions is); this process's caches hear at once.
            for hint in hints:
                self.signals.hint_caches(hint)
        return [r or "missing" for r in results]

    def _batches(self, deltas: list[Delta], pending: list[int]) -> list[tuple[str, list[int]]]:
        """`pending`'s deltas in calls of at most APPLY_BATCH, each season's in
        order and together (apply.lua takes a season's entries in turn): on
        one node, whole seasons together (a call's seasons each cost it a few
        commands, and a completion's boards in one call send it once), a
        season larger than a call in calls of its own; on a cluster, one
        season a call (its keys are one slot's), each with its season to
        keep its calls in order."""
        by_season: dict[str, list[int]] = {}
        for i in pending:
            by_season.setdefault(deltas[i].season.name, []).append(i)
        parts = [(season, idxs[k:k + APPLY_BATCH]) for season, idxs in by_season.items()
                 for k in range(0, len(idxs), APPLY_BATCH)]
        if self.cluster:
            return parts
        calls: list[list[int]] = [[]]
        for _, part in parts:
            if len(calls[-1]) + len(part) > APPLY_BATCH:
                calls.append([])
            calls[-1] += part
        return [("", call) for call in calls if call]

    def _settle(self, call: _Call, reply: Any, deltas: list[Delta], only_version: str | None,
                results: list[ApplyResult | None], hints: list[Hint]) -> list[int]:
        """Record one call's reply in `results` (and the hints it published in
        `hints`); the deltas to send again (a season's versions were STALE)."""
        refused: dict[str, str] = {}
        for sc in call.seasons.values():
            status, current, building, hint = reply[1 + 4 * sc.index: 5 + 4 * sc.index]
            if status == "STALE":
                self._versions[sc.season.name] = (current, building)
                if only_version is not None and building != only_version:
                    status = "MISSING"  # the version being built is gone
            if status != "OK":
                refused[sc.season.name] = status
            elif hint and (parsed := hint_of(orjson.loads(hint))) is not None:
                hints.append(parsed)
        again: list[int] = []
        # (each entry's number of targets it was applied to, or -1, -2)
        answers = reply[1 + 4 * len(call.seasons):]
        answer_of = _ANSWERS.get
        if not refused:  # (most calls: an entry's answer alone says it)
            for i, applied in zip(call.deltas, answers, strict=True):
                results[i] = answer_of(applied, "applied")  # (the script's numbers: ints)
            return again
        for i, applied in zip(call.deltas, answers, strict=True):
            status = refused.get(deltas[i].season.name)
            if status == "STALE":
                again.append(i)
            elif status == "MISSING":
                results[i] = "missing"
            else:
                results[i] = answer_of(applied, "applied")
        return again

    async def mark_ties(self, season: Season, user_ids: list[int]) -> list[str]:
        """Mark learners a void is about to be applied for, before their
        fallback tie time is read (apply.lua, "Ties"): their tokens, in order."""
        reply = await self.scripts["mark_ties"](
            keys=[self.season_keys(season).ties, self.season_keys(season).erased],
            args=flat(MarkTiesArgs(ttl_ms=TIES_TTL_MS), [Learner(pad_uid(u)) for u in user_ids]))
        return [str(t) for t in reply]

    async def set_profile(self, season: Season, user_id: int, profile: Profile) -> bool:
        """Project a profile onto one season; False when the season has no board."""
        return await self._write(
            "set_profile", season, lambda vk: [vk.public, vk.hidden, vk.users],
            [self.season_keys(season).erased],
            lambda current, building: SetProfileArgs(
                expected_current=current, expected_building=building, uid=pad_uid(user_id),
                profile_version=profile.version, visibility=profile.visibility,
                name=profile.display_name, policy=self.policy))

    async def erase(self, season: Season, user_id: int, tombstone_until: datetime) -> bool:
        """Remove an erased learner from a season's board; False when it has no
        board (the tombstone is kept all the same, until `tombstone_until`)."""
        return await self._write(
            "erase", season, lambda vk: [vk.public, vk.hidden, vk.users],
            [self.season_keys(season).erased, self.season_keys(season).ties,
             self.season_keys(season).notify_stream],
            lambda current, building: EraseArgs(
                expected_current=current, expected_building=building, uid=pad_uid(user_id),
                policy=self.policy, erased_until_ms=int(tombstone_until.timestamp() * 1000)))
