"""Bearer tokens: ingest and admin (constant-time compare), learner JWTs (HS256)."""

from __future__ import annotations

import hmac
import time
from typing import Literal, NoReturn

import jwt

from laurels.api.problems import Problem
from laurels.core.validation import Invalid, parse_user_id
from laurels.process.settings import Secrets, accepted, current

Writer = Literal["ingest", "admin"]  # the tokens that may write


def _equal(a: str, b: str) -> bool:
    """`a` is `b`, or one of the values `b` accepts while it rotates (in
    constant time each)."""
    return any([hmac.compare_digest(a.encode(), v.encode()) for v in accepted(b)])


VERIFIED_MAX = 10_000

# Why a learner token is refused: the detail of its 401. A reason never
# quotes the token; the ones about claims are only reached once the
# signature verifies, so a forger learns nothing from them.
REASONS = {
    "expired": "learner token expired (its exp has passed)",
    "signature": "learner token signature does not verify (signed with another secret "
                 "than this server's user token secret)",
    "exp": "learner token has no exp claim (exp is required)",
    "sub": "learner token's sub is missing or not a canonical user id",
    "algorithm": "learner token is not signed with HS256",
    "immature": "learner token is not valid yet (nbf or iat in the future)",
    "malformed": "malformed token (not a well-formed JWT)",
    "other": "invalid learner token",
}


class BadToken(Exception):
    """A learner token refused, with the reason (a REASONS value)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _reason(exc: jwt.PyJWTError) -> str:
    # Subclasses before their bases: InvalidSignatureError is a DecodeError.
    if isinstance(exc, jwt.ExpiredSignatureError):
        return REASONS["expired"]
    if isinstance(exc, jwt.InvalidSignatureError):
        return REASONS["signature"]
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return REASONS["exp" if exc.claim == "exp" else "sub"]
    if isinstance(exc, jwt.exceptions.InvalidSubjectError):  # sub not a string
        return REASONS["sub"]
    if isinstance(exc, jwt.InvalidAlgorithmError):
        return REASONS["algorithm"]
    if isinstance(exc, jwt.ImmatureSignatureError):
        return REASONS["immature"]
    if isinstance(exc, jwt.DecodeError | jwt.exceptions.InvalidIssuedAtError):
        return REASONS["malformed"]
    return REASONS["other"]


def _decoded(token: str, secrets: list[str]) -> dict[str, object]:
    """A learner token's claims, signed with one of the secrets accepted (the
    new one first, then an old one while it rotates)."""
    error: jwt.PyJWTError | None = None
    for secret in secrets:
        try:
            claims: dict[str, object] = jwt.decode(token, secret, algorithms=["HS256"],
                                                   options={"require": ["exp", "sub"]})
            return claims
        except jwt.InvalidSignatureError as exc:
            error = error or exc  # another secret may verify it
        except jwt.PyJWTError as exc:
            raise BadToken(_reason(exc)) from None
    raise BadToken(_reason(error) if error else REASONS["signature"])


class Auth:
    def __init__(self, secrets: Secrets, metrics_token: str | None = None) -> None:
        self.secrets = secrets
        self.metrics_token = metrics_token  # LAURELS_METRICS_TOKEN
        self._verified: dict[str, tuple[int, float]] = {}  # token -> (sub, exp)

    def is_admin(self, token: str) -> bool:
        return _equal(token, self.secrets.admin_token)

    def is_ingest(self, token: str) -> bool:
        return _equal(token, self.secrets.ingest_token)

    def learner_sub(self, token: str) -> int | None:
        """The user id of a valid learner token, None if it is not one."""
        try:
            return self.check_learner(token)
        except BadToken:
            return None

    def check_learner(self, token: str) -> int:
        """The user id of a valid learner token, or BadToken saying why not.
        A token verified once is remembered until it expires (a page
        refetches with the same token many times a minute; HMAC and JSON
        cost more than the rest of a cached read)."""
        known = self._verified.get(token)
        if known is not None:
            sub, exp = known
            if exp > time.time():
                return sub
            del self._verified[token]
            raise BadToken(REASONS["expired"])
        claims = _decoded(token, accepted(self.secrets.user_token_secret))
        sub_text, expires = claims.get("sub"), claims.get("exp")
        if not isinstance(expires, int | float):
            raise BadToken(REASONS["malformed"])
        if not isinstance(sub_text, str):
            raise BadToken(REASONS["sub"])
        try:
            sub = parse_user_id(sub_text)
        except Invalid:
            raise BadToken(REASONS["sub"]) from None
        if len(self._verified) >= VERIFIED_MAX:
            self._verified.clear()  # bounded memory; forgetting only costs a re-check
        self._verified[token] = (sub, float(expires))
        return sub

    def refusal(self, token: str) -> str:
        """Why a token that is no valid learner token is refused: the detail
        of its 401 (never the token itself)."""
        try:
            self.check_learner(token)
        except BadToken as exc:
            return exc.reason
        return REASONS["other"]

    def require_ingest(self, token: str) -> Writer:
        """Which writer the token is (ingest or admin), or refuse it."""
        if self.is_admin(token):
            return "admin"
        if self.is_ingest(token):
            return "ingest"
        self._refuse(token)

    def require_admin(self, token: str) -> Writer:
        if self.is_admin(token):
            return "admin"
        self._refuse(token)

    def require_metrics(self, token: str) -> None:
        """The admin token, or LAURELS_METRICS_TOKEN when one is set."""
        if self.is_admin(token) or (self.metrics_token is not None
                                    and _equal(token, self.metrics_token)):
            return
        self._refuse(token)

    def require_learner(self, token: str, user_id: int) -> None:
        if self.is_admin(token):
            return
        try:
            sub = self.check_learner(token)
        except BadToken as exc:
            if self.is_ingest(token):
                raise Problem("forbidden", "this token may not do that") from None
            raise Problem("unauthorized", exc.reason) from None
        if sub != user_id:
            raise Problem("forbidden", "this token may not do that")

    def _refuse(self, token: str) -> NoReturn:
        """Refuse a token that is not the writer asked for: 403 if it is a
        known token, else 401 saying why."""
        if self.is_ingest(token) or self.is_admin(token):
            raise Problem("forbidden", "this token may not do that")
        try:
            self.check_learner(token)
        except BadToken as exc:
            if exc.reason == REASONS["malformed"]:
                # Where only the ingest or admin token would do, "not a JWT"
                # misleads: it is simply none of the tokens.
                raise Problem("unauthorized", "unknown token") from None
            raise Problem("unauthorized", exc.reason) from None
        raise Problem("forbidden", "this token may not do that")


def mint(secret: str, user_id: int, ttl_seconds: int) -> str:
    """A learner token, signed with the current secret (the first of
    `new,old` while it rotates)."""
    now = int(time.time())
    return jwt.encode({"sub": str(user_id), "iat": now, "exp": now + ttl_seconds},
                      current(secret), algorithm="HS256")
