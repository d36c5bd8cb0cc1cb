"""Commands packed by hiredis (board/connection.py, HiredisPacking) are the
bytes redis-py's own asyncio packer sends, and what hiredis does not take
goes redis-py's way (its errors included)."""

from __future__ import annotations

import pytest
from redis.asyncio.connection import Connection
from redis.exceptions import DataError

from laurels.board.connection import PackedConnection

pytestmark = pytest.mark.once

COMMANDS = [
    ("EVALSHA", "0123abcd", 3, "laurels:{weekly:2026-W49}:shared:current", "k2", "k3",
     "", "0000000000000000042", 1, 1000000, "Ada Lovelace", "Zoë ✓", b"\x00\xff raw"),
    ("CONFIG GET", "maxmemory"),
    (b"CLIENT SETNAME", "laurels"),
    ("ZADD", "board", -1.5, "m", 0.1, "n", 1e20, "o", -0.0, "p"),
    ("SET", "big", 2**70),
    ("SET", "view", memoryview(b"bytes")),
    ("SET", "array", bytearray(b"bytes")),
]


def _joined(chunks: list[bytes | memoryview]) -> bytes:
    return b"".join(bytes(c) for c in chunks)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: str(c[0]))
def test_hiredis_packs_what_redis_py_packs(command: tuple[object, ...]) -> None:
    ours, theirs = PackedConnection(), Connection()
    assert _joined(ours.pack_command(*command)) == _joined(theirs.pack_command(*command))


def test_what_redis_py_refuses_is_refused() -> None:
    with pytest.raises(DataError):
        PackedConnection().pack_command("SET", "flag", True)
    with pytest.raises(DataError):
        PackedConnection().pack_command("SET", "none", None)


@pytest.mark.parametrize(("options", "value"), [
    ({"encoding": "latin-1"}, "Zoë"),
    ({"encoding": "utf-8", "encoding_errors": "replace"}, "Zoë \ud800"),  # a lone surrogate
])
def test_another_encoding_is_packed_by_redis_py(options: dict[str, str], value: str) -> None:
    command = ("SET", "name", value)
    expected = _joined(Connection(**options).pack_command(*command))  # type: ignore[arg-type]
    assert _joined(PackedConnection(**options).pack_command(*command)) == expected  # type: ignore[arg-type]
    assert b"Zo\xeb\r\n" in expected or b"Zo\xc3\xab ?\r\n" in expected  # (not UTF-8 strict)
