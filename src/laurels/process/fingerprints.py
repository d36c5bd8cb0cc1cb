"""What a deployment records of its secrets (process/deployment.py): fingerprints
that tell two secrets apart and give nothing of either, and a URL that may
carry a secret, masked. Issue 64: scrypt under a salt of the deployment's,
so that reading the table does not let anyone check guessed tokens."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from laurels.process.settings import accepted, current

SCRYPT: dict[str, int] = {"n": 2 ** 14, "r": 8, "p": 1, "dklen": 16}


def fingerprint(secret: str, salt: str | None = None) -> str | None:
    """What is recorded of a secret: a hash that tells two secrets apart and
    gives nothing of either (none for an unset secret). With the
    deployment's salt, scrypt (SCRYPT: about 40 ms and 16 MiB a guess, so
    whoever reads the table cannot check guessed tokens by the million;
    issue 64); without one, the keyed hash an earlier version recorded,
    used only to compare with its records until the deployment records a
    salt."""
    if not secret:
        return None
    if salt is None:
        return hmac.new(b"laurels deployment fingerprint", secret.encode(),
                        hashlib.sha256).hexdigest()[:32]
    return hashlib.scrypt(secret.encode(), salt=bytes.fromhex(salt), **SCRYPT).hex()


def fingerprints(secret: str, salt: str | None = None) -> dict[str, Any]:
    """A secret variable's record: the fingerprint of the value it is used
    with (`current`) and of every value it accepts (a rotation's `new,old`)."""
    return {"current": fingerprint(current(secret), salt),
            "accepts": [fingerprint(s, salt) for s in accepted(secret)] if secret else []}


def masked_url(url: str) -> str:
    """A URL as it may be shown and stored: its password and every query
    value masked (a receiver's secret travels in either)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:***@{host}"
    query = urlencode([(k, "***") for k, _ in parse_qsl(parts.query, keep_blank_values=True)],
                      safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def url_record(url: str | None, salt: str | None = None) -> dict[str, Any] | None:
    """What is recorded of a URL that may carry a secret: the URL masked,
    and a fingerprint of the whole that tells two apart (issue 64)."""
    if url is None:
        return None
    return {"shown": masked_url(url), "fingerprint": fingerprint(url, salt)}
