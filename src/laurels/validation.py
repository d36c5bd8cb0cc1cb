"""Strict validation of the contract's domain values (pure).

A JSON `true`, `1.5` or `"42"` is not an integer; `completed_at` needs an offset.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from laurels.ranking import USER_ID_MAX as USER_ID_MAX
from laurels.states import Visibility

COMPLETION_ID_RE = r"^[A-Za-z0-9._:-]{1,128}$"
GROUP_ID_RE = r"^[A-Za-z0-9._:-]{1,64}$"
MEMBER_IDS_MAX = 10_000  # ids in one membership change
GROUP_MEMBERS_MAX = 100_000
FRIENDS_MAX = 1_000
_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$")

UserId = Annotated[StrictInt, Field(ge=1, le=USER_ID_MAX)]
Points = Annotated[StrictInt, Field(ge=1, le=1_000_000)]


M = TypeVar("M", bound=BaseModel)


class Invalid(ValueError):
    """Bad input; the message names the field and is safe to show."""


def parse_instant(text: str) -> datetime:
    """RFC 3339 date-time with an offset (`Z` or `+hh:mm`)."""
    if not _RFC3339.match(text):
        raise Invalid("completed_at must be an RFC 3339 date-time with an offset, "
                      "e.g. 2026-11-30T10:00:00Z")
    norm = text.replace("z", "Z").replace("t", "T").replace(" ", "T")
    if "." in norm:  # Python keeps microseconds: cut nanoseconds off
        head, _, tail = norm.partition(".")
        digits = re.match(r"[0-9]+", tail)
        if digits is None:  # pragma: no cover - the pattern guarantees digits
            raise Invalid("completed_at is not a valid date-time")
        norm = f"{head}.{digits.group(0)[:6]:0<6}{tail[digits.end():]}"
    try:
        at = datetime.fromisoformat(norm)
    except ValueError:
        raise Invalid("completed_at is not a valid date-time") from None
    if at.utcoffset() is None:  # pragma: no cover - the pattern demands an offset
        raise Invalid("completed_at needs an offset")
    try:
        at.astimezone(UTC)  # the season is chosen in UTC: it must exist there
    except OverflowError:  # e.g. 0001-01-01T00:30:00+01:00 lies before year 1 in UTC
        raise Invalid("completed_at is out of range") from None
    return at


def parse_user_id(text: str) -> int:
    if not re.fullmatch(r"[0-9]{1,19}", text) or not 1 <= int(text) <= USER_ID_MAX:
        raise Invalid(f"user_id must be an integer from 1 to {USER_ID_MAX}")
    return int(text)


class CompletionIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    completion_id: Annotated[StrictStr, Field(pattern=COMPLETION_ID_RE)]
    user_id: UserId
    points: Points
    completed_at: StrictStr | None = Field(
        None, description="RFC 3339 date-time with an offset; default: time of receipt",
        json_schema_extra={"format": "date-time"})


class BatchIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    completions: Annotated[list[Any], Field(min_length=1, max_length=1000)]


def _check_name(v: str, field: str = "display_name") -> str:
    """What `Field` cannot say of a name (its length it checks itself)."""
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in v):
        raise Invalid(f"{field} must not contain control characters")
    return v


class UserIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    display_name: StrictStr | None = Field(None, min_length=1, max_length=64)
    visibility: Visibility | None = None


class ReadIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    ids: Annotated[list[StrictInt], Field(max_length=1000)]


def describe(exc: ValidationError) -> str:
    """A short, safe message naming the first bad field."""
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(x) for x in err["loc"]) or "body"
        msg = err["msg"]
        if err["type"] == "string_pattern_mismatch" and loc.endswith("completion_id"):
            msg = "must match ^[A-Za-z0-9._:-]{1,128}$"
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


_CID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


@dataclass(frozen=True, slots=True)
class Completion:
    """A valid completion's fields (its instant is returned beside it)."""

    completion_id: str
    user_id: int
    points: int


def validate_completion(raw: Any) -> tuple[Completion, datetime | None]:
    if not isinstance(raw, dict):
        raise Invalid("a completion must be a JSON object")
    cid, uid, points, at_text = (raw.get("completion_id"), raw.get("user_id"),
                                 raw.get("points"), raw.get("completed_at"))
    # The common case, checked by hand at a fraction of the model's cost
    # (batches of 1,000): exactly the model's rules, `type() is` excluding
    # bool as StrictInt does. Anything else takes the model, for its message.
    if not (type(cid) is str and _CID.fullmatch(cid) and type(uid) is int
            and 1 <= uid <= USER_ID_MAX and type(points) is int and 1 <= points <= 1_000_000
            and (at_text is None or type(at_text) is str)):
        try:
            model = CompletionIn.model_validate(raw)
        except ValidationError as exc:
            raise Invalid(describe(exc)) from None
        cid, uid, points, at_text = (model.completion_id, model.user_id, model.points,
                                     model.completed_at)
    at = parse_instant(at_text) if at_text is not None else None
    return Completion(cid, uid, points), at


def validate_user(raw: Any) -> UserIn:
    if not isinstance(raw, dict):
        raise Invalid("body must be a JSON object")
    try:
        body = UserIn.model_validate(raw)
    except ValidationError as exc:
        raise Invalid(describe(exc)) from None
    if body.display_name is not None:
        _check_name(body.display_name)
    return body


def parse_group_id(text: str) -> str:
    if not re.fullmatch(GROUP_ID_RE, text):
        raise Invalid("group_id must match ^[A-Za-z0-9._:-]{1,64}$")
    return text


class GroupIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: StrictStr | None = Field(None, min_length=1, max_length=64)
    access: Literal["members", "public"] | None = None


class MembersIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    add: list[UserId] = Field(default_factory=list)
    remove: list[UserId] = Field(default_factory=list)


class RanksIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    user_ids: Annotated[list[UserId], Field(min_length=1, max_length=FRIENDS_MAX)]


def _validated(model: type[M], raw: Any) -> M:
    if not isinstance(raw, dict):
        raise Invalid("body must be a JSON object")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise Invalid(describe(exc)) from None


def validate_group(raw: Any) -> GroupIn:
    body = _validated(GroupIn, raw)
    if body.name is not None:
        _check_name(body.name, "name")
    return body


def validate_members(raw: Any) -> MembersIn:
    body = _validated(MembersIn, raw)
    if len(body.add) + len(body.remove) > MEMBER_IDS_MAX:
        raise Invalid(f"add and remove hold at most {MEMBER_IDS_MAX:,} ids in all")
    return body


def validate_ranks(raw: Any) -> RanksIn:
    return _validated(RanksIn, raw)


COMPLETION_ID_RE = r"^[A-Za-z0-9._:-]{1,128}$"


class ReasonIn(BaseModel):
    """An admin action's reason: required for void and suspend, optional for
    restore and unsuspend (`required` below)."""

    model_config = ConfigDict(extra="ignore")

    reason: StrictStr | None = Field(None, min_length=1, max_length=500)


def validate_reason(raw: Any, required: bool) -> ReasonIn:
    if raw is None and not required:
        return ReasonIn()
    body = _validated(ReasonIn, raw)
    if body.reason is None:
        if required:
            raise Invalid("reason: required, 1 to 500 characters")
        return body
    _check_name(body.reason, "reason")
    return body


def parse_completion_id(text: str) -> str:
    if not re.fullmatch(COMPLETION_ID_RE, text):
        raise Invalid("completion_id must match ^[A-Za-z0-9._:-]{1,128}$")
    return text
