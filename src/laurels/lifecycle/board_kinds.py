"""Board kinds: what an operator defines so that a completion's tags put it
on boards of their own (CONTRACT.md, "Boards of a course, a track or a
skill"; docs/design.md, "Boards of a kind").

A kind (`course`) has a title, a metric, its periods (`week` always) and a
time zone; each of its tags (`course:python-101`) names a board. A kind is
immutable but for its title: a board is a pure function of the kept
completions and of its kind's metric, periods and zone, so a change of any
of those is a different board, refused with `409 kind_conflict` (delete the
kind and define it again). Definitions and deletions take the kinds' lock
one at a time (docs/concurrency.md, `kinds`), under which the count (at
most `KINDS_MAX`) and a kind's immutability are read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from laurels.board.roles import Dropper
from laurels.core.errors import DomainError, StoreUnavailable
from laurels.core.seasons import Season, kind_of, season_named
from laurels.db import Database, Jsonb, Row, Tx
from laurels.lifecycle.kind_rules import (
    KINDS_MAX,
    BoardKind,
    check_kind,
    kind_pattern,
    parse_definition,
)

DROPS_AT_ONCE = 1_000  # deleted boards whose keys go in one batch (drop_pending)

log = logging.getLogger("laurels.board_kinds")
FRESH_SECONDS = 1.0  # how stale the reads' copy of the kinds may be


class BoardKinds:
    def __init__(self, db: Database, default_zone: str, board: Dropper | None = None) -> None:
        self.db = db
        self.board = board
        self.default_zone = default_zone  # LAURELS_TIME_ZONE
        self._generation: tuple[int, int] = (-1, -1)
        self._live: dict[str, BoardKind] = {}
        self._read_at = float("-inf")

    async def live(self, tx: Tx | None = None) -> Mapping[str, BoardKind]:
        """The kinds as PostgreSQL has them now, by name (read again only
        when they changed: one small statement otherwise). A completion
        committed before this call counts on the boards of every kind
        returned that was defined before its commit; one defined later
        builds its boards from a snapshot that holds it (docs/design.md,
        "Boards of a kind")."""
        row = await self.db.fetch_one("board_kinds_generation", tx)
        now = (int(row["n"]), int(row["generation"])) if row else (0, 0)
        if now != self._generation:
            self._live = {r["kind"]: BoardKind.from_row(r)
                          for r in await self.db.fetch("board_kinds", tx)}
            self._generation = now
        self._read_at = time.monotonic()
        return self._live

    async def defined(self, season: Season) -> bool:
        """Whether a season is of the whole board or of a board of a kind
        defined now (as PostgreSQL has the kinds)."""
        if season.kind is None:
            return True
        kind = (await self.live()).get(season.kind)
        return kind is not None and kind.defines(season)

    async def fresh(self, max_age: float = FRESH_SECONDS) -> Mapping[str, BoardKind]:
        """The kinds as read at most `max_age` seconds ago (the reads' view:
        a kind defined in another process is found at once, since a name
        this copy lacks is looked for again; a deletion is seen within
        `max_age`)."""
        if time.monotonic() - self._read_at > max_age:
            await self.live()
        return self._live

    async def find(self, kind: str) -> BoardKind | None:
        """A kind by name, as `fresh`, looked for again when this copy
        lacks it."""
        found = (await self.fresh()).get(kind)
        if found is None:
            found = (await self.live()).get(kind)
        return found

    async def all(self) -> list[BoardKind]:
        return [BoardKind.from_row(r) for r in await self.db.fetch("board_kinds")]

    async def get(self, kind: str) -> BoardKind | None:
        row = await self.db.fetch_one("board_kind", kind=check_kind(kind))
        return BoardKind.from_row(row) if row else None

    async def define(self, kind: str, body: dict[str, Any]) -> tuple[BoardKind, bool]:
        """The kind as defined, and whether this call created it. Defining
        it again the same way, or with only another title, is not a change
        of its boards; anything else is `kind_conflict`. A field left out
        keeps what the kind has."""
        check_kind(kind)
        # An earlier deletion's keys Redis could not take go before the kind
        # is defined again: a board of it found in Redis is served as built.
        await self.drop_pending(kind)
        async with self.db.transaction() as tx:
            await self.db.fetch_one("lock_board_kinds", tx)
            row = await self.db.fetch_one("board_kind", tx, kind=kind)
            old = BoardKind.from_row(row) if row else None
            new = parse_definition(kind, body, old, self.default_zone, datetime.now(UTC))
            if old is None:
                if await self.db.fetch("board_drops", tx, pattern=kind_pattern(kind), limit=1):
                    # Deleted again since the drop above: its keys go first.
                    raise StoreUnavailable("redis", RuntimeError(
                        "an earlier deletion of this kind is still dropping its boards"))
                await self._drop_held(kind)  # a Redis restored from before a deletion
                created = await self._create(tx, new)
                await self._audit(tx, "kind_define", created)
                return created, True
            if not old.same_board_as(new):
                changed = [f for f in ("metric", "periods", "time_zone", "notify")
                           if getattr(old, f) != getattr(new, f)]
                raise DomainError("kind_conflict",
                                  f"board kind {kind} exists with another {', '.join(changed)}: "
                                  "only its title changes (delete it and define it again)")
            if new.title == old.title:
                return old, False
            rows = await self.db.fetch("retitle_board_kind", tx, kind=kind, title=new.title)
            retitled = BoardKind.from_row(rows[0])
            await self._audit(tx, "kind_define", retitled)
            return retitled, False

    async def _audit(self, tx: Tx, action: str, kind: BoardKind, boards: int = 0) -> None:
        """A definition, retitle or deletion in the audit log (the kind as
        defined; a deletion, how many of its boards' seasons went)."""
        details = {"title": kind.title, "metric": kind.metric, "periods": list(kind.periods),
                   "time_zone": kind.time_zone, "notify": kind.notify}
        await self.db.run("insert_audit", tx, action=action, target=kind.kind, reason=None,
                          details=Jsonb({**details, "boards": boards} if boards else details))

    async def _create(self, tx: Tx, new: BoardKind) -> BoardKind:
        known = await self.db.fetch_one("time_zone_known", tx, zone=new.time_zone)
        if not (known and known["known"]):
            raise DomainError("validation_error",
                              f"time_zone: {new.time_zone} is not in PostgreSQL's time zone "
                              "data (pg_timezone_names)")
        if len(await self.db.fetch("board_kinds", tx)) >= KINDS_MAX:
            raise DomainError("validation_error",
                              f"at most {KINDS_MAX} board kinds: delete one first")
        rows = await self.db.fetch(
            "insert_board_kind", tx, kind=new.kind, title=new.title, metric=new.metric,
            periods=list(new.periods), time_zone=new.time_zone, notify=new.notify)
        return BoardKind.from_row(rows[0])

    async def delete(self, kind: str) -> bool:
        """Delete a kind (False when there was none): its boards' seasons,
        archives and keys go with it; the tags stay on the completions, so
        defining it again brings its boards back, built afresh. The keys go
        after the transaction; those Redis cannot take then wait in
        board_drops for `drop_pending`."""
        check_kind(kind)
        async with self.db.transaction() as tx:
            await self.db.fetch_one("lock_board_kinds", tx)
            row = await self.db.fetch_one("board_kind", tx, kind=kind)
            if row is None or not await self.db.run("delete_board_kind", tx, kind=kind):
                return False
            rows = await self.db.fetch("delete_kind_seasons", tx, pattern=kind_pattern(kind))
            await self._audit(tx, "kind_delete", BoardKind.from_row(row), len(rows))
        await self.live()
        try:
            await self._drop([season_named(r["season"], "UTC") for r in rows])
        except StoreUnavailable as exc:
            log.warning("board kind %s deleted; %d boards' keys wait for Redis (%s)", kind,
                        len(rows), exc)
        return True

    async def boards(self, kind: BoardKind, season: Season, search: str | None,
                     after: str, limit: int) -> list[Row]:
        """The boards of `kind` with a counted completion in `season` (one of
        the kind's, in its zone), by name after `after`, whose name holds
        `search`: {board, learners}."""
        return await self.db.fetch("kind_boards", pattern=kind_pattern(kind.kind),
                                   starts=season.starts_at, ends=season.ends_at, after=after,
                                   search=search, limit=limit)

    async def drop_pending(self, kind: str | None = None) -> int:
        """Drop the keys of deleted kinds' boards that Redis could not take
        at their deletion (of one kind, or of all); how many boards. Raises
        StoreUnavailable while Redis does not answer."""
        if self.board is None:
            return 0
        pattern = kind_pattern(kind) if kind is not None else "%"
        done = 0
        while rows := await self.db.fetch("board_drops", pattern=pattern, limit=DROPS_AT_ONCE):
            await self._drop([season_named(r["season"], "UTC") for r in rows])
            done += len(rows)
        return done

    async def drop_undefined(self) -> int:
        """Drop every board Redis holds of a kind not defined now, or
        defined otherwise, found by a scan (a Redis restored from before a
        deletion brings back boards no row names); how many. Under the
        kinds' lock shared: none is defined or deleted meanwhile (projection/epoch.py)."""
        async with self.db.transaction() as tx:
            await self.db.fetch("share_board_kinds", tx)
            kinds = await self.live(tx)
            return await self._drop_held(None, lambda b: (k := kinds.get(
                kind_of(b.board))) is None or not k.defines(b))

    async def _drop_held(self, kind: str | None,
                         which: Callable[[Season], bool] = lambda _: True) -> int:
        """The boards Redis holds of a kind (of any: None) that `which`
        says, found by a scan of their keys, dropped; how many."""
        dropped = 0
        for season, keys in (await self.board.held_boards(kind) if self.board else {}).items():
            if self.board is None or not which(season):
                continue
            await self.board.unlink_keys(keys)
            await self.board.publish_hint({"season": season.name})
            dropped += 1
        log.log(logging.WARNING if dropped else logging.DEBUG,
                "%d boards of kinds not defined so found in Redis: dropped", dropped)
        return dropped

    async def _drop(self, seasons: list[Season]) -> None:
        """Every key of these seasons at once (a built board has a row), a
        hint to their readers, then their board_drops rows."""
        if self.board is None or not seasons:
            return
        for season in seasons:
            await self.board.drop_season(season)
            await self.board.publish_hint({"season": season.name})
        await self.db.run("forget_board_drops", seasons=seasons)

