"""Values held to their declared types at run time, field by field (as
Zulip's test_events.py holds each event to its schema): a `TypedDict`'s
keys, none missing, none it does not declare, each of its type. Used by
tests/unit/test_bodies.py (the declarations) and
tests/integration/test_payloads.py (what the writers write)."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import (
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)


def is_required(cls: Any, key: str, hint: Any) -> bool:
    """Whether a TypedDict's key is required. (Python 3.11 cannot tell
    `NotRequired` in a string annotation: `__required_keys__` then holds
    every key of a total TypedDict, so the hint itself is read.)"""
    if get_origin(hint) in (NotRequired, Required):
        return get_origin(hint) is Required
    return key in cls.__required_keys__


def keys_of(cls: Any) -> dict[str, tuple[bool, Any]]:
    """A TypedDict's keys: key -> (required, type)."""
    hints = get_type_hints(cls, include_extras=True)
    return {k: (is_required(cls, k, h), h) for k, h in hints.items()}


def problems(value: Any, declared: Any, where: str) -> list[str]:
    """How `value` is not of type `declared`, one line each naming the
    field (`where`, then the path to it); none when it is."""
    if is_typeddict(declared):
        return _object_problems(value, declared, where)
    origin, args = get_origin(declared), get_args(declared)
    if origin in (NotRequired, Required):
        return problems(value, args[0], where)
    if origin in (Union, types.UnionType):
        each = [problems(value, a, where) for a in args]
        return [] if [] in each else min(each, key=len)
    if origin is Literal:
        return [] if value in args else [f"{where}: {value!r} is none of {list(args)}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {value!r} is no list"]
        return [p for i, v in enumerate(value) for p in problems(v, args[0], f"{where}[{i}]")]
    if origin in (dict, Mapping) or declared in (dict, Mapping):
        return [] if isinstance(value, dict) else [f"{where}: {value!r} is no object"]
    return _scalar_problems(value, declared, where)


def _object_problems(value: Any, declared: Any, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {value!r} is no object ({declared.__name__})"]
    fields = keys_of(declared)
    out = [f"{where}.{k}: missing ({declared.__name__} requires it)"
           for k, (required, _) in fields.items() if required and k not in value]
    out += [f"{where}.{k}: not declared by {declared.__name__}" for k in value
            if k not in fields]
    for k in sorted(value.keys() & fields.keys()):
        out += problems(value[k], fields[k][1], f"{where}.{k}")
    return out


def _scalar_problems(value: Any, declared: Any, where: str) -> list[str]:
    if declared in (Any, object):
        return []
    if declared is None or declared is type(None):
        ok = value is None
    elif declared is bool:
        ok = isinstance(value, bool)
    elif declared is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif declared is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif declared is str:
        ok = isinstance(value, str)
    else:
        raise AssertionError(f"{where}: no check for a {declared!r}")
    return [] if ok else [f"{where}: {value!r} is no {getattr(declared, '__name__', declared)}"]
