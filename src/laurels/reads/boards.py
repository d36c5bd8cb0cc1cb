"""Where a board is read: the public top and a learner's neighbourhood.

Privacy is enforced here, at the boundary: anonymous learners lose name and
id, hidden ones are never on the public board (the Redis projection keeps
them in a separate set). A season whose board is missing while PostgreSQL has
its completions is rebuilt, and meanwhile answers `503 rebuilding`, never a
partial board.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from laurels.board import Around, BoardMissing, Entry, beside, default_name
from laurels.board.roles import Reader
from laurels.core import failpoints, shapes
from laurels.core.errors import DomainError
from laurels.core.ranking import UNIX_EPOCH, Position, TiePolicy
from laurels.core.seasons import GLOBAL, Season, configured_season, kind_of, shifted
from laurels.core.shapes import tie_policy, visibility
from laurels.db import Database
from laurels.lifecycle.board_kinds import BoardKinds
from laurels.lifecycle.closing import Lifecycle
from laurels.lifecycle.history import history_of
from laurels.lifecycle.windows import window_bounds
from laurels.process.settings import Settings
from laurels.projection.heal import REQUEST_HEAL_WAIT_SECONDS, Healer
from laurels.reads.privacy import Privacy

T = TypeVar("T")
log = logging.getLogger("laurels.reads")
RETRY_AFTER_SECONDS = 2
HIDDEN = frozenset({"hidden", "erased"})


def iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def shown(entries: list[Entry], privacy: Privacy) -> list[Entry]:
    """The boundary's own privacy check: each entry takes the stricter of the
    store's visibility and PostgreSQL's (as this process last saw it); hidden
    and erased learners are left out, whatever a store says."""
    out = []
    for e in entries:
        vis = privacy.visibility(e.user_id, e.visibility)
        if vis != e.visibility:
            log.info("learner %s is %s in PostgreSQL, %s in a store: shown as %s",
                     e.user_id, vis, e.visibility, vis)
            e = Entry(e.rank, e.user_id, e.display_name, vis, e.score)
        if vis not in HIDDEN:
            out.append(e)
    return out


def public_entry(e: Entry) -> shapes.Entry:
    if e.visibility == "anonymous":
        return {"rank": e.rank, "user_id": None, "display_name": "Anonymous", "score": e.score}
    return {"rank": e.rank, "user_id": e.user_id, "display_name": e.display_name,
            "score": e.score}


class Reads:
    def __init__(self, settings: Settings, db: Database, board: Reader,  # noqa: PLR0913
                 healer: Healer, lifecycle: Lifecycle, privacy: Privacy,
                 kinds: BoardKinds | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.settings = settings
        self.clock = clock  # a season's status, a window's bounds
        self.kinds = kinds
        self.db = db
        self.board = board
        self.healer = healer
        self.lifecycle = lifecycle
        self.privacy = privacy

    def season_info(self, season: Season, now: datetime | None = None) -> shapes.SeasonInfo:
        now = now or self.clock()
        closed = season.is_closed(now, self.settings.late_grace_seconds,
                                  self.settings.close_seasons)
        bounded = season.bounded  # `all` has no boundaries (null)
        starts_at, ends_at = (season.starts_at, season.ends_at)
        if season.window:  # what it holds by the clock (lifecycle/windows.py)
            starts_at, ends_at = window_bounds(season, now)
        return {"season": season.label, "board": season.board, "metric": season.metric,
                "period": season.period,
                "starts_at": iso(starts_at) if bounded or season.window else None,
                "ends_at": iso(ends_at) if bounded or season.window else None,
                "status": "closed" if closed else "open",
                "tie_policy": self.settings.tie_policy}

    def status_changes(self, season: Season, now: datetime | None = None
                       ) -> datetime | None:
        """When the season's `status` (as `season_info` tells it) changes:
        when it closes, or None once closed or when it never closes."""
        if season.window:  # its bounds move at the next local midnight
            return window_bounds(season, now or self.clock())[1]
        if not (self.settings.close_seasons and season.bounded):
            return None
        closes = season.closes_at(self.settings.late_grace_seconds)
        return closes if (now or datetime.now(UTC)) < closes else None

    async def with_board(self, season: Season, read: Callable[[], Awaitable[T]],
                          archived: Callable[[str], Awaitable[T]],
                          empty: Callable[[], T],
                          blank: Callable[[T], bool] = lambda _: False) -> T:
        """Read Redis; when the board is missing, the archive of a finalized
        season, or an empty board, or (while it is rebuilt) 503. A `blank`
        answer (nobody shown: a board whose learners are all hidden) costs
        what a missing board's does, so that its time does not tell it from
        a board nobody used (issue 64, point 9)."""
        try:
            found = await read()
        except BoardMissing:
            pass
        else:
            if blank(found):
                await self._still_defined(season)
                await self.lifecycle.finalized([season])
                await self.db.fetch_one("season_has_completions", season=season)
            return found
        await self._still_defined(season)
        policies = await self.lifecycle.finalized([season])
        if season in policies:
            return await archived(policies[season])
        row = await self.db.fetch_one("season_has_completions", season=season)
        if not row or not row["present"]:
            return empty()
        await self.healer.heal({season}, REQUEST_HEAL_WAIT_SECONDS)
        try:
            return await read()
        except BoardMissing:
            raise DomainError("rebuilding", f"the board of {season.shown} is being rebuilt; "
                          "retry shortly", retry_after=RETRY_AFTER_SECONDS) from None

    async def _still_defined(self, season: Season) -> None:
        """A board of a kind deleted (or defined otherwise) since this process
        read the kinds is gone here too, as in the process that deleted it:
        404, not a heal's 503 (one small statement: board_kinds.live)."""
        if season.board != GLOBAL and self.kinds is not None \
                and not await self.kinds.defined(season):
            raise DomainError("not_found", f"no board kind {season.kind} "
                              "is defined")

    async def learner_boards(self, user_id: int, week: str) -> shapes.LearnerBoards:
        """Every board on which a learner has a completion that counts in
        `week` (`current`, or a week's name), each board's week in its own
        zone: the whole board first, then by kind and board. The learner's
        own standing, as on their neighbourhood (hidden: theirs too)."""
        whole = configured_season(week, ("week",), zone=self.settings.time_zone)
        seasons = [(whole, GLOBAL, "All learners")]
        kinds = await self.kinds.fresh() if self.kinds is not None else {}
        if kinds:  # a week in any zone lies within 26 hours of another zone's
            rows = await self.db.fetch("learner_tags", user_id=user_id,
                                       starts=shifted(whole.starts_at, -timedelta(days=2)),
                                       ends=shifted(whole.ends_at, timedelta(days=2)))
            for tag in sorted(r["tag"] for r in rows):
                kind = kinds.get(kind_of(tag))
                if kind is not None:
                    local = configured_season(week, ("week",), zone=kind.time_zone)
                    seasons.append((local.on(tag, kind.metric), kind.kind, kind.title))
        seasons.sort(key=lambda s: (s[0].board != GLOBAL, s[1], s[0].board))
        boards: list[shapes.LearnerBoard] = []
        for season, kind_name, title in seasons:
            try:
                me = (await self.around(season, user_id, 0))["user"]
            except DomainError as exc:
                if exc.code == "not_ranked":
                    continue
                raise
            total = (await self.top(season, 1))["total"]
            boards.append({"board": season.board, "kind": kind_name, "title": title,
                           "metric": season.metric, "season": season.label,
                           "rank": me["rank"], "score": me["score"], "total": total})
        return {"boards": boards}

    async def top(self, season: Season, limit: int, after: Position | None = None
                  ) -> shapes.BoardPage:
        """The public board from the top, or after a position; `next` is the
        position of the page's last entry when more follow (the API seals it
        into a cursor), else None."""
        policy: TiePolicy = self.settings.tie_policy

        async def redis() -> tuple[int, list[Entry], Position | None]:
            top = await self.board.top(season, limit, after)
            return top.total, top.entries, top.next

        async def archive(archived_policy: str) -> tuple[int, list[Entry], Position | None]:
            nonlocal policy
            policy = tie_policy(archived_policy)
            return await self._archived_top(season, limit, after, archived_policy)

        total, entries, last = await self.with_board(season, redis, archive,
                                                     lambda: (0, [], None),
                                                     blank=lambda found: not found[1])
        return {**self.season_info(season), "tie_policy": policy, "total": total,
                "entries": [public_entry(e) for e in shown(entries, self.privacy)],
                "next": last}

    async def _archived_top(self, season: Season, limit: int, after: Position | None,
                            policy: str) -> tuple[int, list[Entry], Position | None]:
        where: dict[str, Any] = {"after_score": None, "after_at": None, "after_user": None}
        if after is not None:
            where = {"after_score": -after[0],
                     "after_at": season.starts_at + timedelta(microseconds=after[1]),
                     "after_user": after[2]}
        rows = await self.db.fetch("archive_top", season=season, limit=limit + 1,
                                   tie_policy=policy, **where)
        total = await self.db.fetch_one("archive_total", season=season)
        more, rows = len(rows) > limit, rows[:limit]
        last: Position | None = None
        if more and rows:
            r = rows[-1]
            last = (-int(r["score"]), season.offset_us(r["last_completed_at"])
                    if policy == "first" else 0, int(r["user_id"]))
        return (int(total["total"]) if total else 0, [_archived_entry(r) for r in rows], last)

    async def around(self, season: Season, user_id: int, radius: int) -> shapes.Around:
        around = await self.with_board(
            season, lambda: self.board.around(season, user_id, radius),
            lambda policy: self._archived_around(season, user_id, radius, policy),
            lambda: None)
        if around is None:
            raise DomainError("not_ranked",
                              f"learner {user_id} has no completions in {season.shown}")
        me = around.me
        neighbors: list[shapes.Neighbor] = []
        for i, e in enumerate(around.neighbors):
            if i == around.index:
                neighbors.append({"rank": e.rank, "user_id": e.user_id,
                                  "display_name": e.display_name, "score": e.score,
                                  "self": True})
            elif kept := shown([e], self.privacy):
                neighbors.append({**public_entry(kept[0]), "self": False})
        return {"season": season.label, "board": season.board, "metric": season.metric,
                "user": {"rank": me.rank, "user_id": me.user_id,
                         "display_name": me.display_name, "score": me.score,
                         "visibility": visibility(me.visibility)},
                "neighbors": neighbors}

    async def _archived_around(self, season: Season, user_id: int, radius: int,
                               policy: str) -> Around | None:
        # One snapshot: a re-rank committing between the learner's place and
        # the slice around it would move both.
        async with self.db.snapshot() as tx:
            row = await self.db.fetch_one("archive_user", tx, season=season,
                                          user_id=user_id)
            if row is None:
                return None
            me = _archived_entry(row)
            if row["pos"] is not None:
                index = int(row["pos"])
                first, last = max(0, index - radius), index + radius
            else:  # hidden: where they would stand, pushing nobody down
                place = await self.db.fetch_one(
                    "archive_would_be", tx, season=season.name, score=row["score"],
                    last=row["last_completed_at"], user_id=user_id, tie_policy=policy)
                index = int(place["before"]) if place else 0
                better = int(place["better"]) if place else 0
                rank = better + 1 if policy == "shared" else index + 1
                me = Entry(rank, me.user_id, me.display_name, me.visibility, me.score)
                first, last = max(0, index - radius), index + radius - 1
            await failpoints.pause("archive_around_placed")
            rows = await self.db.fetch("archive_slice", tx, season=season,
                                       first=first, last=last)
        neighbors = [_archived_entry(r) for r in rows]
        pos = index - first
        if row["pos"] is None:  # hidden: the others ranked as if they were on the board
            neighbors.insert(pos, me)
            neighbors = beside(neighbors, pos, policy)  # type: ignore[arg-type]
        else:
            neighbors[pos] = me
        return Around(me, pos, neighbors)

    async def completions(self, season: Season, user_id: int, limit: int,
                          after: Position | None) -> tuple[shapes.Completions, Position | None]:
        """"Why is my score X": a learner's completions in a season, newest first
        (`limit` after the position of the previous page's last one), each counted
        or voided; the counted points add up to `score`, their score on the board.
        Returns the body and the position of the page's last entry when more follow.
        A season some of whose completions were retired answers `"retired":
        true` with its archived score and no completions."""
        starts = season.starts_at if season.bounded else EPOCH_OF_BOARDS
        since: dict[str, Any] = {}
        if season.window:  # what it holds by the clock (lifecycle/windows.py)
            starts = since["window_starts"] = window_bounds(season, self.clock())[0]
        retired = await self.db.fetch_one("retired_between", starts=starts, ends=season.ends_at)
        if retired and retired["retired"]:
            return await self._retired(season, user_id), None
        after_at = UNIX_EPOCH + timedelta(microseconds=after[0]) if after else None
        rows = await self.db.fetch("user_completions", season=season, user_id=user_id,
                                   limit=limit + 1, after_at=after_at,
                                   after_seq=after[1] if after else None, **since)
        total = await self.db.fetch_one("user_season_score", season=season,
                                        user_id=user_id, **since)
        page = rows[:limit]
        body: shapes.Completions = {"season": season.label, "board": season.board,
                                    "metric": season.metric, "user_id": user_id,
                "score": int(total["score"]) if total else 0,
                "completions": [{"completion_id": r["completion_id"], "points": r["points"],
                                 "completed_at": iso(r["completed_at"]),
                                 "status": "counted" if r["counted"] else "voided"}
                                for r in page],
                "next": None}
        last = page[-1] if len(rows) > limit else None
        return body, (micros(last["completed_at"]), int(last["seq"]), 0) if last else None

    async def _retired(self, season: Season, user_id: int) -> shapes.Completions:
        score = await _retired_score(self.db, season, user_id, self.settings.periods)
        return {"season": season.label, "board": season.board, "metric": season.metric,
                "user_id": user_id, "score": score, "retired": True,
                "completions": [], "next": None}


async def _retired_score(db: Database, season: Season, user_id: int, periods: Any) -> int:
    """A learner's score on a season whose completions were (partly) retired:
    its archive's (a closed season), or its history's (all time)."""
    if season.bounded:
        row = await db.fetch_one("archived_score", season=season, user_id=user_id)
        return int(row["score"]) if row else 0
    history = await history_of(db, periods, season)
    if history is None:  # pragma: no cover - retired months imply closed weeks
        return 0
    rows = await db.fetch("long_sums_for", season=season, user_ids=[user_id],
                          parts=history.parts, cutoff=history.cutoff)
    return int(rows[0]["score"]) if rows else 0


def _archived_entry(row: Any) -> Entry:
    uid = int(row["user_id"])
    rank = int(row["rank"]) if row["rank"] is not None else 0
    return Entry(rank, uid, row["display_name"] or default_name(uid), row["visibility"],
                 int(row["score"]))


EPOCH_OF_BOARDS = datetime(1, 1, 1, tzinfo=UTC)  # `all` starts with the first completion


def micros(at: datetime) -> int:
    delta = at - UNIX_EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
