"""Domain errors that map onto the contract's problem codes (CONTRACT.md, Errors)."""

from __future__ import annotations

STATUS = {
    "validation_error": 422,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "not_ranked": 404,
    "completion_conflict": 409,
    "season_closed": 409,
    "user_erased": 410,
    "payload_too_large": 413,
    "unsupported_media_type": 415,
    "rate_limited": 429,
    "rebuilding": 503,
    "unavailable": 503,
    "method_not_allowed": 405,
    "internal_error": 500,
}

TITLES = {
    "validation_error": "Invalid request",
    "unauthorized": "Unauthorized",
    "forbidden": "Forbidden",
    "not_found": "Not found",
    "not_ranked": "Not ranked",
    "completion_conflict": "Completion conflict",
    "season_closed": "Season closed",
    "user_erased": "User erased",
    "payload_too_large": "Payload too large",
    "unsupported_media_type": "Unsupported media type",
    "rate_limited": "Too many requests",
    "rebuilding": "Board is being rebuilt",
    "unavailable": "Service unavailable",
    "method_not_allowed": "Method not allowed",
    "internal_error": "Internal error",
}


class Problem(Exception):
    """An error a client should see, with a contract code and a safe detail."""

    def __init__(self, code: str, detail: str, retry_after: int | None = None) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.status = STATUS[code]
        self.retry_after = retry_after
