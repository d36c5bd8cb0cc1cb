"""Bearer tokens and learner JWTs (docs/contract.md, HTTP API / Auth)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import jwt
import pytest

from laurels.api.auth import Auth, mint
from laurels.api.fast import bearer
from laurels.api.problems import Problem
from laurels.process.settings import Secrets

pytestmark = pytest.mark.once

INGEST = "ingest-token-" + "i" * 32
ADMIN = "admin-token-" + "a" * 32
SECRET = "user-token-secret-" + "s" * 50  # >= 64 bytes, so HS512 encodes without a warning


@pytest.fixture
def auth() -> Auth:
    return Auth(Secrets(ingest_token=INGEST, admin_token=ADMIN, user_token_secret=SECRET))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def raw_hs256(header: dict[str, Any], claims: dict[str, Any], secret: str = SECRET) -> str:
    """Build a JWT by hand, so claims PyJWT would refuse to encode can be tested."""
    signing = _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(claims).encode())
    sig = hmac.new(secret.encode(), signing.encode(), hashlib.sha256).digest()
    return signing + "." + _b64(sig)


def future() -> int:
    return int(time.time()) + 3600


def token(claims: dict[str, Any], secret: str = SECRET, alg: str = "HS256") -> str:
    return jwt.encode(claims, secret, algorithm=alg)


# --- ingest / admin -------------------------------------------------------------

def test_admin_and_ingest_compare(auth: Auth) -> None:
    assert auth.is_admin(ADMIN)
    assert not auth.is_admin(INGEST)
    assert not auth.is_admin(ADMIN[:-1])
    assert not auth.is_admin(ADMIN + "x")
    assert not auth.is_admin("")
    assert auth.is_ingest(INGEST)
    assert not auth.is_ingest(ADMIN)
    assert not auth.is_ingest(INGEST.upper())
    assert not auth.is_ingest("ä€😀")  # non-ASCII must not crash the compare


def test_require_ingest(auth: Auth) -> None:
    auth.require_ingest(INGEST)
    auth.require_ingest(ADMIN)
    with pytest.raises(Problem) as exc:
        auth.require_ingest("nope")
    assert exc.value.code == "unauthorized"
    assert exc.value.code == "unauthorized"
    with pytest.raises(Problem) as exc:
        auth.require_ingest(mint(SECRET, 42, 60))
    assert exc.value.code == "forbidden"
    assert exc.value.code == "forbidden"


def test_require_admin(auth: Auth) -> None:
    auth.require_admin(ADMIN)
    with pytest.raises(Problem) as exc:
        auth.require_admin(INGEST)
    assert exc.value.code == "forbidden"
    with pytest.raises(Problem) as exc:
        auth.require_admin(mint(SECRET, 42, 60))
    assert exc.value.code == "forbidden"
    with pytest.raises(Problem) as exc:
        auth.require_admin("garbage")
    assert exc.value.code == "unauthorized"
    assert exc.value.detail


# --- learner tokens -------------------------------------------------------------

def test_minted_token_is_accepted(auth: Auth) -> None:
    t = mint(SECRET, 42, 60)
    assert auth.learner_sub(t) == 42
    claims = jwt.decode(t, SECRET, algorithms=["HS256"])
    assert claims["sub"] == "42"
    assert claims["exp"] > time.time()


def test_max_user_id(auth: Auth) -> None:
    assert auth.learner_sub(mint(SECRET, 2**63 - 1, 60)) == 2**63 - 1


def test_expired(auth: Auth) -> None:
    assert auth.learner_sub(token({"sub": "42", "exp": int(time.time()) - 10})) is None
    assert auth.learner_sub(mint(SECRET, 42, -10)) is None


def test_missing_exp(auth: Auth) -> None:
    assert auth.learner_sub(token({"sub": "42"})) is None
    assert auth.learner_sub(token({"sub": "42", "iat": int(time.time())})) is None


def test_missing_sub(auth: Auth) -> None:
    assert auth.learner_sub(token({"exp": future()})) is None


def test_alg_none(auth: Auth) -> None:
    t = jwt.encode({"sub": "42", "exp": future()}, None, algorithm="none")
    assert t.endswith(".")
    assert auth.learner_sub(t) is None
    # Also with a forged header on a valid HS256 signature layout.
    forged = raw_hs256({"alg": "none", "typ": "JWT"}, {"sub": "42", "exp": future()})
    assert auth.learner_sub(forged) is None


def test_hs512_refused(auth: Auth) -> None:
    t = token({"sub": "42", "exp": future()}, "another-secret-" + "x" * 64, alg="HS512")
    assert auth.learner_sub(t) is None
    t = token({"sub": "42", "exp": future()}, SECRET, alg="HS512")
    assert auth.learner_sub(t) is None


def test_wrong_secret(auth: Auth) -> None:
    assert auth.learner_sub(mint("another-secret-" + "x" * 32, 42, 60)) is None


def test_tampered_payload(auth: Auth) -> None:
    head, _, sig = mint(SECRET, 42, 60).split(".")
    evil = _b64(json.dumps({"sub": "1", "exp": future()}).encode())
    assert auth.learner_sub(f"{head}.{evil}.{sig}") is None


def test_raw_helper_builds_valid_tokens(auth: Auth) -> None:
    # Guards the helper below: a well-formed hand-made token is accepted.
    assert auth.learner_sub(raw_hs256({"alg": "HS256", "typ": "JWT"},
                                      {"sub": "7", "exp": future()})) == 7


@pytest.mark.parametrize("sub", [42, 42.0, True, None, ["42"], {"id": "42"}])
def test_sub_not_a_string(auth: Auth, sub: Any) -> None:
    t = raw_hs256({"alg": "HS256", "typ": "JWT"}, {"sub": sub, "exp": future()})
    assert auth.learner_sub(t) is None


@pytest.mark.parametrize("sub", ["0", "abc", "", "-1", "+42", " 42", "42 ", "4.2",
                                 str(2**63), "\u0664\u0662"])
def test_sub_not_a_user_id(auth: Auth, sub: str) -> None:
    assert auth.learner_sub(token({"sub": sub, "exp": future()})) is None


@pytest.mark.parametrize("garbage", ["", "garbage", "a.b.c", "...", INGEST, ADMIN,
                                     "eyJhbGciOiJIUzI1NiJ9.e30."])
def test_garbage(auth: Auth, garbage: str) -> None:
    assert auth.learner_sub(garbage) is None


# --- require_learner --------------------------------------------------------------

def test_require_learner_own_token(auth: Auth) -> None:
    auth.require_learner(mint(SECRET, 42, 60), 42)


def test_require_learner_other_user_is_forbidden(auth: Auth) -> None:
    with pytest.raises(Problem) as exc:
        auth.require_learner(mint(SECRET, 43, 60), 42)
    assert exc.value.code == "forbidden"
    assert exc.value.code == "forbidden"
    assert exc.value.detail


@pytest.mark.parametrize("bad", ["garbage", "", "Bearer x"])
def test_require_learner_garbage_is_unauthorized(auth: Auth, bad: str) -> None:
    with pytest.raises(Problem) as exc:
        auth.require_learner(bad, 42)
    assert exc.value.code == "unauthorized"
    assert exc.value.code == "unauthorized"
    assert exc.value.detail


def test_require_learner_expired_is_unauthorized(auth: Auth) -> None:
    with pytest.raises(Problem) as exc:
        auth.require_learner(mint(SECRET, 42, -10), 42)
    assert exc.value.code == "unauthorized"


def test_require_learner_wrong_secret_is_unauthorized(auth: Auth) -> None:
    with pytest.raises(Problem) as exc:
        auth.require_learner(mint("another-secret-" + "x" * 32, 42, 60), 42)
    assert exc.value.code == "unauthorized"


def test_require_learner_admin_passes(auth: Auth) -> None:
    auth.require_learner(ADMIN, 42)
    auth.require_learner(ADMIN, 2**63 - 1)


def test_require_learner_ingest_is_forbidden(auth: Auth) -> None:
    with pytest.raises(Problem) as exc:
        auth.require_learner(INGEST, 42)
    assert exc.value.code == "forbidden"


# --- bearer header ------------------------------------------------------------------

def _scope(header: str | None) -> dict[str, Any]:
    headers = [] if header is None else [(b"authorization", header.encode("latin-1"))]
    return {"type": "http", "headers": headers}


def test_bearer_parsing() -> None:
    assert bearer(_scope("Bearer abc")) == "abc"
    assert bearer(_scope("bearer abc")) == "abc"
    assert bearer(_scope("BEARER  abc ")) == "abc"


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer ", "Bearer   ", "Basic abc",
                                    "abc"])
def test_bearer_refused(header: str | None) -> None:
    with pytest.raises(Problem) as exc:
        bearer(_scope(header))
    assert exc.value.code == "unauthorized"
    assert exc.value.detail


# --- why a learner token is refused (issue 26) ---------------------------------------

def _refusal(auth: Auth, tok: str) -> str:
    with pytest.raises(Problem) as exc:
        auth.require_learner(tok, 42)
    assert exc.value.code == "unauthorized"
    assert tok not in exc.value.detail  # the reason, never the token
    assert auth.refusal(tok) == exc.value.detail
    return exc.value.detail


@pytest.mark.parametrize(("claims", "secret", "reason"), [
    ({"sub": "42", "exp": 1}, SECRET, "expired"),
    ({"sub": "42", "exp": 10**10}, "another-secret-" + "x" * 32, "signature"),
    ({"sub": "42"}, SECRET, "no exp"),
    ({"sub": "42", "iat": 1}, SECRET, "no exp"),
    ({"exp": 10**10}, SECRET, "sub"),
    ({"sub": "+42", "exp": 10**10}, SECRET, "sub"),
    ({"sub": "042", "exp": 10**10}, SECRET, "sub"),
    ({"sub": "0", "exp": 10**10}, SECRET, "sub"),
    ({"sub": "42", "exp": 10**10, "nbf": 10**10 - 1}, SECRET, "not valid yet"),
])
def test_each_refusal_says_why(auth: Auth, claims: dict[str, Any], secret: str,
                               reason: str) -> None:
    assert reason in _refusal(auth, token(claims, secret))


@pytest.mark.parametrize("sub", [42, None, ["42"]])
def test_a_sub_that_is_no_string_says_so(auth: Auth, sub: Any) -> None:
    tok = raw_hs256({"alg": "HS256", "typ": "JWT"}, {"sub": sub, "exp": future()})
    assert "sub" in _refusal(auth, tok)


@pytest.mark.parametrize("garbage", ["garbage", "a.b.c", "...", "eyJhbGciOiJIUzI1NiJ9.e30"])
def test_a_malformed_token_says_so(auth: Auth, garbage: str) -> None:
    assert "malformed" in _refusal(auth, garbage)


def test_another_algorithm_says_so(auth: Auth) -> None:
    assert "HS256" in _refusal(auth, token({"sub": "42", "exp": future()}, SECRET, "HS512"))
    none = jwt.encode({"sub": "42", "exp": future()}, None, algorithm="none")
    assert "HS256" in _refusal(auth, none)


def test_a_remembered_token_that_expired_says_expired(auth: Auth,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    tok = mint(SECRET, 42, 60)
    auth.require_learner(tok, 42)  # verified once: remembered
    later = time.time() + 120
    monkeypatch.setattr(time, "time", lambda: later)  # the remembered check's clock
    with pytest.raises(Problem) as exc:
        auth.require_learner(tok, 42)
    assert exc.value.code == "unauthorized" and "expired" in exc.value.detail


def test_the_writers_refusal_says_why_too(auth: Auth) -> None:
    with pytest.raises(Problem) as exc:
        auth.require_admin("not-a-token")
    assert (exc.value.code, exc.value.detail) == ("unauthorized", "unknown token")
    with pytest.raises(Problem) as exc:
        auth.require_ingest(mint(SECRET, 42, -10))
    assert exc.value.code == "unauthorized" and "expired" in exc.value.detail


def test_a_rotating_secret_accepts_both_and_signs_with_the_new() -> None:
    """docs/operations.md, "Rotating a secret": `new,old` accepts tokens of
    both; what laurels signs (learner tokens, cursors) uses the new one."""
    from laurels.api.auth import Auth, BadToken, mint
    from laurels.api.cursors import Cursors
    from laurels.process.settings import Secrets

    old_secret, new_secret = SECRET, "n" * 64
    rotating = Auth(Secrets("new-ingest,old-ingest", "admin", f"{new_secret},{old_secret}"))
    assert rotating.is_ingest("new-ingest") and rotating.is_ingest("old-ingest")
    assert not rotating.is_ingest("new-ingest,old-ingest") and not rotating.is_ingest("other")
    assert rotating.check_learner(mint(old_secret, 7, 60)) == 7  # issued before
    issued = mint(f"{new_secret},{old_secret}", 8, 60)
    assert Auth(Secrets("i", "a", new_secret)).check_learner(issued) == 8  # signed with new
    with pytest.raises(BadToken):
        Auth(Secrets("i", "a", old_secret)).check_learner(issued)
    before = Cursors(old_secret).encode("board", (1, 2, 3))
    assert Cursors(f"{new_secret},{old_secret}").decode("board", before) == (1, 2, 3)
    during = Cursors(f"{new_secret},{old_secret}").encode("board", (4, 5, 6))
    assert Cursors(new_secret).decode("board", during) == (4, 5, 6)
