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

What the service writes for notifications and webhooks is declared here,
one type per payload (the registries DATA and WEBHOOK_DATA), and each
writer builds its payload as that type; tests/integration/test_payloads.py
drives every writer and holds what it wrote to its type, field by field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from laurels.board import default_name
from laurels.core import shapes
from laurels.core.registry import (
    NAMING,
    PAYLOADS,
    ChallengeDecided,
    CompletionCorrected,
    Metric,
    NotificationKind,
    SeasonFinalized,
    UserErased,
    WebhookType,
)
from laurels.core.seasons import is_board_season, label_of, parse_season
from laurels.db import Database, Row, Tx

if TYPE_CHECKING:
    from laurels.lifecycle.board_kinds import BoardKinds

ANONYMOUS_NAME = "Anonymous"
LIST_LIMIT = 100  # the newest notifications a learner's list shows

# -- the payloads: notifications' data, webhooks' events ------------------------------


class FromBoard(TypedDict, total=False):
    """What the data of a notification from a board other than `global`
    carries (CONTRACT.md, notifications): that board (`course:sql`)."""

    board: str


class OvertakenShown(FromBoard):
    """`overtaken` as shown (`with_names`): the mover as they are now."""

    season: str
    by_user_id: int | None  # null: anonymous, hidden, suspended or erased now
    by_display_name: str  # "Anonymous" then
    challenge_id: NotRequired[str]  # from a challenge


# Each notification kind's data as written (the registry, kinds.PAYLOADS),
# and as shown (`shown`; BoardShown besides on a board of a kind).
DATA: dict[NotificationKind, type] = PAYLOADS
SHOWN: dict[NotificationKind, type] = {**DATA, "overtaken": OvertakenShown}


class BoardShown(TypedDict):
    """What a notification from a board of a kind shows beside its data
    (beyond the contract: the page names the board by its kind's title and
    value, and words it by the board's metric): `_on_board`."""

    board_title: str
    metric: Metric


class NotificationCreated(shapes.Notification):
    """`notification.created`: the notification as the API shows it, and whose."""

    user_id: int


# Each webhook event's `data`, by its type (kinds.WEBHOOK_TYPES).
WEBHOOK_DATA: dict[WebhookType, type] = {
    "notification.created": NotificationCreated, "season.finalized": SeasonFinalized,
    "completion.voided": CompletionCorrected, "completion.restored": CompletionCorrected,
    "user.erased": UserErased, "challenge.decided": ChallengeDecided}


class WebhookEvent(TypedDict):
    """What is POSTed: `data` is its type's WEBHOOK_DATA."""

    id: str
    type: WebhookType
    created_at: str
    data: Mapping[str, object]


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
    named = dict(data)
    if isinstance(uid, int) and uid in names:
        named["by_user_id"], named["by_display_name"] = uid, names[uid]
    else:
        named["by_user_id"], named["by_display_name"] = None, ANONYMOUS_NAME
    return named


def _on_board(data: dict[str, Any], season: str, titles: Mapping[str, str]
             ) -> dict[str, Any]:
    """A notification of a board of a kind as it may be shown: its data also
    names the board as the page does, by its kind's title and value
    ("Skill · python"; the kind's name, capitalized, once it is gone), and
    its metric, for wording that fits it (points, completions, a best)."""
    board = data.get("board")
    if not isinstance(board, str):
        return data
    if season.startswith("challenge:"):  # a challenge's: its metric in its data
        metric = data.get("metric", "points")
    elif is_board_season(season):
        metric = parse_season(season, zone="UTC").metric
    else:
        return data
    kind, _, value = board.partition(":")
    extra: BoardShown = {"board_title": f"{titles.get(kind, kind.capitalize())} · {value}",
                         "metric": metric}
    return {**data, **extra}


def utc(at: datetime) -> str:
    """An instant as the API writes it (the session's TimeZone made UTC)."""
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def shown(row: Row, names: dict[int, str], titles: Mapping[str, str]) -> shapes.Notification:
    """A notification's row as the API shows it: the learner it names as
    `names` has them (`public_names`), its board by `titles`."""
    return {"id": row["id"], "kind": row["kind"], "season": label_of(row["season"]),
            "data": _on_board(with_names(row["kind"], row["data"], names), row["season"],
                             titles),
            "created_at": utc(row["created_at"]), "updated_at": utc(row["updated_at"]),
            "read": row["read"]}


class Notifications:
    def __init__(self, db: Database, kinds: BoardKinds | None = None) -> None:
        self.db = db
        self.kinds = kinds

    holds = "none"  # an erasure (erasure.Forgets): nothing before their seasons

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
        return [shown(r, names, titles) for r in rows]

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
