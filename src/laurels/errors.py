"""Domain errors: a refusal with one of the contract's error codes
(docs/contract.md, Errors) and a detail safe to show. The HTTP status of
each code, and the problem+json body, belong to the edge (api/problems.py).
"""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal[
    "validation_error", "unauthorized", "forbidden", "not_found", "not_ranked",
    "completion_conflict", "season_closed", "user_erased", "payload_too_large",
    "unsupported_media_type", "rate_limited", "rebuilding", "unavailable",
    "method_not_allowed", "internal_error",
]


class DomainError(Exception):
    """A refusal: a contract error code, a safe detail, and when to retry."""

    def __init__(self, code: ErrorCode, detail: str, retry_after: int | None = None) -> None:
        super().__init__(detail)
        self.code: ErrorCode = code
        self.detail = detail
        self.retry_after = retry_after
