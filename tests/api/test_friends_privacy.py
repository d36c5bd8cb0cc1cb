"""The friends board names nobody who is not public (issue 25, item 5;
docs/contract.md: POST /v1/leaderboards/{season}/ranks), over HTTP in
process against the real stores.

Any learner may ask for any ids. Were an anonymous learner shown masked,
their score and board rank would match them to their entry on the public
board, and the mask itself would say which ids are anonymous. So anonymous,
hidden and suspended learners are left out, and the answer for one of them
is the answer for an id nobody ever used: whoever asks (a ranked learner,
an unknown user, an erased learner, the platform), on every period.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from laurels.core.seasons import parse_season
from tests.api.conftest import Api, ApiFactory
from tests.api.test_groups import post_all
from tests.helpers import ADMIN, INGEST, token_for

ANN, HAL, SUS = 2, 3, 4  # anonymous, hidden, suspended
LEFT_OUT = (ANN, HAL, SUS)
NOBODY = 424_242  # never used
ERASED, STRANGER = 8, 999  # an erased learner; a token of a learner never seen
SCORES = {1: 50, ANN: 40, HAL: 45, SUS: 42, 5: 30, 6: 40, 7: 20, ERASED: 35}


async def learners(api: Api) -> None:
    """Public board (shared ties): 1:50 r1, Ann:40 r2 (masked), 6:40 r2,
    5:30 r4, 7:20 r5; Hal (45) and Sus (42) are not on it, erased 8 is gone."""
    c, admin = api.client(INGEST), api.client(ADMIN)
    await c.put(f"/v1/users/{ANN}", json={"display_name": "Ann", "visibility": "anonymous"})
    await c.put(f"/v1/users/{HAL}", json={"display_name": "Hal", "visibility": "hidden"})
    await c.put(f"/v1/users/{SUS}", json={"display_name": "Sus"})
    await post_all(c, SCORES)
    resp = await admin.post(f"/v1/admin/users/{SUS}/suspend", json={"reason": "test"})
    assert resp.json() == {"user_id": SUS, "suspended": True}
    assert (await admin.delete(f"/v1/users/{ERASED}")).status_code == 204


async def ranks(client: httpx.AsyncClient, season: str, user_ids: list[int]) -> Any:
    resp = await client.post(f"/v1/leaderboards/{season}/ranks", json={"user_ids": user_ids})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/json"
    return resp.json()


@pytest.mark.parametrize("season", ["current", "current-day", "current-month", "all"])
async def test_a_left_out_learner_is_answered_as_an_unknown_id(serve: ApiFactory,
                                                               season: str) -> None:
    api = await serve(periods=("week", "day", "month", "all"))
    await learners(api)
    public = (await api.get(f"/v1/leaderboards/{season}")).json()
    assert [(e["rank"], e["user_id"], e["score"]) for e in public["entries"]] == [
        (1, 1, 50), (2, None, 40), (2, 6, 40), (4, 5, 30), (5, 7, 20)]
    callers = {"ranked learner": api.client(token_for(api.env, 5)),
               "unknown user": api.client(token_for(api.env, STRANGER)),
               "erased learner": api.client(token_for(api.env, ERASED)),
               "the platform": api.client(INGEST)}
    for who, client in callers.items():
        nobody = await ranks(client, season, [NOBODY])
        assert nobody == {"season": public["season"], "board": "global", "metric": "points",
                          "entries": []}, who
        # Among public ones, in every position: ranked among the listed
        # without them (they push nobody down), board ranks unchanged.
        friends = await ranks(client, season, [1, 6, 7])
        assert [(e["rank"], e["board_rank"], e["user_id"], e["score"])
                for e in friends["entries"]] == [(1, 1, 1, 50), (2, 2, 6, 40),
                                                 (3, 5, 7, 20)], who
        for uid in LEFT_OUT:
            assert await ranks(client, season, [uid]) == nobody, (who, uid)
            for ids in ([uid, 1, 6, 7], [1, 6, uid, 7], [1, 6, 7, uid]):
                assert await ranks(client, season, ids) == await ranks(
                    client, season, [NOBODY if u == uid else u for u in ids]), (who, ids)
        everyone = await ranks(client, season, [*LEFT_OUT, 1, 6, 7, ERASED])
        assert everyone == friends, who
        text = str(everyone)
        assert "Anonymous" not in text and "None" not in text and "Ann" not in text
    # Learner 5 names themselves along: only their own entry is added.
    five = api.client(token_for(api.env, 5))
    mine = await ranks(five, season, [5, *LEFT_OUT, 6])
    assert mine == await ranks(five, season, [5, NOBODY, 6])
    assert mine["entries"] == [
        {"rank": 1, "board_rank": 2, "user_id": 6, "display_name": "Learner 6", "score": 40},
        {"rank": 2, "board_rank": 4, "user_id": 5, "display_name": "Learner 5", "score": 30,
         "self": True}]
    # An erased learner, and an unknown one, do not see themselves either.
    assert await ranks(callers["erased learner"], season, [ERASED]) == nobody
    assert await ranks(callers["unknown user"], season, [STRANGER]) == nobody


async def test_an_anonymous_hidden_or_suspended_caller_still_sees_themselves(
        serve: ApiFactory) -> None:
    api = await serve()
    await learners(api)
    asked = [1, *LEFT_OUT, 6, 7]
    ann = await ranks(api.client(token_for(api.env, ANN)), "current", asked)
    assert ann["entries"] == [  # ranked as on the public board, under their own name
        {"rank": 1, "board_rank": 1, "user_id": 1, "display_name": "Learner 1", "score": 50},
        {"rank": 2, "board_rank": 2, "user_id": ANN, "display_name": "Ann", "score": 40,
         "self": True},
        {"rank": 2, "board_rank": 2, "user_id": 6, "display_name": "Learner 6", "score": 40},
        {"rank": 4, "board_rank": 5, "user_id": 7, "display_name": "Learner 7", "score": 20}]
    # Hidden and suspended callers stand where they would, and the others are
    # ranked as if they were on the board (as in their neighbourhood: their
    # own view never shows two learners on one unique rank); the others left
    # out for everyone are left out for them too.
    for uid, name, score in ((HAL, "Hal", 45), (SUS, "Sus", 42)):
        seen = await ranks(api.client(token_for(api.env, uid)), "current", asked)
        assert seen["entries"] == [
            {"rank": 1, "board_rank": 1, "user_id": 1, "display_name": "Learner 1",
             "score": 50},
            {"rank": 2, "board_rank": 2, "user_id": uid, "display_name": name,
             "score": score, "self": True},
            {"rank": 3, "board_rank": 2, "user_id": 6, "display_name": "Learner 6",
             "score": 40},
            {"rank": 4, "board_rank": 5, "user_id": 7, "display_name": "Learner 7",
             "score": 20}], uid
    # Unsuspended, Sus is public again, and on everyone's friends boards.
    admin = api.client(ADMIN)
    assert (await admin.post(f"/v1/admin/users/{SUS}/unsuspend")).status_code == 200
    back = await ranks(api.client(token_for(api.env, 5)), "current", [SUS, 6])
    assert [(e["rank"], e["board_rank"], e["user_id"]) for e in back["entries"]] == [
        (1, 2, SUS), (2, 3, 6)]


async def test_a_finalized_season_s_archive_leaves_them_out_too(serve: ApiFactory) -> None:
    """A closed season's friends board is read from its archive: the same
    rules apply there."""
    api = await serve(close_seasons=False)
    c = api.client(INGEST)
    await c.put(f"/v1/users/{ANN}", json={"display_name": "Ann", "visibility": "anonymous"})
    await c.put(f"/v1/users/{HAL}", json={"display_name": "Hal", "visibility": "hidden"})
    await post_all(c, {1: 5, ANN: 9, HAL: 7, 4: 3}, "2026-11-03T10:00:00Z")  # 2026-W45
    w45 = parse_season("2026-W45", zone=api.runtime.settings.time_zone)
    assert await api.runtime.lifecycle.finalize(w45)
    for version in await api.runtime.redis.smembers(
            api.runtime.keys.season("2026-W45").versions):
        await api.runtime.board.drop_version(w45, str(version))
    await api.runtime.redis.delete(api.runtime.keys.season("2026-W45").current)
    api.runtime.board.forget(w45)
    five = api.client(token_for(api.env, 5))
    nobody = await ranks(five, "2026-W45", [NOBODY, 1, 4])
    assert [(e["rank"], e["board_rank"], e["user_id"]) for e in nobody["entries"]] == [
        (1, 2, 1), (2, 3, 4)]
    for uid in (ANN, HAL):
        assert await ranks(five, "2026-W45", [uid, 1, 4]) == nobody
    ann = await ranks(api.client(token_for(api.env, ANN)), "2026-W45", [ANN, 1])
    assert [(e["rank"], e["user_id"], e["display_name"], e.get("self")) for e in
            ann["entries"]] == [(1, ANN, "Ann", True), (2, 1, "Learner 1", None)]
