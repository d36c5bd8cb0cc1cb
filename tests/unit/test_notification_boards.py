"""Issue 65, point 5: a notification from a board of a kind read "You
entered the top 10 of 2026-W50": nothing said it came from `skill:python`.
Its data names the board by its kind's title and value, and its metric, in
the API's lists and streams and in webhook bodies alike."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from laurels.core.seasons import parse_season
from laurels.live.notifications import _on_board as on_board
from laurels.live.webhooks import Outgoing

WEEK = parse_season("2026-W50", zone="Asia/Tokyo")
SKILL = WEEK.on("skill:python", "best")
AT = datetime(2026, 12, 8, tzinfo=UTC)


def test_a_board_of_a_kind_is_named_with_its_metric() -> None:
    data = {"rank": 1, "score": 12, "board": "skill:python"}
    assert on_board(data, SKILL.name, {"skill": "Skills"}) == {
        **data, "board_title": "Skills · python", "metric": "best"}
    # A kind deleted since: its name, capitalized.
    assert on_board(data, SKILL.name, {})["board_title"] == "Skill · python"
    # The whole board's notifications are as they were.
    whole = {"rank": 1, "score": 12}
    assert on_board(whole, parse_season("2026-W50", zone="UTC").name, {"skill": "S"}) == whole


def test_a_webhook_body_names_the_board() -> None:
    note: dict[str, Any] = {"id": 7, "user_id": 3, "kind": "top10", "season": SKILL.name,
                            "data": {"rank": 2, "score": 9, "board": "skill:python"},
                            "created_at": AT, "updated_at": AT, "read": False}
    row: dict[str, Any] = {"id": "d1", "user_id": 3, "type": "notification.created",
                           "notification_id": 7,
                           "body": {"id": "d1", "type": "notification.created",
                                    "created_at": "2026-12-08T00:00:00Z",
                                    "data": {"notification_id": 7}}}
    out = Outgoing([row], {7: note})
    sent = out.body(row, {}, {"skill": "Skills"})
    assert sent is not None
    assert sent["data"]["season"] == "2026-W50"
    assert sent["data"]["data"]["board_title"] == "Skills · python"
    assert sent["data"]["data"]["metric"] == "best"
