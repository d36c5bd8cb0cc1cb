"""Bearer tokens: ingest and admin (constant-time compare), learner JWTs (HS256)."""

from __future__ import annotations

import hmac
import time
from typing import Literal, NoReturn

import jwt

from laurels.api.problems import Problem
from laurels.settings import Secrets
from laurels.validation import Invalid, parse_user_id

Writer = Literal["ingest", "admin"]  # the tokens that may write


def _equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


VERIFIED_MAX = 10_000


class Auth:
    def __init__(self, secrets: Secrets) -> None:
        self.secrets = secrets
        self._verified: dict[str, tuple[int, float]] = {}  # token -> (sub, exp)

    def is_admin(self, token: str) -> bool:
        return _equal(token, self.secrets.admin_token)

    def is_ingest(self, token: str) -> bool:
        return _equal(token, self.secrets.ingest_token)

    def learner_sub(self, token: str) -> int | None:
        """The user id of a valid learner token, None if it is not one. A token
        verified once is remembered until it expires (a page refetches with
        the same token many times a minute; HMAC and JSON cost more than the
        rest of a cached read)."""
        known = self._verified.get(token)
        if known is not None:
            sub, exp = known
            if exp > time.time():
                return sub
            del self._verified[token]
        try:
            claims = jwt.decode(token, self.secrets.user_token_secret, algorithms=["HS256"],
                                options={"require": ["exp", "sub"]})
        except jwt.PyJWTError:
            return None
        sub_text, expires = claims.get("sub"), claims.get("exp")
        if not isinstance(sub_text, str) or not isinstance(expires, int | float):
            return None
        try:
            sub = parse_user_id(sub_text)
        except Invalid:
            return None
        if len(self._verified) >= VERIFIED_MAX:
            self._verified.clear()  # bounded memory; forgetting only costs a re-check
        self._verified[token] = (sub, float(expires))
        return sub

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

    def require_learner(self, token: str, user_id: int) -> None:
        if self.is_admin(token):
            return
        sub = self.learner_sub(token)
        if sub == user_id:
            return
        self._refuse(token, sub)

    def _refuse(self, token: str, sub: int | None = None) -> NoReturn:
        known = (self.is_ingest(token) or self.is_admin(token) or sub is not None
                 or self.learner_sub(token) is not None)
        if known:
            raise Problem("forbidden", "this token may not do that")
        raise Problem("unauthorized", "invalid or expired token")


def mint(secret: str, user_id: int, ttl_seconds: int) -> str:
    now = int(time.time())
    return jwt.encode({"sub": str(user_id), "iat": now, "exp": now + ttl_seconds}, secret,
                      algorithm="HS256")
