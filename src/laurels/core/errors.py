"""Domain errors: a refusal with one of the contract's error codes
(docs/contract.md, Errors) and a detail safe to show. The HTTP status of
each code, the problem+json body, and the codes only the HTTP edge gives
(a token refused, a body too large, a store that does not answer, ...)
belong to the edge (api/problems.py).
"""

from __future__ import annotations

from typing import Literal

# What domain code raises (DomainError) or reports (an ingest outcome's code).
ErrorCode = Literal[
    "validation_error", "not_found", "not_ranked", "completion_conflict", "season_closed",
    "user_erased", "rebuilding", "kind_conflict", "challenge_conflict", "challenge_full",
    "challenge_ended",
]


class DomainError(Exception):
    """A refusal: a contract error code, a safe detail, and when to retry."""

    def __init__(self, code: ErrorCode, detail: str, retry_after: int | None = None) -> None:
        super().__init__(detail)
        self.code: ErrorCode = code
        self.detail = detail
        self.retry_after = retry_after


Store = Literal["postgresql", "redis"]
_UNAVAILABLE = {"postgresql": "the database is unavailable; retry shortly",
                "redis": "the board store is unavailable; retry shortly"}


class StoreUnavailable(Exception):
    """A store does not answer now (refused, timed out, shutting down, a
    pool with no free connection, a cluster failing over): an outage, not a
    bug. `db/` raises it for PostgreSQL and `board/` for Redis, each deciding
    once which of its library's errors mean that (db.PG_DOWN,
    board.connection.REDIS_DOWN); the HTTP edge answers it 503 with
    Retry-After, loops wait and retry, the CLI says it in one line. Any other
    error of a store (bad SQL, a Lua error) stays what it is: a bug."""

    def __init__(self, store: Store, cause: BaseException) -> None:
        super().__init__(f"{store} unavailable: {type(cause).__name__}: {cause}")
        self.store: Store = store
        self.detail = _UNAVAILABLE[store]  # safe to show a client
