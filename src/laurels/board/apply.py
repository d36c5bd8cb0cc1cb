"""Applying deltas to a season's board: completions and corrections,
exactly once (apply.lua: the idempotency bit and the score in one script),
profiles and erasures."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from laurels.board.base import APPLY_BATCH, MAX_STALE_RETRIES, BoardBase
from laurels.board.hints import Hint, hint_of
from laurels.board.lua_args import (
    ApplyDelta,
    ApplyHead,
    EraseArgs,
    Learner,
    MarkTiesArgs,
    SetProfileArgs,
    flat,
)
from laurels.board.values import Delta, Profile
from laurels.keys import chunk_bits, hashed_bits
from laurels.ranking import pad_uid
from laurels.seasons import parse_season, whole_week
from laurels.states import ApplyResult

TIES_TTL_MS = 3_600_000  # a void's mark outlives any apply it precedes (or it reads again)


def _season_batches(deltas: list[Delta]) -> list[list[int]]:
    """Indexes of `deltas`, in batches of at most APPLY_BATCH of one season
    each, in the order they came."""
    by_season: dict[str, list[int]] = {}
    for i, d in enumerate(deltas):
        by_season.setdefault(d.season, []).append(i)
    return [idxs[k:k + APPLY_BATCH] for idxs in by_season.values()
            for k in range(0, len(idxs), APPLY_BATCH)]


class Applying(BoardBase):
    def _apply_call(self, season: str, deltas: list[Delta], versions: tuple[str, str],
                    targets: list[str], hint: bool = True) -> tuple[list[str], list[Any]]:
        """One apply.lua call: a batch of one season's deltas, in order; the
        script publishes the refresh hint itself when `hint`."""
        sk = self.season_keys(season)
        start = parse_season(season, zone=self.zone)
        bits, hashed = chunk_bits(season), hashed_bits(season)
        chunks: list[int] = []
        index: dict[int, int] = {}
        per_event: list[Any] = []
        # The loop below is a tagged batch's hottest Python (a completion
        # with three tags is five entries): fields positional (ApplyDelta's
        # order; by keyword it cost three times as much), chunk_of inlined.
        mask = (1 << bits) - 1
        for d in deltas:
            chunk = d.seq >> bits
            if chunk not in index:
                index[chunk] = len(chunks)
                chunks.append(chunk)
            p = d.profile
            per_event += ApplyDelta(
                d.seq, index[chunk], d.seq & mask, pad_uid(d.user_id), d.points,
                start.pad_ts(d.completed_at), p.version, p.visibility, p.display_name, d.correction,
                "1" if d.counted else "0", start.pad_ts(d.reset_at) if d.reset_at else "",
                d.reset_score or 0, d.tie_token, d.part)
        keys = [sk.current, sk.building, sk.erased, sk.notify_stream, sk.ties]
        for v in targets:
            vk = sk.version(v)
            keys += [vk.public, vk.hidden, vk.users, vk.chunks, vk.corrections, vk.parts]
        for v in targets:  # (one hash holds every chunk of a board of a kind)
            vk = sk.version(v)
            keys += [vk.bits if hashed else vk.applied(chunk) for chunk in chunks]
        if not hint:
            command, channel = "", ""
        elif self.cluster:  # the season's shard channel: in this script's slot
            command, channel = "SPUBLISH", self.keys.shard_hint_channel(season)
        else:
            command, channel = "PUBLISH", self.keys.hint_channel()
        on_current = bool(targets) and targets[0] == versions[0]
        # Rank events: the whole board's weeks, and the weeks of a kind that notifies.
        ranked = whole_week(season) or any(d.notify for d in deltas)
        args: list[Any] = [*ApplyHead(
            expected_current=versions[0], expected_building=versions[1], policy=self.policy,
            on_current=("1" if ranked else "h") if on_current else "0",
            targets=len(targets), chunks=len(chunks), hint_command=command,
            hint_channel=channel, season=season, metric=start.metric,
            bits="h" if hashed else "s"), *chunks, *per_event]
        return keys, args

    async def apply(self, deltas: list[Delta], only_version: str | None = None
                    ) -> list[ApplyResult]:
        """Apply deltas; per delta 'applied', 'duplicate' or 'missing'.

        One script call per season and batch of at most APPLY_BATCH deltas,
        in order (pipelined on one node; on a cluster each season's calls run
        in order, seasons side by side). With `only_version`, apply to that
        building version alone (the rebuild's own stream); otherwise to the
        current and building versions, and then publish refresh hints for
        the seasons that changed.
        """
        results: list[ApplyResult | None] = [None] * len(deltas)
        hints: list[Hint] = []
        pending = _season_batches(deltas)
        for _ in range(MAX_STALE_RETRIES):
            if not pending:
                break
            calls = [self._apply_batch_call(deltas, batch, only_version) for batch in pending]
            replies = await self._run_in_order("apply", calls)
            pending = [batch for batch, reply in zip(pending, replies, strict=True)
                       if self._settle(deltas, batch, reply, only_version, results, hints)]
        if pending:
            raise RuntimeError("board versions kept changing during apply")
        if only_version is None:
            # The scripts published these hints (built there, the one place a
            # hint of applied completions is); this process's caches hear at once.
            for hint in hints:
                self.signals.hint_caches(hint)
        return [r or "missing" for r in results]

    def _apply_batch_call(self, deltas: list[Delta], batch: list[int], only_version: str | None
                          ) -> tuple[str, tuple[list[str], list[Any]]]:
        """The apply.lua call of one batch (one season), on the versions this
        process believes current and building, or on `only_version` alone."""
        season = deltas[batch[0]].season
        versions = self.versions(season)
        targets = [v for v in versions if v]
        if only_version is not None:
            # A builder feeds only its own version, and only while that
            # version still holds the building marker.
            versions, targets = (versions[0], only_version), [only_version]
        return season, self._apply_call(season, [deltas[i] for i in batch], versions, targets,
                                        hint=only_version is None)

    def _settle(self, deltas: list[Delta], batch: list[int], reply: Any,
                only_version: str | None, results: list[ApplyResult | None],
                hints: list[Hint]) -> bool:
        """Record one batch's reply in `results` (and the hint it published in
        `hints`); True when the batch must be sent again (STALE versions)."""
        status = reply[0]
        if status == "STALE":
            self._versions[deltas[batch[0]].season] = (reply[1], reply[2])
            if only_version is None or reply[2] == only_version:
                return True
            status = "MISSING"  # the version being built is gone
        if status == "MISSING":
            for i in batch:
                results[i] = "missing"
            return False
        if reply[1] and (hint := hint_of(orjson.loads(reply[1]))) is not None:
            hints.append(hint)
        for k, i in enumerate(batch):
            applied = int(reply[2 + 2 * k])
            results[i] = ("retry" if applied == -2 else "deferred" if applied < 0
                          else "applied" if applied else "duplicate")
        return False

    async def mark_ties(self, season: str, user_ids: list[int]) -> list[str]:
        """Mark learners a void is about to be applied for, before their
        fallback tie time is read (apply.lua, "Ties"): their tokens, in order."""
        reply = await self.scripts["mark_ties"](
            keys=[self.season_keys(season).ties, self.season_keys(season).erased],
            args=flat(MarkTiesArgs(ttl_ms=TIES_TTL_MS), [Learner(pad_uid(u)) for u in user_ids]))
        return [str(t) for t in reply]

    async def set_profile(self, season: str, user_id: int, profile: Profile) -> bool:
        """Project a profile onto one season; False when the season has no board."""
        return await self._write(
            "set_profile", season, lambda vk: [vk.public, vk.hidden, vk.users],
            [self.season_keys(season).erased],
            lambda current, building: SetProfileArgs(
                expected_current=current, expected_building=building, uid=pad_uid(user_id),
                profile_version=profile.version, visibility=profile.visibility,
                name=profile.display_name, policy=self.policy))

    async def erase(self, season: str, user_id: int, tombstone_until: datetime) -> bool:
        """Remove an erased learner from a season's board; False when it has no
        board (the tombstone is kept all the same, until `tombstone_until`)."""
        return await self._write(
            "erase", season, lambda vk: [vk.public, vk.hidden, vk.users],
            [self.season_keys(season).erased, self.season_keys(season).ties,
             self.season_keys(season).notify_stream],
            lambda current, building: EraseArgs(
                expected_current=current, expected_building=building, uid=pad_uid(user_id),
                policy=self.policy, erased_until_ms=int(tombstone_until.timestamp() * 1000)))
