"""A learner's durable notifications as they leave the service: listed,
marked read, pushed on their live stream, and sent as webhooks.

A notification that names another learner (`overtaken`: who passed you)
stores only their id; the name is resolved when the notification is read or
sent, from the learner's profile as it is then (docs/contract.md,
notifications): their id and name while they are public, `null` and
"Anonymous" once they are anonymous, hidden, suspended or erased. So a
learner who turns private stops being named at once, in every notification
written about them before, and none can be matched to an Anonymous entry
of the board.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from laurels import shapes
from laurels.board import default_name
from laurels.db import Database, Row, Tx
from laurels.kinds import NAMING
from laurels.seasons import is_board_season, label_of, parse_season

if TYPE_CHECKING:
    from laurels.board_kinds import BoardKinds

ANONYMOUS_NAME = "Anonymous"
LIST_LIMIT = 100  # the newest notifications a learner's list shows


def named_ids(data: Iterable[dict[str, Any]]) -> list[int]:
    """The learners some notifications' data name (`by_user_id`)."""
    return sorted({d["by_user_id"] for d in data if isinstance(d.get("by_user_id"), int)})


def with_names(kind: str, data: dict[str, Any], names: dict[int, str]) -> dict[str, Any]:
    """A notification's data as it may be shown: for a kind that names
    another learner, `by_user_id` and `by_display_name` from `names` (the
    public learners among those named: id -> name), else null and
    "Anonymous" (an erasure removes the id altogether)."""
    if kind not in NAMING:
        return data
    uid = data.get("by_user_id")
    shown = dict(data)
    if isinstance(uid, int) and uid in names:
        shown["by_user_id"], shown["by_display_name"] = uid, names[uid]
    else:
        shown["by_user_id"], shown["by_display_name"] = None, ANONYMOUS_NAME
    return shown


def on_board(data: dict[str, Any], season: str, titles: Mapping[str, str]
             ) -> dict[str, Any]:
    """A notification of a board of a kind as it may be shown: its data also
    names the board as the page does, by its kind's title and value
    ("Skill · python"; the kind's name, capitalized, once it is gone), and
    its metric, for wording that fits it (points, completions, a best)."""
    board = data.get("board")
    if not isinstance(board, str) or not is_board_season(season):
        return data
    kind, _, value = board.partition(":")
    return {**data, "board_title": f"{titles.get(kind, kind.capitalize())} · {value}",
            "metric": parse_season(season, zone="UTC").metric}


def utc(at: datetime) -> str:
    """An instant as the API writes it (the session's TimeZone made UTC)."""
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


class Notifications:
    def __init__(self, db: Database, kinds: BoardKinds | None = None) -> None:
        self.db = db
        self.kinds = kinds

    holds = "none"  # an erasure (lifecycle.Forgets): nothing before their seasons

    async def hold(self, tx: Tx, user_id: int) -> None:
        return None

    async def forget(self, tx: Tx, user_id: int) -> list[str]:
        """An erasure: the learner's notifications go, and others' stop naming
        them (their id scrubbed from every `by_user_id`)."""
        await self.db.run("delete_user_notifications", tx, user_id=user_id)
        await self.db.run("scrub_notifications_about", tx, user_id=str(user_id))
        return []

    async def titles(self) -> Mapping[str, str]:
        """Each board kind's title, by name (as the reads see the kinds)."""
        if self.kinds is None:
            return {}
        return {name: kind.title for name, kind in (await self.kinds.fresh()).items()}

    async def public_names(self, user_ids: list[int], tx: Tx | None = None
                           ) -> dict[int, str]:
        """id -> name of the learners among `user_ids` who may be named now:
        public, not suspended (a suspended learner is hidden), not erased. A
        learner without a profile is public under their default name."""
        if not user_ids:
            return {}
        rows = await self.db.fetch("naming_states", tx, user_ids=user_ids)
        known = {r["user_id"]: r for r in rows}
        out = {}
        for uid in user_ids:
            row = known.get(uid)
            if row is None:
                out[uid] = default_name(uid)
            elif row["visibility"] == "public" and not row["erased"]:
                out[uid] = row["display_name"] or default_name(uid)
        return out

    async def bodies(self, rows: list[Row], tx: Tx | None = None
                     ) -> list[shapes.Notification]:
        """Notification rows as the API shows them, names resolved now."""
        names = await self.public_names(named_ids(r["data"] for r in rows), tx)
        titles = await self.titles()
        return [{"id": r["id"], "kind": r["kind"], "season": label_of(r["season"]),
                 "data": on_board(with_names(r["kind"], r["data"], names), r["season"],
                                  titles),
                 "created_at": utc(r["created_at"]), "updated_at": utc(r["updated_at"]),
                 "read": r["read"]} for r in rows]

    async def newest(self, user_id: int) -> shapes.Notifications:
        rows = await self.db.fetch("list_notifications", user_id=user_id, limit=LIST_LIMIT)
        return {"notifications": await self.bodies(rows)}

    async def mark_read(self, user_id: int, ids: list[int]) -> shapes.Read:
        rows = await self.db.fetch("mark_read", user_id=user_id, ids=ids)
        return {"read": sorted(r["id"] for r in rows)}

    async def by_id(self, user_id: int, ids: list[int], finals: list[tuple[str, str]]
                    ) -> list[shapes.Notification]:
        """Some of a learner's notifications (their live stream's news): by
        id, and those written for everyone (kind, season): `season_final`,
        `league_result`."""
        rows = await self.db.fetch("get_notifications", user_id=user_id, ids=ids) if ids else []
        for kind, season in finals:
            rows += await self.db.fetch("season_final_of", user_id=user_id, kind=kind,
                                        season=season)
        return await self.bodies(rows)
