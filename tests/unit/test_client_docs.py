"""docs/client.md, the reference of laurels.client, cannot fall behind the
code: every public method of both clients with its exact signature and its
endpoint, every result type with its fields as declared, every exception with
its code, every exported name; and its Python examples compile."""

from __future__ import annotations

import ast
import inspect
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, is_typeddict

import pytest

import laurels.client as module
from laurels.client import ERRORS, AsyncClient, Client, LaurelsError

pytestmark = pytest.mark.once

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"
ENDPOINT = re.compile(r"`((?:GET|POST|PUT|DELETE) /v1/[^`\s]*)`")


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def signature(name: str, fn: Any, returns: bool = True) -> str:
    """`name(params) -> returns` as the reference writes it: annotations as
    in the source (this module's are strings), defaults as their repr."""
    sig = inspect.signature(fn)
    parts: list[str] = []
    starred = False
    for p in sig.parameters.values():
        if p.name == "self":
            continue
        text = p.name
        if p.kind is p.VAR_POSITIONAL:
            text, starred = f"*{text}", True
        elif p.kind is p.VAR_KEYWORD:
            text = f"**{text}"
        elif p.kind is p.KEYWORD_ONLY and not starred:
            parts.append("*")
            starred = True
        if p.annotation is not p.empty:
            text += f": {p.annotation}"
        if p.default is not p.empty:
            text += f" = {p.default!r}"
        parts.append(text)
    out = f"{name}({', '.join(parts)})"
    if returns and sig.return_annotation is not sig.empty:
        out += f" -> {sig.return_annotation}"
    return out


def methods(cls: type[Client] | type[AsyncClient]) -> Iterator[tuple[str, list[str]]]:
    """Every public method of a client and the signatures it is written with
    (one per overload)."""
    instance = cls("http://laurels.test")
    try:
        for name in dir(instance):
            if name.startswith("_") or not callable(getattr(instance, name)):
                continue
            static = inspect.getattr_static(cls, name)
            overloads = typing.get_overloads(static) if inspect.isfunction(static) else []
            yield name, ([signature(name, f) for f in overloads] or
                         [signature(name, getattr(instance, name))])
    finally:
        del instance  # its httpx client never connected: nothing to close


def test_the_reference_has_every_method_with_its_signature(doc: str) -> None:
    seen = set()
    for cls in (Client, AsyncClient):
        for name, signatures in methods(cls):
            seen.add(name)
            for text in signatures:
                assert f"`{text}`" in doc, f"docs/client.md lacks {cls.__name__}.{text}"
    assert {"board", "friends", "completions", "void", "notifications", "pages",
            "post_completions", "close", "aclose", "league", "cohort", "league_history",
            "league_summary"} <= seen


def test_the_reference_has_the_constructors(doc: str) -> None:
    for cls in (Client, AsyncClient):
        text = signature(cls.__name__, cls.__init__, returns=False)
        assert f"`{text}`" in doc, f"docs/client.md lacks {text}"


def test_every_call_documents_its_endpoint_in_both_places(doc: str) -> None:
    instance = Client("http://laurels.test")
    for name in dir(Client):
        call = getattr(instance, name)
        if name.startswith("_") or not callable(call):
            continue
        assert call.__doc__, f"{name} has no docstring"
        if name in ("pages", "close"):
            continue
        endpoints = ENDPOINT.findall(call.__doc__)
        assert endpoints, f"the docstring of {name} names no endpoint"
        for endpoint in endpoints:
            assert endpoint in doc, f"docs/client.md lacks {endpoint} ({name})"


def fields(kind: Any) -> dict[str, str]:
    """A TypedDict's fields as written in the source (with a base's first)."""
    return {k: getattr(v, "__forward_arg__", str(v)) for k, v in kind.__annotations__.items()}


def test_every_result_type_is_written_as_declared(doc: str) -> None:
    kinds = [getattr(module, n) for n in module.__all__ if is_typeddict(getattr(module, n))]
    assert len(kinds) > 20
    for kind in kinds:
        block = re.search(rf"^class {kind.__name__}\((\w+)\):.*\n((?:    .*\n)*)", doc, re.M)
        assert block, f"docs/client.md lacks `class {kind.__name__}(...)`"
        declared = fields(kind)
        if block.group(1) != "TypedDict":  # a subclass: the base's fields are the base's
            base = fields(getattr(module, block.group(1)))
            assert list(declared.items())[:len(base)] == list(base.items()), kind.__name__
            declared = {k: v for k, v in declared.items() if k not in base}
        lines = [line.split("#")[0].strip() for line in block.group(2).splitlines()]
        written = [line for line in lines if line and not line.startswith('"""')]
        assert written == [f"{k}: {v}" for k, v in declared.items()], kind.__name__


def test_every_exception_and_exported_name_is_in_the_reference(doc: str) -> None:
    classes: list[type[LaurelsError]] = [LaurelsError, *ERRORS.values()]
    for cls in classes:
        assert f"`{cls.__name__}`" in doc, cls.__name__
        assert f"`{cls.code}`" in doc, cls.code
        assert cls.__doc__, cls.__name__
    for name in module.__all__:
        assert re.search(rf"\b{name}\b", doc), f"docs/client.md never names {name}"


def test_the_python_examples_compile(doc: str) -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", doc, re.M | re.S)
    assert len(blocks) >= 3
    for block in blocks:  # (`async for` as in a coroutine)
        compile(block, str(DOC), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
