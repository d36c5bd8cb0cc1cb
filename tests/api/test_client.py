"""laurels.client (issue 16): the async client against the app in process,
its retries against a scripted transport. The sync client runs against a
real server in tests/acceptance/test_http.py."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from laurels.client import (
    AsyncClient,
    Client,
    Completion,
    NotFound,
    Unavailable,
    ValidationError,
)
from tests.api.conftest import BASE_URL, Api, ApiFactory
from tests.helpers import ADMIN, INGEST, token_for


def client(api: Api, token: str) -> AsyncClient:
    return AsyncClient(BASE_URL, token, transport=api.transport)


async def test_the_async_client_covers_the_api(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    async with client(api, INGEST) as laurels, client(api, ADMIN) as admin:
        one = await laurels.post_completion("c-1", 1, 10, "2025-12-01T10:00:00Z")
        assert (one["status"], one["season"]) == ("recorded", "2025-W49")
        again = await laurels.post_completion("c-1", 1, 10, "2025-12-01T10:00:00Z")
        assert again["status"] == "duplicate"  # retrying a completion is safe
        # 2,500 items: three requests of at most 1,000.
        items = [Completion(f"b-{i}", 2 + i % 250, 1, "2025-12-02T10:00:00Z")
                 for i in range(2500)]
        results = await laurels.post_completions(items)
        assert len(results) == 2500 and {r["status"] for r in results} == {"recorded"}
        assert (await laurels.put_user(1, "Ada", "public"))["display_name"] == "Ada"
        assert (await laurels.put_group("team", "Team", "public"))["access"] == "public"
        changed = await laurels.change_members("team", add=[1, 2, 3])
        assert changed["members"] == 3
        board = await laurels.board("2025-W49", limit=5)
        assert board["entries"][0]["user_id"] == 1 and board["next"]
        everyone = [e async for e in laurels.pages("board", "2025-W49", limit=100)]
        assert len(everyone) == 251
        group = [e async for e in laurels.pages("group_board", "team", "2025-W49", limit=1)]
        assert [e["user_id"] for e in group] == [1, 2, 3]
        friends = await laurels.friends("2025-W49", [1, 2])
        assert [e["user_id"] for e in friends["entries"]] == [1, 2]
        await admin.void("b-0", "test")
        why = [c async for c in admin.pages("completions", "2025-W49", 2, limit=3)]
        assert [c["status"] for c in why].count("voided") == 1
        assert (await admin.restore("b-0"))["status"] == "recorded"
        assert (await admin.suspend(3, "test"))["suspended"] is True
        assert (await admin.unsuspend(3))["suspended"] is False
        assert [e["action"] async for e in admin.pages("audit", limit=2)] == [
            "unsuspend", "suspend", "restore", "void"]
        assert (await admin.verify("2025-W49"))["consistent"] is True
        with pytest.raises(NotFound) as info:
            await laurels.get_group("nope")
        assert info.value.code == "not_found" and info.value.status == 404
        with pytest.raises(ValidationError):
            await laurels.post_completion("bad id", 1, 1)
    async with client(api, token_for(api.env, 1)) as learner:
        me = await learner.around("2025-W49", 1, radius=1)
        assert me["user"]["rank"] == 1
        assert (await learner.user_groups(1))["groups"][0]["group_id"] == "team"
        assert "notifications" in await learner.notifications(1)


def scripted(answers: list[Any], calls: list[httpx.Request]) -> Any:
    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer
    return handle


def problem(status: int, code: str, retry_after: str | None = None) -> httpx.Response:
    headers = {"retry-after": retry_after} if retry_after else {}
    return httpx.Response(status, headers=headers, json={
        "type": "about:blank", "title": code, "status": status, "detail": code, "code": code})


def answers() -> list[Any]:
    return [httpx.ConnectError("refused"), problem(503, "unavailable", "0"),
            problem(429, "rate_limited", "0"), httpx.Response(201, json={"status": "recorded"})]


def test_retries_of_the_sync_client() -> None:
    calls: list[httpx.Request] = []
    with Client("http://laurels.test", "t", backoff=0.001,
                transport=httpx.MockTransport(scripted(answers(), calls))) as c:
        assert c.post_completion("x", 1, 1) == {"status": "recorded"}
    assert len(calls) == 4 and calls[0].headers["authorization"] == "Bearer t"
    calls.clear()
    with Client("http://laurels.test", "t", retries=1, backoff=0.001,
                transport=httpx.MockTransport(scripted(
                    [problem(503, "unavailable"), problem(503, "unavailable")], calls))) as c:
        with pytest.raises(Unavailable):
            c.board()
    assert len(calls) == 2
    calls.clear()
    with Client("http://laurels.test", "t", transport=httpx.MockTransport(
            scripted([problem(422, "validation_error")], calls))) as c:
        with pytest.raises(ValidationError):  # a client error is never retried
            c.put_user(1, "x")
    assert len(calls) == 1


async def test_retries_of_the_async_client() -> None:
    calls: list[httpx.Request] = []
    async with AsyncClient("http://laurels.test", "t", backoff=0.001,
                           transport=httpx.MockTransport(scripted(answers(), calls))) as c:
        assert await c.post_completion("x", 1, 1) == {"status": "recorded"}
    assert len(calls) == 4
