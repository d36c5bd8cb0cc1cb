"""Opaque paging cursors: a position on a board (score, tie-break, member),
sealed so a client can neither read nor forge one.

A cursor names the last entry a page showed, and that entry may be an
anonymous learner, whose id the board never shows: so the position is
encrypted and authenticated (AES-GCM, a key derived from the learner-token
secret, shared by every process), with the board it belongs to as
associated data. A cursor of another board, or a malformed one, is 422.
"""

from __future__ import annotations

import base64
import hashlib
import os

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from laurels.api.problems import Problem
from laurels.ranking import Position

NONCE_BYTES = 12


class Cursors:
    def __init__(self, secret: str) -> None:
        key = hashlib.sha256(b"laurels cursor key\0" + secret.encode()).digest()
        self._aead = AESGCM(key)

    def encode(self, board: str, position: Position) -> str:
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, orjson.dumps(list(position)), board.encode())
        return base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")

    def decode(self, board: str, cursor: str) -> Position:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            plain = self._aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], board.encode())
            a, b, c = orjson.loads(plain)
            return int(a), int(b), int(c)
        except (ValueError, TypeError, InvalidTag, orjson.JSONDecodeError):
            raise Problem("validation_error", "after: not a cursor of this board") from None
