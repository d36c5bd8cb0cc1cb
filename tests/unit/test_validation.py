"""Strict validation of domain values (docs/contract.md, Domain)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from laurels.api.bodies import _duplicate_key_slowly, duplicate_key, parse_json
from laurels.api.params import int_in
from laurels.api.problems import Problem
from laurels.core import validation
from laurels.core.names import display_name_problem
from laurels.core.validation import (
    TAG_LEN_MAX,
    Invalid,
    parse_completion_id,
    parse_instant,
    parse_user_id,
    parse_uuid,
    validate_completion,
    validate_profile,
    validate_tags,
)

pytestmark = pytest.mark.once

MAX = 2**63 - 1


def body(**over: Any) -> dict[str, Any]:
    b: dict[str, Any] = {"completion_id": "9001", "user_id": 42, "points": 1,
                         "completed_at": "2026-11-30T10:00:00Z"}
    b.update(over)
    return {k: v for k, v in b.items() if v is not ...}


def rejected(raw: Any, field: str | None = None) -> str:
    with pytest.raises(Invalid) as exc:
        validate_completion(raw)
    msg = str(exc.value)
    assert msg.strip(), "an Invalid message must not be empty"
    if field is not None:
        assert field in msg, msg
    return msg


# --- validate_completion -----------------------------------------------------

def test_tags_are_sorted_and_optional() -> None:
    assert validate_completion(body())[0].tags == ()
    assert validate_completion(body(tags=[]))[0].tags == ()
    item, _ = validate_completion(body(tags=["track:data", "course:python-101", "skill:SQL.2"]))
    assert item.tags == ("course:python-101", "skill:SQL.2", "track:data")
    assert validate_tags([f"k:{i}" for i in range(16)]) == tuple(sorted(
        f"k:{i}" for i in range(16)))


@pytest.mark.parametrize("tags", [
    "course:x", ["course"], ["course:"], ["Course:x"], ["course:x\n"], ["course:x,y"],
    ["_k:x"], ["k" * 33 + ":x"], ["k:" + "v" * 65], ["k:x", "k:x"], [f"k:{i}" for i in range(17)],
    [3], [None], 0, "", {}])
def test_malformed_tags(tags: Any) -> None:
    rejected(body(tags=tags), "tags")


def test_a_tag_longer_than_any_valid_one_is_not_kept() -> None:
    """Tags are matched once each and kept (a platform's few repeat); a
    string longer than any tag TAG_RE takes is refused without being kept,
    so a flood of long ones holds no memory and evicts nothing."""
    longest = "k" * 32 + ":" + "v" * 64
    assert len(longest) == TAG_LEN_MAX
    validate_tags([longest])
    kept = validation._TAG.cache_info().currsize
    for i in range(100):
        rejected(body(tags=[f"{i}" + "x" * 10_000]), "tags")
        rejected(body(tags=[longest + str(i)]), "tags")
    assert validation._TAG.cache_info().currsize == kept
    assert validate_tags([longest]) == (longest,)


def test_a_list_of_tags_is_checked_once_and_a_refused_one_not_kept() -> None:
    """A list of tags seen before is answered from what was checked (the
    same sorted tags); a refused list is
    refused every time and holds nothing."""
    listed = ["track:data", "course:python-101", "skill:sql"]
    first = validate_tags(listed)
    assert validate_tags(list(listed)) == first == tuple(sorted(listed))
    kept = validation._valid_tags.cache_info().currsize
    for _ in range(3):
        rejected(body(tags=["course:x", "course:x"]), "tags")
        rejected(body(tags=["course:x", "y" * 10_000]), "tags")
        rejected(body(tags=["course:x", 3]), "tags")
    assert validation._valid_tags.cache_info().currsize == kept


def test_valid_completion() -> None:
    item, at = validate_completion(body())
    assert item.completion_id == "9001"
    assert item.user_id == 42
    assert item.points == 1
    assert at == datetime(2026, 11, 30, 10, tzinfo=UTC)


def test_completed_at_is_optional() -> None:
    item, at = validate_completion(body(completed_at=...))
    assert at is None
    assert item.user_id == 42
    _, at = validate_completion(body(completed_at=None))
    assert at is None


@pytest.mark.parametrize("name", ["extra", "tag", "completedAt", "x" * 200])
def test_extra_fields_are_refused_by_name(name: str) -> None:
    """Issue 65, point 4 (CONTRACT.md, Errors): never ignored."""
    with pytest.raises(Invalid) as refused:
        validate_completion(body(**{name: "x"}))
    assert str(refused.value) == f"unknown field {name[:64]!r}"


@pytest.mark.parametrize("field", ["user_id", "points"])
@pytest.mark.parametrize("value", [True, False, 1.5, 1.0, "42", None, [1], {"a": 1}])
def test_non_integers_rejected(field: str, value: Any) -> None:
    rejected(body(**{field: value}), field)


@pytest.mark.parametrize("field", ["completion_id", "user_id", "points"])
def test_required_fields(field: str) -> None:
    rejected(body(**{field: ...}), field)


@pytest.mark.parametrize("value", [0, -1, 2**63, 2**64])
def test_user_id_out_of_range(value: int) -> None:
    rejected(body(user_id=value), "user_id")


@pytest.mark.parametrize("value", [1, MAX])
def test_user_id_bounds_accepted(value: int) -> None:
    item, _ = validate_completion(body(user_id=value))
    assert item.user_id == value


@pytest.mark.parametrize("value", [0, -5, 1_000_001])
def test_points_out_of_range(value: int) -> None:
    rejected(body(points=value), "points")


@pytest.mark.parametrize("value", [1, 1_000_000])
def test_points_bounds_accepted(value: int) -> None:
    item, _ = validate_completion(body(points=value))
    assert item.points == value


@pytest.mark.parametrize("cid", ["A-z._:9", "a", "x" * 128, "0", "::--..__"])
def test_completion_id_accepted(cid: str) -> None:
    item, _ = validate_completion(body(completion_id=cid))
    assert item.completion_id == cid


@pytest.mark.parametrize("cid", ["x" * 129, "a b", "", "a/b", "abc\n", "é", "a\x00", "a+b"])
def test_completion_id_rejected(cid: str) -> None:
    rejected(body(completion_id=cid), "completion_id")


@pytest.mark.parametrize("cid", [9001, None, True, ["9001"]])
def test_completion_id_must_be_a_string(cid: Any) -> None:
    rejected(body(completion_id=cid), "completion_id")


@pytest.mark.parametrize("raw", [None, [], "x", 42, [body()]])
def test_completion_must_be_an_object(raw: Any) -> None:
    rejected(raw)


# --- completed_at --------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "2026-11-30T10:00:00",          # no offset
    "2026-11-30T10:00",             # no seconds, no offset
    "2026-11-30",                   # a date
    "2026-11-30T10:00:00+0530",     # offset without colon
    "2026-11-30T10:00:00+05",       # short offset
    "2026-11-30T25:00:00Z",         # no hour 25
    "2026-02-30T10:00:00Z",         # no Feb 30
    "2026-11-30T10:00:00.Z",        # empty fraction
    "2026-11-30T10:00:00.1234567890Z",  # 10 fractional digits
    "2026-11-30T10:00:00Z ",
    "2026-11-30T10:00:00Z\n",
    "\uff12\uff10\uff12\uff16-11-30T10:00:00Z",     # non-ASCII digits
    "now",
    "",
])
def test_completed_at_rejected(text: str) -> None:
    rejected(body(completed_at=text), "completed_at")


@pytest.mark.parametrize("value", [1764496800, 1.5, True, ["2026-11-30T10:00:00Z"]])
def test_completed_at_must_be_a_string(value: Any) -> None:
    rejected(body(completed_at=value), "completed_at")


@pytest.mark.parametrize("text,expected", [
    ("2026-11-30T10:00:00Z", datetime(2026, 11, 30, 10, tzinfo=UTC)),
    ("2026-11-30T10:00:00z", datetime(2026, 11, 30, 10, tzinfo=UTC)),
    ("2026-11-30t10:00:00Z", datetime(2026, 11, 30, 10, tzinfo=UTC)),
    ("2026-11-30T15:30:00+05:30", datetime(2026, 11, 30, 10, tzinfo=UTC)),
    ("2026-11-30T05:00:00-05:00", datetime(2026, 11, 30, 10, tzinfo=UTC)),
    ("2026-11-30T10:00:00+00:00", datetime(2026, 11, 30, 10, tzinfo=UTC)),
    ("2026-11-30T10:00:00.5Z", datetime(2026, 11, 30, 10, 0, 0, 500000, tzinfo=UTC)),
    ("2026-11-30T10:00:00.123456Z", datetime(2026, 11, 30, 10, 0, 0, 123456, tzinfo=UTC)),
    ("2026-11-30T10:00:00.123456789Z", datetime(2026, 11, 30, 10, 0, 0, 123456, tzinfo=UTC)),
    ("2026-11-30T10:00:00.999999999z", datetime(2026, 11, 30, 10, 0, 0, 999999, tzinfo=UTC)),
    ("2026-11-30T15:30:00.123456789+05:30",
     datetime(2026, 11, 30, 10, 0, 0, 123456, tzinfo=UTC)),
])
def test_completed_at_accepted(text: str, expected: datetime) -> None:
    _, at = validate_completion(body(completed_at=text))
    assert at is not None
    assert at.utcoffset() is not None
    assert at == expected
    assert parse_instant(text) == expected


def test_offset_is_kept() -> None:
    at = parse_instant("2026-11-30T15:30:00+05:30")
    assert at.utcoffset() == timedelta(hours=5, minutes=30)


def test_instants_with_different_offsets_compare_equal() -> None:
    a = parse_instant("2026-11-30T10:00:00Z")
    b = parse_instant("2026-11-30T15:30:00+05:30")
    c = parse_instant("2026-11-30T04:00:00.000000000-06:00")
    assert a == b == c
    assert a.astimezone(UTC) == b.astimezone(UTC) == c.astimezone(UTC)


def test_parse_instant_message_not_empty() -> None:
    with pytest.raises(Invalid) as exc:
        parse_instant("2026-11-30T10:00:00")
    assert "completed_at" in str(exc.value)


# --- parse_user_id -------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [("1", 1), ("42", 42), (str(MAX), MAX)])
def test_parse_user_id_ok(text: str, expected: int) -> None:
    assert parse_user_id(text) == expected


@pytest.mark.parametrize("text", [
    "0", "-1", "+1", str(2**63), "99999999999999999999", "", " 1", "1 ", "1.0", "abc",
    "1e3", "0x10", "\u0661", "\uff11", "1\n", "1_000",
    "+5", " 5", "5_000", "\u0665", "0x5", "05", "007", "00", "5\t", "\u0665\u0660",
    "\U0001d7d3", "5\u200b", "0" + str(MAX), "-0",
])
def test_parse_user_id_rejected(text: str) -> None:
    with pytest.raises(Invalid) as exc:
        parse_user_id(text)
    assert "user_id" in str(exc.value)


# --- validate_profile -------------------------------------------------------------

def user_rejected(raw: Any) -> str:
    with pytest.raises(Invalid) as exc:
        validate_profile(raw)
    msg = str(exc.value)
    assert msg.strip()
    return msg


def test_user_empty_body_is_fine() -> None:
    u = validate_profile({})
    assert u.display_name is None
    assert u.visibility is None


@pytest.mark.parametrize("name", ["", "x" * 65, "a\x07b", "\x00", "tab\there", "new\nline",
                                  "del\x7f", "\x85", "\ud800"])
def test_bad_names(name: str) -> None:
    assert "display_name" in user_rejected({"display_name": name})


@pytest.mark.parametrize("name", ["x" * 64, "Ådä 😀", "Ada", "a" * 63 + "😀", "😀" * 64,
                                  "Zoë 山田", "Ada Lovelace", "Anonymous Ada", "Anony mous",
                                  "\u0639\u0644\u064a", "e\u0301",
                                  "🏳\ufe0f", "Ada\u00a0L."])
def test_good_names(name: str) -> None:
    assert validate_profile({"display_name": name}).display_name == name
    assert display_name_problem(name) is None


@pytest.mark.parametrize("name,reason", [
    ("\u202eevil", "U+202E"),        # right-to-left override (Cf)
    ("Ada\u202e", "U+202E"),
    ("\u2066Ada\u2069", "U+2066"),   # bidi isolates (Cf)
    ("\u200b", "U+200B"),            # zero-width space (Cf)
    ("Ad\u200ba", "U+200B"),
    ("\u200d", "U+200D"),            # zero-width joiner (Cf)
    ("\ufeffAda", "U+FEFF"),         # byte order mark (Cf)
    ("\u00ad", "U+00AD"),            # soft hyphen (Cf)
    ("\U000e0041", "U+E0041"),       # tag character (Cf)
    ("\u2028", "U+2028"),            # line separator (Zl)
    ("Ada\u2029", "U+2029"),         # paragraph separator (Zp)
    ("a\x1bb", "U+001B"),            # escape (Cc)
    ("   ", "blank"),
    ("\t", "U+0009"),
    ("\u3000", "blank"),             # ideographic space
    ("\u00a0\u2003", "blank"),       # no-break and em spaces
    ("\u3164", "blank"),             # Hangul filler: a letter that shows nothing
    ("\u2800 \u2800", "blank"),      # braille blank
    ("\ufe0f", "blank"),             # a lone variation selector
    ("Anonymous", "Anonymous"),
    ("anonymous", "Anonymous"),
    ("ANONYMOUS", "Anonymous"),
    (" ANONYMOUS ", "Anonymous"),
    ("aNoNyMoUs", "Anonymous"),
    ("\u3000Anonymous\u00a0", "Anonymous"),
    ("Anonymous\u3164", "Anonymous"),
    ("\uff21\uff4e\uff4f\uff4e\uff59\uff4d\uff4f\uff55\uff53", "Anonymous"),  # fullwidth
    # Look-alikes (UTS #39 skeletons, issue 39): a Cyrillic dze for the s, a
    # Cyrillic A, an accent, "rn" for "m", Greek omicron for the o.
    ("Anonymou\u0455", "look-alike"),
    ("\u0410nonymous", "look-alike"),
    ("An\u00f3nymous", "look-alike"),
    ("Ano\u0301nymous", "look-alike"),
    ("Anonyrnous", "look-alike"),
    ("An\u03bfnym\u03bfus", "look-alike"),
])
def test_spoofing_names(name: str, reason: str) -> None:
    problem = display_name_problem(name)
    assert problem is not None and reason in problem
    msg = user_rejected({"display_name": name})
    assert msg.startswith("display_name: ") and reason in msg, msg


@pytest.mark.parametrize("name", [42, True, ["Ada"]])
def test_name_must_be_string(name: Any) -> None:
    assert "display_name" in user_rejected({"display_name": name})


@pytest.mark.parametrize("vis", ["public", "anonymous", "hidden"])
def test_visibilities(vis: str) -> None:
    u = validate_profile({"visibility": vis, "display_name": "Ada"})
    assert u.visibility == vis
    assert u.display_name == "Ada"


@pytest.mark.parametrize("vis", ["secret", "Public", "", 1, True])
def test_bad_visibility(vis: Any) -> None:
    assert "visibility" in user_rejected({"visibility": vis})


@pytest.mark.parametrize("raw", [None, [], "Ada", 1])
def test_user_body_must_be_an_object(raw: Any) -> None:
    user_rejected(raw)


# --- ids in a path ---------------------------------------------------------------

UUID = "12345678-1234-5678-1234-567812345678"


@pytest.mark.parametrize("text", [UUID, UUID.upper(), "abcdef01-2345-6789-abcd-ef0123456789",
                                  "ABCDEF01-2345-6789-abcd-EF0123456789",
                                  "00000000-0000-0000-0000-000000000000"])
def test_parse_uuid_canonical(text: str) -> None:
    assert parse_uuid(text, "rebuild_id") == text.lower()


@pytest.mark.parametrize("text", [
    f"urn:uuid:{UUID}", f"{{{UUID}}}", UUID.replace("-", ""), f" {UUID}", f"{UUID} ",
    f"{UUID}\n", UUID[:-1], UUID + "0", UUID[:-1] + "\uff18", UUID[:-1] + "g",
    UUID.replace("-", "_"), "12345678-1234-5678-12345-67812345678", "", "nope",
    "123456781234-5678-1234-567812345678", UUID[:-1] + "\u0668",
])
def test_parse_uuid_rejected(text: str) -> None:
    with pytest.raises(Invalid) as exc:
        parse_uuid(text, "delivery_id")
    assert "delivery_id" in str(exc.value) and "8-4-4-4-12" in str(exc.value)


@pytest.mark.parametrize("text", ["a", "A-z._:9", "x" * 128, "urn:uuid:1"])
def test_parse_completion_id_ok(text: str) -> None:
    assert parse_completion_id(text) == text


@pytest.mark.parametrize("text", ["", "x" * 129, "a b", "a/b", "abc\n", "\u00e9", "a\x00",
                                  "a+b", "\uff41", "a%2Fb", "a\u200b"])
def test_parse_completion_id_rejected(text: str) -> None:
    with pytest.raises(Invalid) as exc:
        parse_completion_id(text)
    assert "completion_id" in str(exc.value)


@pytest.mark.parametrize("text,expected", [("1", 1), ("1000", 1000), ("05", 5), ("0", None),
                                           ("1001", None), ("+5", None), (" 5", None),
                                           ("5_0", None), ("5.0", None), ("\u0665", None),
                                           ("", None), ("1e2", None), ("0x5", None)])
def test_query_int(text: str, expected: int | None) -> None:
    if expected is not None:
        assert int_in("limit", text, 1, 1000) == expected
        return
    with pytest.raises(Problem) as exc:
        int_in("limit", text, 1, 1000)
    assert exc.value.code == "validation_error"
    assert exc.value.detail == "limit: must be an integer from 1 to 1000"


# --- JSON bodies: duplicate keys (api/bodies.py) -----------------------------------

DUPLICATES = [
    (b'{"a":1,"a":2}', "a"),
    (b'{"completion_id":"dup-a","completion_id":"dup-b","user_id":1}', "completion_id"),
    (b'{"a":1,"b":{"c":1,"d":2,"c":3}}', "c"),
    (b'{"completions":[{"x":1},{"y":1,"y":1}]}', "y"),
    (b'[{"a":1},{"b":1,"b":1}]', "b"),
    (b'{"\\u0061":1,"a":2}', "a"),              # the same key, escaped
    (b'{"a" : 1, "a"\n:2}', "a"),
    (b'{"":1,"":2}', ""),
    (b'{"k\\\\":1,"k\\\\":2}', "k\\"),        # a key ending in a backslash
    (b'{"x":"},{\\"x\\":","x":3}', "x"),           # braces and quotes inside a string
    (b'{"a":' * 1000 + b'{"b":1,"b":2}' + b"}" * 1000, "b"),  # deeper than json's recursion
]
UNIQUE = [
    b'{"a":1,"b":2}', b'[{"a":1},{"a":1}]', b'{"a":{"a":{"a":1}}}',
    b'{"a":[{"b":1},{"b":2}],"b":1}', b'{"k\\\\":1,"k":2}', b'{"x":"\\"x\\":1,\\"x\\":2"}',
    b'{"x":"\\"x\\" : 1"}', b"{}", b"[]", b'"a"', b"1", b"null", b'{"a":{}, "b":[{}, {}]}',
    b'{"a":' * 1000 + b'{"b":1,"c":2}' + b"}" * 1000,
    b"[" * 1024 + b"]" * 1024,
]


def deep(raw: bytes) -> bool:
    """Nested deeper than 32 levels: parse_json refuses it before it looks
    for duplicate keys (a hostile depth costs what a flat body does)."""
    return raw.count(b"{") + raw.count(b"[") > 32


@pytest.mark.parametrize("raw,key", DUPLICATES)
def test_duplicate_keys(raw: bytes, key: str) -> None:
    assert duplicate_key(raw) == key
    assert _duplicate_key_slowly(raw.decode()) == key  # the scan for the deepest bodies
    with pytest.raises(Problem) as exc:
        parse_json(raw)
    assert exc.value.code == "validation_error"
    assert ("deeper than 32 levels" if deep(raw) else "twice") in exc.value.detail


@pytest.mark.parametrize("raw", UNIQUE)
def test_no_duplicate_keys(raw: bytes) -> None:
    assert duplicate_key(raw) is None
    assert _duplicate_key_slowly(raw.decode()) is None
    if deep(raw):
        with pytest.raises(Problem, match="deeper than 32 levels"):
            parse_json(raw)
    else:
        parse_json(raw)


@pytest.mark.parametrize("raw", [
    b'{"a":1}', b'{"n":18446744073709551616}', b'{"n":-0}', b'{"s":"\\u0000"}',
    b'{"f":1.5e300}', b' {"a":[1,2.5,"x",true,null]} \n', b'{"u":"\\ud83d\\ude00 \xc3\xa9"}',
])
def test_valid_bodies_read_as_orjson_reads_them(raw: bytes) -> None:
    import orjson

    assert parse_json(raw) == orjson.loads(raw)
    assert type(parse_json(raw)) is type(orjson.loads(raw))


@pytest.mark.parametrize("raw", [b"NaN", b'{"a":NaN}', b'{"a":Infinity}', b'"\\ud800"',
                                 b'{"a":1e400}', b"{nope", b"", b"\xef\xbb\xbf{}",
                                 b"[" * 1025 + b"]" * 1025, b'{"a":1}x'])
def test_what_orjson_refuses_stays_refused(raw: bytes) -> None:
    with pytest.raises(Problem) as exc:
        parse_json(raw)
    assert exc.value.code == "validation_error"
    assert exc.value.detail == ("the body nests arrays and objects deeper than 32 levels"
                                if deep(raw) else "the body is not valid JSON")


def _parse_instant_before(text: str) -> datetime:
    """parse_instant as it was before its fast path for the common forms
    (2026-12-05): every text normalized, every instant checked in UTC."""
    if not re.match(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$",
                    text):
        raise Invalid("completed_at must be an RFC 3339 date-time with an offset, "
                      "e.g. 2026-11-30T10:00:00Z")
    norm = text.replace("z", "Z").replace("t", "T").replace(" ", "T")
    if "." in norm:
        head, _, tail = norm.partition(".")
        digits = re.match(r"[0-9]+", tail)
        if digits is None:  # digits of another script
            raise Invalid("completed_at is not a valid date-time")
        norm = f"{head}.{digits.group(0)[:6]:0<6}{tail[digits.end():]}"
    try:
        at = datetime.fromisoformat(norm)
    except ValueError:
        raise Invalid("completed_at is not a valid date-time") from None
    try:
        at.astimezone(UTC)
    except OverflowError:
        raise Invalid("completed_at is out of range") from None
    return at


def _outcome(parse: Any, text: str) -> tuple[str, Any]:
    try:
        at = parse(text)
    except Invalid as exc:
        return "invalid", str(exc)
    return "instant", (at, at.utcoffset())


@pytest.mark.parametrize("date", ["2026-12-05", "0001-01-01", "9999-12-31", "2026-02-30",
                                  "\uff12\uff10\uff12\uff16-12-05"])
def test_parse_instant_answers_as_before_its_fast_path(date: str) -> None:
    """The fast path for the common forms (a `T`, a `Z` or an offset, no
    fraction or 3 or 6 digits of one) and the range check kept for the
    years at the edges answer every text exactly as the full path did."""
    seen = 0
    for sep in "Tt ":
        for clock in ("19:00:00", "00:30:00", "23:59:59", "24:00:00", "19:60:00"):
            for fraction in ("", ".1", ".123", ".1234", ".123456", ".1234567", ".123456789",
                             ".\uff11\uff12\uff13", ".1\u0661\u0662", ".52\u0661",
                             ".12345\u0661"):
                for offset in ("Z", "z", "+00:00", "+01:00", "-01:00", "+23:59", "-23:59",
                               "+24:00", "", "\n", "Z\n"):
                    text = f"{date}{sep}{clock}{fraction}{offset}"
                    before = _outcome(_parse_instant_before, text)
                    assert _outcome(parse_instant, text) == before, text
                    seen += before[0] == "instant"
    assert seen > 0 or date in ("2026-02-30", "\uff12\uff10\uff12\uff16-12-05")
