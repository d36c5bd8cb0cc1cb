"""Reads at the calendar's ends (issue 64, point 8): the first and last
seasons of every period, on the whole board and on boards of kinds east
and west of UTC, by anyone, answer 200, 404 or 422: never a 5xx (a week of
year 1 in a zone west of UTC starts in year 0, which no datetime holds)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.api.conftest import ApiFactory
from tests.helpers import ADMIN, INGEST, token_for

pytestmark = pytest.mark.once

ENDS = ["0001-W01", "9999-W52", "0001-01-01", "9999-12-31", "0001-01", "9999-12",
        "1-W01", "10000-W01", "0000-W01", "9999-W53"]


async def test_the_calendars_ends_answer_without_a_server_error(serve: ApiFactory) -> None:
    api = await serve(periods=("week", "day", "month", "all"))
    admin = api.client(ADMIN)
    for kind, zone in (("west", "America/Los_Angeles"), ("east", "Pacific/Kiritimati")):
        made = await admin.put(f"/v1/admin/board-kinds/{kind}", json={
            "time_zone": zone, "periods": ["week", "day", "month", "all"]})
        assert made.status_code == 201, made.text
    await api.client(INGEST).post("/v1/completions", json={
        "completion_id": "e1", "user_id": 1, "points": 3, "tags": ["west:a", "east:b"],
        "completed_at": (datetime.now(UTC) - timedelta(minutes=5)).isoformat()})
    me = api.client(token_for(api.env, 1))
    answered = []
    for season in ENDS:
        for board in ("", "?board=west:a", "?board=east:b"):
            for client, path in ((api.client(), f"/v1/leaderboards/{season}{board}"),
                                 (me, f"/v1/leaderboards/{season}/users/1{board}"),
                                 (me, f"/v1/users/1/boards?season={season}"),
                                 (admin, f"/v1/admin/leaderboards/{season}/verify{board}")):
                resp = await client.get(path)
                answered.append((path, resp.status_code))
                assert resp.status_code < 500, (path, resp.text)
                assert "Traceback" not in resp.text
    assert {s for _, s in answered} <= {200, 404, 422}, answered
