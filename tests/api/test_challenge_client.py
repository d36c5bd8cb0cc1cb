"""laurels.client's challenge calls (issue 67; CONTRACT.md, "Challenges:
boards with a start and an end"): each against the app in process, its body
held to the client's type field by field (tests/typed_checks.py), its
refusals raised as their exceptions; and what each sends on the wire,
against a scripted transport. The challenges' clock is the test's."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from laurels.client import (
    AsyncClient,
    Challenge,
    ChallengeAround,
    ChallengeBoard,
    ChallengeConflict,
    ChallengeEnded,
    ChallengeEntry,
    ChallengeFull,
    Challenges,
    Client,
    Completion,
    Joined,
    LearnerChallenges,
    NotFound,
    Notifications,
    NotRanked,
)
from tests.api.conftest import BASE_URL, Api, challenge_clock
from tests.helpers import ADMIN, INGEST, token_for
from tests.typed_checks import problems

pytestmark = pytest.mark.once

START, END = datetime(2025, 12, 1, tzinfo=UTC), datetime(2025, 12, 8, tzinfo=UTC)




def typed(body: Any, kind: Any) -> Any:
    """`body` is of the client's type `kind`, every field (none missing, none
    it does not declare)."""
    assert problems(body, kind, kind.__name__) == []
    return body


def client(api: Api, token: str) -> AsyncClient:
    return AsyncClient(BASE_URL, token, transport=api.transport)





@pytest.fixture
def api(challenge_api: Api) -> Api:
    return challenge_api

async def test_the_challenge_calls(api: Api) -> None:
    admin, laurels = client(api, ADMIN), client(api, INGEST)
    one, two, three = (client(api, token_for(api.env, u)) for u in (1, 2, 3))
    async with admin, laurels, one, two, three:
        sprint = typed(await admin.define_challenge("sprint", {
            "title": "December sprint", "starts_at": START, "ends_at": END,
            "join": "required", "max_size": 2, "rewards": [
                {"from": 1, "to": 1, "reward": "gold"},
                {"from": 2, "to": 10, "reward": "silver"}]}), Challenge)
        assert (sprint["starts_at"], sprint["status"]) == ("2025-12-01T00:00:00Z", "upcoming")
        typed(await admin.define_challenge("open", {
            "title": "Open", "starts_at": "2025-12-10T00:00:00Z",
            "ends_at": "2025-12-17T00:00:00Z"}), Challenge)
        page = typed(await laurels.challenges(limit=1), Challenges)
        assert [c["challenge_id"] for c in page["challenges"]] == ["open"] and page["next"]
        assert [c["challenge_id"] async for c in laurels.pages("challenges", limit=1)] == [
            "open", "sprint"]
        assert (await laurels.challenges(status="active"))["challenges"] == []
        assert typed(await laurels.challenge("sprint"), Challenge) == sprint

        joined = typed(await one.join_challenge("sprint"), Joined)  # their own token
        assert joined == {"challenge_id": "sprint", "user_id": 1,
                          "joined_at": "2025-11-30T12:00:00Z"}
        assert (await laurels.join_challenge("sprint", 2))["user_id"] == 2  # the platform's
        with pytest.raises(ChallengeFull) as full:
            await three.join_challenge("sprint")
        assert (full.value.status, full.value.code) == (409, "challenge_full")
        assert (await laurels.join_challenge("open", 3))["joined_at"] is None

        await laurels.post_completions([
            Completion("a", 1, 10, "2025-12-02T10:00:00Z"),
            Completion("b", 2, 30, "2025-12-03T10:00:00Z"),
            Completion("c", 3, 50, "2025-12-03T11:00:00Z")])  # 3 did not join
        challenge_clock(api, "2025-12-06T00:00:00")
        with pytest.raises(ChallengeConflict):
            await admin.define_challenge("sprint", {"title": "December sprint",
                                                    "starts_at": START, "ends_at": END})
        board = typed(await laurels.challenge_board("sprint"), ChallengeBoard)
        assert [(e["user_id"], e["rank"], e["reward"]) for e in board["entries"]] == [
            (2, 1, None), (1, 2, None)]
        walked = [typed(e, ChallengeEntry)
                  async for e in laurels.pages("challenge_board", "sprint", limit=1)]
        assert walked == board["entries"]
        around = typed(await one.challenge_around("sprint", 1, radius=1), ChallengeAround)
        assert [(e["user_id"], e["self"]) for e in around["neighbors"]] == [
            (2, False), (1, True)]
        with pytest.raises(NotRanked):
            await three.challenge_around("sprint", 3)

        challenge_clock(api, "2025-12-08T00:00:01")
        assert await api.runtime.decider.decide_due() == ["sprint"]
        decided = typed(await laurels.challenge_board("sprint"), ChallengeBoard)
        assert [e["reward"] for e in decided["entries"]] == ["gold", "silver"]
        mine = typed(await two.learner_challenges(2, status="ended"), LearnerChallenges)
        assert [(c["challenge_id"], c["rank"], c["reward"]) for c in mine["challenges"]] == [
            ("sprint", 1, "gold")]
        typed(await laurels.learner_challenges(1), LearnerChallenges)  # the platform's read
        notes = typed(await two.notifications(2), Notifications)
        assert [n["data"]["reward"] for n in notes["notifications"]
                if n["kind"] == "challenge_result"] == ["gold"]
        with pytest.raises(ChallengeEnded):
            await laurels.join_challenge("sprint", 4)

        await admin.delete_challenge("sprint")  # (None: 204)
        with pytest.raises(NotFound):
            await laurels.challenge("sprint")
        with pytest.raises(NotFound):
            await admin.delete_challenge("sprint")


def test_what_each_call_sends() -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(204 if request.method == "DELETE" else 200, json={})

    with Client("http://laurels.test", "t", transport=httpx.MockTransport(answer)) as c:
        c.define_challenge("a-b", {"title": "T", "starts_at": START,
                                   "ends_at": "2025-12-08T00:00:00Z", "notify": True})
        c.delete_challenge("a-b")
        c.challenges("ended", limit=10, after="x")
        c.challenges()
        c.challenge("a-b")
        c.join_challenge("a-b")
        c.join_challenge("a-b", 7)
        c.challenge_board("a-b", limit=5)
        c.challenge_around("a-b", 7, radius=2)
        c.learner_challenges(7, status="active")
    assert [(r.method, str(r.url).removeprefix("http://laurels.test")) for r in sent] == [
        ("PUT", "/v1/admin/challenges/a-b"), ("DELETE", "/v1/admin/challenges/a-b"),
        ("GET", "/v1/challenges?limit=10&after=x&status=ended"),
        ("GET", "/v1/challenges?limit=50"), ("GET", "/v1/challenges/a-b"),
        ("POST", "/v1/challenges/a-b/join"), ("POST", "/v1/challenges/a-b/join"),
        ("GET", "/v1/challenges/a-b/leaderboard?limit=5"),
        ("GET", "/v1/challenges/a-b/users/7?radius=2"),
        ("GET", "/v1/users/7/challenges?status=active")]
    assert json.loads(sent[0].content) == {"title": "T", "starts_at": "2025-12-01T00:00:00+00:00",
                                           "ends_at": "2025-12-08T00:00:00Z", "notify": True}
    assert sent[5].content == b""  # the learner's own join: no body
    assert json.loads(sent[6].content) == {"user_id": 7}  # the platform's: whose
