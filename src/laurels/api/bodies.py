"""Request bodies: JSON only, at most 1 MiB (docs/contract.md, Errors).

Used by the FastAPI routes and by the fast lane, so both refuse alike:
415 unless JSON, 413 over 1 MiB (declared or received) or over 64 KiB for
a body whose largest valid form is small, 422 if malformed, nested deeper
than 32 levels, or if an object holds a key twice (at any depth).

A hostile body costs what a flat one of its size does: orjson parses it
(in C, refusing past 1,024 levels), the depth is checked on its value,
stopping at the first container past 32 levels, and only then is it read
a second time for duplicate keys, by the standard library's C scanner,
which never meets a body too deep for it (its slow path was 0.2 s of the
event loop for 1 MiB nested 1,000 deep).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import orjson

from laurels.api.problems import Problem

MAX_BODY_BYTES = 1024 * 1024
SMALL_BODY_BYTES = 64 * 1024  # the friends board, profiles, a group's settings, admin actions
MAX_DEPTH = 32  # nesting of arrays and objects
KEY_SHOWN_MAX = 64  # characters of a duplicate key named in the answer


def _too_large(limit: int) -> Problem:
    size = f"{limit // 1024} KiB" if limit < MAX_BODY_BYTES else f"{limit // 1024 // 1024} MiB"
    return Problem("payload_too_large", f"the body is larger than {size}")


def check_headers(content_type: str, content_length: str | None,
                  limit: int = MAX_BODY_BYTES) -> None:
    ctype = content_type.split(";")[0].strip().lower()
    if ctype != "application/json" and not (ctype.startswith("application/")
                                            and ctype.endswith("+json")):
        raise Problem("unsupported_media_type", "send the body as application/json")
    if content_length is not None and content_length.isascii() and content_length.isdigit() \
            and int(content_length) > limit:
        raise _too_large(limit)


async def read_json(chunks: AsyncIterator[bytes], limit: int = MAX_BODY_BYTES) -> Any:
    parts, size = [], 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        parts.append(chunk)
    return parse_json(b"".join(parts))


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether arrays and objects nest deeper than `limit` in a parsed
    value: a walk of its containers only, that stops at the first one too
    deep (for a flat body of 1,000 items, a look at each item's values)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def parse_json(data: bytes) -> Any:
    """The body's value, as orjson reads it; 422 if it is not JSON or if an
    object in it holds a key twice."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc):  # orjson's own limit: 1,024 levels
            raise Problem("validation_error", _DEEP) from None
        raise Problem("validation_error", "the body is not valid JSON") from None
    # No walk when the body has too few brackets to nest that deep (a
    # single completion, a profile: most bodies).
    if data.count(b"{") + data.count(b"[") > MAX_DEPTH and too_deep(value):
        raise Problem("validation_error", _DEEP)
    key = duplicate_key(data)
    if key is not None:
        shown = key if len(key) <= KEY_SHOWN_MAX else key[:KEY_SHOWN_MAX] + "..."
        raise Problem("validation_error", f"the body holds the key {orjson.dumps(shown).decode()} "
                                          "twice in one object")
    return value


_DEEP = f"the body nests arrays and objects deeper than {MAX_DEPTH} levels"


class _Duplicate(Exception):  # not a ValueError: json.loads must not mistake it for its own
    def __init__(self, key: str) -> None:
        self.key = key


def _no_duplicate(pairs: list[tuple[str, Any]]) -> None:
    if len(pairs) > 1 and len(dict(pairs)) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    # None: the values are not kept; the body's value is orjson's.


# One decoder for every body (json.loads with a hook made one a call: 1% of
# a single post's process); decode runs to its end without yielding.
_PAIRS = json.JSONDecoder(object_pairs_hook=_no_duplicate)


def duplicate_key(data: bytes) -> str | None:
    """A key that some object of `data` (JSON that orjson accepted) holds
    twice, or None.

    orjson keeps the last of duplicate keys and cannot report them, so the
    body is read a second time by the standard library's C scanner, which
    hands every object's pairs, in order, to a hook: measured, +1.3 ms on
    orjson's 0.3 ms for a batch of 1,000 completions (127 kB), +5 us for
    one completion. Its value is thrown away: the body's value stays
    orjson's (the two differ on NaN, lone surrogates and integers past 64
    bits, which orjson refuses or reads as floats). The C scanner recurses
    and gives up some levels short of orjson's 1,024, depending on the
    interpreter's stack; parse_json refuses a body that deep before it gets
    here, and a body the scanner cannot read for another reason is scanned
    by `_duplicate_key_slowly` instead, exact but slower."""
    text = data.decode()  # orjson accepted it: valid UTF-8
    try:
        _PAIRS.decode(text)
    except _Duplicate as dup:
        return dup.key
    except (RecursionError, ValueError):
        return _duplicate_key_slowly(text)
    return None


# A string (with its escapes) and the colon after it if it is a key; or a
# brace. Between two of these, valid JSON holds only numbers, literals,
# brackets, commas, colons and white space (arrays hold no keys).
_TOKEN = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"[ \t\n\r]*(:?)|([{}])')


def _duplicate_key_slowly(text: str) -> str | None:
    """`duplicate_key` without recursion, for valid JSON (measured: 0.07 to
    0.25 s for 1 MiB, depending on how many strings and objects it holds)."""
    open_objects: list[set[str]] = []
    keys: set[str] = set()
    tokens: list[tuple[str, str, str]] = _TOKEN.findall(text)
    for raw, colon, brace in tokens:
        if colon:
            key = str(json.loads(f'"{raw}"')) if "\\" in raw else raw
            if key in keys:
                return key
            keys.add(key)
        elif brace == "{":
            open_objects.append(keys)
            keys = set()
        elif brace:
            keys = open_objects.pop()
    return None
