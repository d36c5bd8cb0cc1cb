"""Strict validation of the contract's domain values (pure).

A JSON `true`, `1.5` or `"42"` is not an integer; `completed_at` needs an offset."""

from __future__ import annotations

import functools
import re
import unicodedata
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, NamedTuple, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
)

from laurels.core.names import DisplayName
from laurels.core.ranking import USER_ID_MAX as USER_ID_MAX
from laurels.core.states import Visibility

COMPLETION_ID_RE = r"^[A-Za-z0-9._:-]{1,128}$"
GROUP_ID_RE = r"^[A-Za-z0-9._:-]{1,64}$"
# A board kind's name, and a tag: `kind:value` (CONTRACT.md, "Boards of a course,
# a track or a skill"). Neither holds a comma: ingest joins a completion's tags with one.
KIND_RE = r"^[a-z][a-z0-9_-]{0,31}$"
TAG_RE = r"^[a-z][a-z0-9_-]{0,31}:[A-Za-z0-9._-]{1,64}$"
TAG_LEN_MAX = 32 + 1 + 64  # the longest tag TAG_RE takes
TAGS_MAX = 16
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
    form = _RFC3339.match(text)
    if not form:
        raise Invalid("completed_at must be an RFC 3339 date-time with an offset, "
                      "e.g. 2026-11-30T10:00:00Z")
    fraction, norm = form.group(1), text  # the common forms go as they are (batches of 1,000)
    if (not text.isascii() or text[10] != "T" or form.group(2) == "z"
            or (fraction and len(fraction) not in (4, 7))):
        norm = text.replace("z", "Z").replace("t", "T").replace(" ", "T")
        if fraction:  # Python keeps microseconds: cut nanoseconds off
            head, _, tail = norm.partition(".")
            digits = tail[:len(tail) - len(tail.lstrip("0123456789"))]
            # (no ASCII digit first: the text as it is, which fromisoformat refuses)
            norm = f"{head}.{digits[:6]:0<6}{tail[len(digits):]}" if digits else text
    try:
        at = datetime.fromisoformat(norm)
    except ValueError:
        raise Invalid("completed_at is not a valid date-time") from None
    if at.year in (1, 9999):  # only there can an offset take it out of range in UTC
        try:
            at.astimezone(UTC)  # the season is chosen in UTC: it must exist there
        except OverflowError:  # e.g. 0001-01-01T00:30:00+01:00 lies before year 1 in UTC
            raise Invalid("completed_at is out of range") from None
    return at


# Ids in a path (and a learner token's `sub`) in their one canonical form.
# Python's own parsers take more than the store does, or than we should:
# int() takes "+5", " 5", "5_000" and "\u0665" (an Arabic-Indic 5); uuid.UUID
# takes "urn:uuid:...", braces, no hyphens and non-ASCII digits, which
# PostgreSQL's uuid type refuses (a 500). So each kind of id has one pattern,
# ASCII only, checked before any conversion.
_USER_ID = re.compile(r"[1-9][0-9]{0,18}")  # no sign, spaces or leading zeros
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
UUID_RE = f"^{_UUID.pattern}$"


def parse_user_id(text: str) -> int:
    """A user id as written in a URL or a token: ASCII digits, 1 to 2^63-1."""
    if not _USER_ID.fullmatch(text) or int(text) > USER_ID_MAX:
        raise Invalid(f"user_id must be an integer from 1 to {USER_ID_MAX}, in ASCII digits "
                      "without sign, spaces or leading zeros")
    return int(text)


def parse_uuid(text: str, field: str) -> str:
    """A UUID in its canonical form (8-4-4-4-12 hex digits, either case),
    returned in lower case, as PostgreSQL writes it."""
    if not _UUID.fullmatch(text):
        raise Invalid(f"{field} must be a UUID written as 8-4-4-4-12 hex digits, "
                      "e.g. 123e4567-e89b-12d3-a456-426614174000")
    return text.lower()


class CompletionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    completion_id: Annotated[StrictStr, Field(pattern=COMPLETION_ID_RE)]
    user_id: UserId
    points: Points
    completed_at: StrictStr | None = Field(
        None, description="RFC 3339 date-time with an offset; default: time of receipt",
        json_schema_extra={"format": "date-time"})
    tags: list[Annotated[StrictStr, Field(pattern=TAG_RE)]] | None = Field(
        None, max_length=TAGS_MAX,
        description="distinct `kind:value` strings; they put the completion on the boards of "
                    "the kinds defined (their order does not matter)")


class BatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    completions: Annotated[list[Any], Field(min_length=1, max_length=1000)]


def _check_name(v: str, field: str) -> str:
    """What `Field` cannot say of a free text (its length it checks itself)."""
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in v):
        raise Invalid(f"{field} must not contain control characters")
    return v


class ProfileIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    display_name: DisplayName | None = Field(
        None, description="1 to 64 characters, not blank, without control, format or "
                          "separator characters (Unicode Cc, Cf, Zl, Zp), not \"Anonymous\"")
    visibility: Visibility | None = None


class ReadIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ids: Annotated[list[StrictInt], Field(max_length=1000)]


def unknown_field(name: str) -> str:
    """A field a body does not define, named as the contract says (a name
    longer than a field's is cut: it is the client's text)."""
    return f"unknown field {name[:64]!r}" if name.isprintable() else "unknown field"


def describe(exc: ValidationError) -> str:
    """A short, safe message naming the first bad field."""
    parts = []
    for err in exc.errors()[:3]:
        if err["type"] == "extra_forbidden":  # CONTRACT.md, Errors: never silently passed
            parts.append(unknown_field(str(err["loc"][-1])))
            continue
        loc = ".".join(str(x) for x in err["loc"]) or "body"
        msg = err["msg"]
        if err["type"] == "string_pattern_mismatch" and loc.endswith("completion_id"):
            msg = "must match ^[A-Za-z0-9._:-]{1,128}$"
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


_CID = re.compile(r"[A-Za-z0-9._:-]{1,128}")  # COMPLETION_ID_RE, for fullmatch
# TAG_RE's fullmatch, a tag matched once (tags repeat; longer ones are not kept)
_TAG = functools.lru_cache(maxsize=100_000)(re.compile(TAG_RE[1:-1]).fullmatch)


def validate_tags(raw: Any) -> tuple[str, ...]:
    """A completion's tags, sorted (their order is not part of the payload)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise Invalid("tags: must be a list of strings")
    if len(raw) > TAGS_MAX:
        raise Invalid(f"tags: at most {TAGS_MAX} tags")
    listed = tuple(raw)
    for tag in listed:
        if type(tag) is not str:
            raise Invalid(f"tags: each tag must match {TAG_RE}")
    return _valid_tags(listed)


@functools.lru_cache(maxsize=4_096)
def _valid_tags(listed: tuple[str, ...]) -> tuple[str, ...]:
    """validate_tags' strings, checked and sorted once a list: a platform's
    completions repeat a few lists of tags (0.55 us of Python for three, a
    completion, checked each time; 0.21 so). A list refused raises and is
    not kept (an lru_cache keeps only what returns): no string longer than
    a tag is ever held."""
    for tag in listed:
        if len(tag) > TAG_LEN_MAX or not _TAG(tag):
            raise Invalid(f"tags: each tag must match {TAG_RE}")
    if len(set(listed)) != len(listed):
        raise Invalid("tags: must be distinct")
    return tuple(sorted(listed))


class Completion(NamedTuple):
    """A valid completion's fields (its instant is returned beside it)."""

    completion_id: str
    user_id: int
    points: int
    tags: tuple[str, ...] = ()


_COMPLETION_FIELDS = frozenset(CompletionIn.model_fields)


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
            and (at_text is None or type(at_text) is str) and _COMPLETION_FIELDS.issuperset(raw)):
        try:
            model = CompletionIn.model_validate(raw)
        except ValidationError as exc:
            raise Invalid(describe(exc)) from None
        cid, uid, points, at_text = (model.completion_id, model.user_id, model.points,
                                     model.completed_at)
    at = parse_instant(at_text) if at_text is not None else None
    tags = raw.get("tags")
    return Completion(cid, uid, points, validate_tags(tags) if tags is not None else ()), at


def validate_profile(raw: Any) -> ProfileIn:
    if not isinstance(raw, dict):
        raise Invalid("body must be a JSON object")
    try:
        return ProfileIn.model_validate(raw)
    except ValidationError as exc:
        raise Invalid(describe(exc)) from None


def parse_group_id(text: str) -> str:
    if not re.fullmatch(GROUP_ID_RE, text):
        raise Invalid("group_id must match ^[A-Za-z0-9._:-]{1,64}$")
    return text


class GroupIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: StrictStr | None = Field(None, min_length=1, max_length=64)
    access: Literal["members", "public"] | None = None
    # its team kind, or null for none; left out, it keeps the one it has
    team: StrictStr | None = Field(None, pattern=KIND_RE)


class MembersIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    add: list[UserId] = Field(default_factory=list)
    remove: list[UserId] = Field(default_factory=list)


class RanksIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

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


class ReasonIn(BaseModel):
    """An admin action's reason: required for void and suspend, optional for
    restore and unsuspend (`required` below)."""

    model_config = ConfigDict(extra="forbid")

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


class LearnerCorrectionIn(ReasonIn):
    """A bulk correction: its reason, and the season whose completions it
    corrects (any period's name or alias; none: every kept completion)."""

    season: StrictStr | None = Field(None, min_length=1, max_length=64)
    board: StrictStr | None = Field(
        None, description="`global` (default) or a board of a defined kind (`kind:value`): "
                          "then `season` is that board's, in its time zone, and only the "
                          "completions on that board change")


def validate_learner_correction(raw: Any, required: bool) -> LearnerCorrectionIn:
    if raw is None and not required:
        return LearnerCorrectionIn()
    body = _validated(LearnerCorrectionIn, raw)
    validate_reason({"reason": body.reason} if body.reason is not None else {}, required)
    return body


def parse_completion_id(text: str) -> str:
    if not _CID.fullmatch(text):
        raise Invalid("completion_id must match ^[A-Za-z0-9._:-]{1,128}$")
    return text
