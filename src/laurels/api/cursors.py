"""Opaque paging cursors: a position on a board (score, tie-break, member),
sealed so a client can neither read nor forge one.

A cursor names the last entry a page showed, and that entry may be an
anonymous learner, whose id the board never shows: so the position is
encrypted and authenticated (AES-GCM, a key derived from the learner-token
secret, shared by every process), with the board it belongs to as
associated data. A cursor of another board, or a malformed one, is 422.

The nonce is derived from the board and the position (HMAC-SHA256 under a
key of its own; synthetic, as in AES-GCM-SIV): one position of one board
always seals to the same cursor, in every process, so a page's body, and
its ETag, change only when the page does (a random nonce made a new `next`
at each cache refill). A nonce repeats only with its plaintext, which is
what GCM requires; two equal cursors tell only that they name one place.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from laurels.api.problems import Problem
from laurels.core.ranking import Position
from laurels.process.settings import accepted, current

NONCE_BYTES = 12


class Cursors:
    def __init__(self, secret: str) -> None:
        """`secret`: the learner-token secret (while it rotates, `new,old`:
        cursors are sealed with the new one, opened with either)."""
        keys = [hashlib.sha256(b"laurels cursor key\0" + s.encode()).digest()
                for s in accepted(secret)]
        self._aead = AESGCM(keys[0])
        self._openers = [AESGCM(k) for k in keys]
        self._nonce_key = hashlib.sha256(b"laurels cursor nonce\0"
                                         + current(secret).encode()).digest()

    def encode(self, board: str, position: Position) -> str:
        plain = orjson.dumps(list(position))
        nonce = hmac.new(self._nonce_key, board.encode() + b"\0" + plain,
                         hashlib.sha256).digest()[:NONCE_BYTES]
        sealed = self._aead.encrypt(nonce, plain, board.encode())
        return base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")

    def decode(self, board: str, cursor: str) -> Position:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            for opener in self._openers:
                try:
                    plain = opener.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:],
                                           board.encode())
                    break
                except InvalidTag:
                    continue
            else:
                raise InvalidTag
            a, b, c = orjson.loads(plain)
            return int(a), int(b), int(c)
        except (ValueError, TypeError, InvalidTag, orjson.JSONDecodeError):
            raise Problem("validation_error", "after: not a cursor of this board") from None
