"""Why a learner token is refused (issue 26): the 401's detail names the
reason (expired, another secret, no `exp`, a `sub` that is no user id,
malformed), never the token, the same on the fast lane (around-me) as on
the full routes, and the same whether or not the token was seen before."""

from __future__ import annotations

import asyncio

import jwt
import pytest

from tests.api.conftest import ApiFactory
from tests.helpers import INGEST, USER_SECRET, assert_problem, completion, token_for

pytestmark = pytest.mark.once

FUTURE = 10**10
CASES = [  # (claims, secret, words of the detail)
    ({"sub": "42", "exp": 1}, USER_SECRET, "expired"),
    ({"sub": "42", "exp": FUTURE}, "another-secret-0123456789abcdef-xyz", "another secret"),
    ({"sub": "42"}, USER_SECRET, "no exp"),
    ({"exp": FUTURE}, USER_SECRET, "not a canonical user id"),
    ({"sub": "042", "exp": FUTURE}, USER_SECRET, "not a canonical user id"),
    ({"sub": "learner-42", "exp": FUTURE}, USER_SECRET, "not a canonical user id"),
]
# The around-me read is answered by the fast lane; the others by FastAPI's routes.
PATHS = ["/v1/leaderboards/current/users/42", "/v1/users/42/notifications",
         "/v1/leaderboards/current/users/42/completions", "/v1/users/42/groups"]


@pytest.mark.parametrize(("claims", "secret", "words"), CASES)
async def test_a_refused_learner_token_says_why(serve: ApiFactory, claims: dict[str, object],
                                                secret: str, words: str) -> None:
    api = await serve()
    ingest = api.client(INGEST)
    assert (await ingest.post("/v1/completions", json=completion("t1", 42, 3))).status_code \
        == 201
    tok = jwt.encode(claims, secret, algorithm="HS256")
    details = set()
    for path in PATHS:
        for _ in range(2):  # the second time too (a remembered check)
            resp = await api.client(tok).get(path)
            body = assert_problem(resp, 401, "unauthorized")
            assert words in body["detail"], (path, body)
            assert tok not in resp.text and tok.split(".")[1] not in resp.text
            details.add(body["detail"])
    assert len(details) == 1, details


async def test_a_malformed_token_says_so(serve: ApiFactory) -> None:
    api = await serve()
    for tok in ("not-a-jwt", "a.b.c", "eyJhbGciOiJIUzI1NiJ9.e30"):
        for path in PATHS:
            resp = await api.client(tok).get(path)
            body = assert_problem(resp, 401, "unauthorized")
            assert "malformed" in body["detail"] and tok not in resp.text, (path, body)


async def test_a_token_that_expires_after_its_first_use_says_expired(serve: ApiFactory
                                                                     ) -> None:
    api = await serve()
    ingest = api.client(INGEST)
    assert (await ingest.post("/v1/completions", json=completion("t2", 42, 3))).status_code \
        == 201
    tok = token_for(api.env, 42, ttl=2)
    path = PATHS[0]
    assert (await api.client(tok).get(path)).status_code == 200  # now remembered
    await asyncio.sleep(2.5)
    for path in PATHS:
        body = assert_problem(await api.client(tok).get(path), 401, "unauthorized")
        assert "expired" in body["detail"], (path, body)
