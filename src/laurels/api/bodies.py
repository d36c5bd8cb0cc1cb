"""Request bodies: JSON only, at most 1 MiB (docs/contract.md, Errors).

Used by the FastAPI routes and by the fast lane, so both refuse alike:
415 unless JSON, 413 over 1 MiB (declared or received), 422 if malformed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from laurels.api.problems import Problem

MAX_BODY_BYTES = 1024 * 1024


def check_headers(content_type: str, content_length: str | None) -> None:
    ctype = content_type.split(";")[0].strip().lower()
    if ctype != "application/json" and not (ctype.startswith("application/")
                                            and ctype.endswith("+json")):
        raise Problem("unsupported_media_type", "send the body as application/json")
    if content_length is not None and content_length.isascii() and content_length.isdigit() \
            and int(content_length) > MAX_BODY_BYTES:
        raise Problem("payload_too_large", "the body is larger than 1 MiB")


async def read_json(chunks: AsyncIterator[bytes]) -> Any:
    parts, size = [], 0
    async for chunk in chunks:
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise Problem("payload_too_large", "the body is larger than 1 MiB")
        parts.append(chunk)
    try:
        return orjson.loads(b"".join(parts))
    except orjson.JSONDecodeError:
        raise Problem("validation_error", "the body is not valid JSON") from None
