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
    "user_erased", "rebuilding",
]


class DomainError(Exception):
    """A refusal: a contract error code, a safe detail, and when to retry."""

    def __init__(self, code: ErrorCode, detail: str, retry_after: int | None = None) -> None:
        super().__init__(detail)
        self.code: ErrorCode = code
        self.detail = detail
        self.retry_after = retry_after
