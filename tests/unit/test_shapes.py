"""What services hand routes (shapes.py) is what the API says it answers
(api/schemas.py, published as OpenAPI): every body's TypedDict has its
model, with the same keys, required alike (issue 41: typed doors)."""

from __future__ import annotations

import inspect
from typing import Literal, get_args, get_origin, get_type_hints, is_typeddict

import pytest
from pydantic import BaseModel

from laurels import shapes
from laurels.api import schemas

pytestmark = pytest.mark.once

# A shape whose model is not named after it (X -> XOut).
MODEL_OF = {"BoardPage": "BoardOut", "GroupBoardPage": "GroupBoardOut",
            "Verified": "VerifyOut", "MembersChanged": "MembersOut",
            "CohortBoard": "CohortOut", "Recorded": "CompletionOut",
            "Rejected": "RejectedOut", "ItemError": "ItemError",
            "LearnerProfile": "LearnerOut", "LeagueHistory": "LeagueHistoryOut",
            "Read": "ReadOut", "SeasonInfo": "BoardOut", "RebuildStatus": "RebuildOut"}
# SeasonInfo is a board's head: BoardOut without what a page adds.
PAGE_ONLY = {"total", "entries", "next"}


def shapes_and_models() -> list[tuple[str, type, type[BaseModel]]]:
    found = []
    for name, shape in inspect.getmembers(shapes, is_typeddict):
        model = getattr(schemas, MODEL_OF.get(name, f"{name}Out"), None)
        assert model is not None, f"shapes.{name} has no model in api/schemas.py"
        found.append((name, shape, model))
    return found


def test_every_shape_has_its_model_with_the_same_keys() -> None:
    pairs = shapes_and_models()
    assert len(pairs) >= 35, "the shapes are enumerated from the module"
    for name, shape, model in pairs:
        fields = model.model_fields
        keys = set(fields) - (PAGE_ONLY if name == "SeasonInfo" else set())
        assert set(shape.__annotations__) == keys, name
        # What the API requires, the service always gives (it may give more).
        required = {k for k in keys if fields[k].is_required()}
        assert required <= set(shape.__required_keys__), name


def literals(tp: object) -> set[str]:
    """The string values a type names (through unions and Optional)."""
    if get_origin(tp) is Literal:
        return {a for a in get_args(tp) if isinstance(a, str)}
    return set().union(*(literals(a) for a in get_args(tp))) if get_args(tp) else set()


def test_a_literal_of_a_shape_is_its_models() -> None:
    """Where both say which values a key takes, they say the same ones."""
    checked = 0
    for name, shape, model in shapes_and_models():
        hints = get_type_hints(shape)
        for key, info in model.model_fields.items():
            ours, theirs = literals(hints.get(key)), literals(info.annotation)
            if ours or theirs:
                assert ours == theirs, f"{name}.{key}: {ours} != {theirs}"
                checked += 1
    assert checked >= 10
