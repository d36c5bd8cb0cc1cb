"""Every response body is declared three times: what the services build
(core/shapes.py, core/challenge_shapes.py), what /openapi.json publishes
(api/schemas.py, api/kind_schemas.py, api/challenge_schemas.py) and what the
Python client types (client/types.py, client/league_types.py,
client/challenge_types.py).
This holds the three equal, body by body and field by field: the same field
names, required alike, of the same types (normalised: str, int, float,
bool, null, lists, nested bodies, and the values a `Literal` names). A
difference fails naming the body and the field; CONTRACT.md settles it.

Every declaration of each module is enumerated: a body declared in one
place and not listed below fails until it is."""

from __future__ import annotations

import inspect
import types
from typing import (
    Any,
    Literal,
    NotRequired,
    Required,
    TypedDict,
    Union,
    get_args,
    get_origin,
    is_typeddict,
)

import pytest
from pydantic import BaseModel

from laurels.api import challenge_schemas, kind_schemas, schemas, team_schemas
from laurels.client import challenge_types, league_types, team_types
from laurels.client import types as client_types
from laurels.core import challenge_shapes, shapes, team_shapes
from tests.typed_checks import keys_of

pytestmark = pytest.mark.once

# body -> (core/shapes.py's TypedDict, the pydantic model, the client's TypedDict);
# None where a place does not declare it (said why in NOT_DECLARED).
BODIES: dict[str, tuple[str | None, str | None, str | None]] = {
    "Entry": ("Entry", "EntryOut", "Entry"),
    "Neighbor": ("Neighbor", "NeighborOut", "Neighbor"),
    "Me": ("Me", "MeOut", "Standing"),
    "Around": ("Around", "AroundOut", "Neighbourhood"),
    "GroupAround": ("GroupAround", "GroupAroundOut", "GroupNeighbourhood"),
    "Board": ("BoardPage", "BoardOut", "Board"),
    "GroupBoard": ("GroupBoardPage", "GroupBoardOut", "GroupBoard"),
    "Friend": ("Friend", "FriendOut", "FriendEntry"),
    "Friends": ("Friends", "FriendsOut", "FriendsBoard"),
    "CompletionItem": ("CompletionItem", "CompletionItemOut", "CompletionRecord"),
    "Completions": ("Completions", "CompletionsOut", "UserCompletions"),
    "LearnerBoard": ("LearnerBoard", "LearnerBoardOut", "LearnerBoard"),
    "LearnerBoards": ("LearnerBoards", "LearnerBoardsOut", "LearnerBoards"),
    "Recorded": ("Recorded", "CompletionOut", "CompletionResult"),
    "ItemError": ("ItemError", "ItemError", "ItemError"),
    "Rejected": ("Rejected", "RejectedOut", "Rejected"),
    "Batch": (None, "BatchOut", "BatchBody"),
    "LearnerProfile": ("LearnerProfile", "LearnerOut", "User"),
    "Notification": ("Notification", "NotificationOut", "Notification"),
    "Notifications": ("Notifications", "NotificationsOut", "Notifications"),
    "Read": ("Read", "ReadOut", "MarkedRead"),
    "Group": ("Group", "GroupOut", "Group"),
    "TeamKind": ("TeamKind", "TeamKindOut", "TeamKind"),
    "TeamKinds": ("TeamKinds", "TeamKindsOut", "TeamKinds"),
    "TeamEntry": ("TeamEntry", "TeamEntryOut", "TeamEntry"),
    "TeamBoard": ("TeamBoard", "TeamBoardOut", "TeamBoard"),
    "LearnerTeam": ("LearnerTeam", "LearnerTeamOut", "LearnerTeam"),
    "LearnerTeams": ("LearnerTeams", "LearnerTeamsOut", "LearnerTeams"),
    "Refused": ("Refused", "RefusedOut", "Refused"),
    "MembersChanged": ("MembersChanged", "MembersOut", "Membership"),
    "GroupRef": ("GroupRef", "GroupRefOut", "GroupRef"),
    "LearnerGroups": ("LearnerGroups", "LearnerGroupsOut", "UserGroups"),
    "Correction": ("Correction", "CorrectionOut", "Correction"),
    "LearnerVoided": ("LearnerVoided", "LearnerVoidedOut", "LearnerVoided"),
    "LearnerRestored": ("LearnerRestored", "LearnerRestoredOut", "LearnerRestored"),
    "Suspend": ("Suspend", "SuspendOut", "Suspension"),
    "AuditEntry": ("AuditEntry", "AuditEntryOut", "AuditEntry"),
    "Audit": ("Audit", "AuditOut", "AuditLog"),
    "RebuildStarted": (None, "RebuildStartedOut", "RebuildStarted"),
    "Rebuild": ("RebuildStatus", "RebuildOut", "Rebuild"),
    "Mismatch": ("Mismatch", "MismatchOut", "Mismatch"),
    "Verified": ("Verified", "VerifyOut", "VerifyResult"),
    "AttemptError": ("AttemptError", "AttemptErrorOut", "AttemptError"),
    "Delivery": ("Delivery", "DeliveryOut", "Delivery"),
    "Deliveries": ("Deliveries", "DeliveriesOut", "Deliveries"),
    "BoardKind": (None, "BoardKindOut", "BoardKind"),
    "BoardKinds": (None, "BoardKindsOut", "BoardKinds"),
    "KindBoard": (None, "KindBoardOut", "KindBoard"),
    "KindBoards": (None, "KindBoardsOut", "KindBoards"),
    "LeagueEntry": ("LeagueEntry", "LeagueEntryOut", "LeagueEntry"),
    "LeagueSelf": ("LeagueSelf", "LeagueSelfOut", "LeagueStanding"),
    "LeagueResult": ("LeagueResult", "LeagueResultOut", "LeagueResult"),
    "League": ("League", "LeagueOut", "League"),
    "CohortBoard": ("CohortBoard", "CohortOut", "CohortBoard"),
    "LeagueRecord": ("LeagueRecord", "LeagueRecordOut", "LeagueRecord"),
    "LeagueHistory": ("LeagueHistory", "LeagueHistoryOut", "LeagueHistory"),
    "LeagueTier": ("LeagueTier", "LeagueTierOut", "LeagueTier"),
    "CohortRef": ("CohortRef", "CohortRefOut", "CohortRef"),
    "CohortList": ("CohortList", "CohortListOut", "CohortList"),
    "LeagueSummary": ("LeagueSummary", "LeagueSummaryOut", "LeagueSummary"),
    "Reward": ("Reward", "RewardOut", "Reward"),
    "Challenge": ("Challenge", "ChallengeOut", "Challenge"),
    "Challenges": ("Challenges", "ChallengesOut", "Challenges"),
    "Joined": ("Joined", "JoinedOut", "Joined"),
    "ChallengeEntry": ("ChallengeEntry", "ChallengeEntryOut", "ChallengeEntry"),
    "ChallengeBoard": ("ChallengeBoard", "ChallengeBoardOut", "ChallengeBoard"),
    "ChallengeMe": ("ChallengeMe", "ChallengeMeOut", "ChallengeMe"),
    "ChallengeNeighbor": ("ChallengeNeighbor", "ChallengeNeighborOut", "ChallengeNeighbor"),
    "ChallengeAround": ("ChallengeAround", "ChallengeAroundOut", "ChallengeAround"),
    "LearnerChallenge": ("LearnerChallenge", "LearnerChallengeOut", "LearnerChallenge"),
    "LearnerChallenges": ("LearnerChallenges", "LearnerChallengesOut", "LearnerChallenges"),
    "Problem": (None, "ProblemOut", None),
}
# Why a place leaves a body out. (The routes that build a body inline, from
# no service's shape: a shape for each would hold them too.)
NOT_DECLARED = {
    "Problem": "errors are built by api/problems.py; the client raises them as exceptions",
    "Batch": "api/write_routes.py lists the items' Recorded | Rejected inline",
    "RebuildStarted": "api/admin_routes.py (post_rebuild) builds it inline",
    "BoardKind": "api/board_kind_routes.py (kind_body) builds it from kind_rules.BoardKind",
    "BoardKinds": "api/board_kind_routes.py builds it inline",
    "KindBoard": "api/board_kind_routes.py builds it inline",
    "KindBoards": "api/board_kind_routes.py builds it inline",
}
# Declarations that are no body of their own.
NOT_BODIES = {
    "shapes": {"SeasonInfo"},  # BoardPage's head, checked as part of it
    # what LearnerVoided and LearnerRestored share; a request's body (define_challenge's)
    "client": {"LearnerCorrection", "ChallengeDefinition", "TeamKindDefinition"},
}
# Differences that only a file beyond the declarations can settle: (body,
# field) -> what must change. Each must still differ (then it leaves here).
PENDING: dict[tuple[str, str], str] = {}
# A field one place declares otherwise, on purpose: (body, field) -> where.
ON_PURPOSE = {
    # reads.top hands the route the position of the page's last entry; the
    # route seals it into the cursor the wire carries (api/cursors.py)
    ("Board", "next"): "shapes",
    ("GroupBoard", "next"): "shapes",
}

def enumerated(modules: tuple[types.ModuleType, ...], kind: Any) -> dict[str, Any]:
    """Every declaration (`kind` says which) of the modules, by name; a name
    declared twice fails."""
    found: dict[str, Any] = {}
    for module in modules:
        for name, cls in vars(module).items():
            if kind(cls) and cls.__module__ == module.__name__:
                assert name not in found, f"{name} is declared twice ({module.__name__})"
                found[name] = cls
    return found


def is_model(cls: Any) -> bool:
    return inspect.isclass(cls) and issubclass(cls, BaseModel)


MODELS = enumerated((schemas, kind_schemas, challenge_schemas, team_schemas), is_model)
CLIENT = enumerated((client_types, league_types, challenge_types, team_types), is_typeddict)
SHAPES = enumerated((shapes, challenge_shapes, team_shapes), is_typeddict)


def declared(place: str, name: str) -> Any:
    """The class `name` of a place (None if it has none)."""
    return {"shapes": SHAPES, "model": MODELS, "client": CLIENT}[place].get(name)


PLACES = ("shapes", "model", "client")
# each declaration (class) -> the body it declares
BODY_OF: dict[Any, str] = {
    declared(place, name): body for body, names in BODIES.items()
    for place, name in zip(PLACES, names, strict=True)
    if name is not None and declared(place, name) is not None}


def test_every_listed_body_is_declared() -> None:
    missing = [f"{place} {name} ({body})" for body, names in BODIES.items()
               for place, name in zip(PLACES, names, strict=True)
               if name is not None and declared(place, name) is None]
    assert not missing, f"BODIES names what is not declared: {missing}"


def test_every_declaration_is_a_listed_body() -> None:
    for place, found in (("shapes", SHAPES), ("model", MODELS), ("client", CLIENT)):
        listed = {names[PLACES.index(place)] for names in BODIES.values()}
        bodies = {n for n in found if not (place == "model" and n.endswith("In"))}  # requests
        unlisted = bodies - listed - NOT_BODIES.get(place, set())
        assert not unlisted, f"{place}: {sorted(unlisted)} are in no row of BODIES"
    for body, names in BODIES.items():
        if None in names:
            assert body in NOT_DECLARED, f"{body}: say in NOT_DECLARED why a place lacks it"


Atom = str | tuple[str, Any]


def norm(tp: Any) -> frozenset[Atom]:
    """A type as a set of atoms (a union's members): str, int, float, bool,
    null, any, object (a free-form dict), ("list", items), ("body", name);
    a `Literal` is the type of its values."""
    origin = get_origin(tp)
    if origin in (NotRequired, Required):
        return norm(get_args(tp)[0])
    if origin in (Union, types.UnionType):
        return frozenset().union(*(norm(a) for a in get_args(tp)))
    if origin is Literal:
        return frozenset(type(a).__name__ for a in get_args(tp))
    if origin is list:
        return frozenset({("list", norm(get_args(tp)[0]))})
    if origin is dict or tp is dict:
        return frozenset({"object"})
    if tp is None or tp is type(None):
        return frozenset({"null"})
    if tp is Any:
        return frozenset({"any"})
    if tp in (str, int, float, bool):
        return frozenset({tp.__name__})
    assert tp in BODY_OF, f"{tp!r} is nested in a body but is no body of BODIES"
    return frozenset({("body", BODY_OF[tp])})


def literals(tp: Any) -> frozenset[Any]:
    """The values the `Literal`s of a type name (through unions and lists)."""
    if get_origin(tp) is Literal:
        return frozenset(get_args(tp))
    return frozenset().union(*(literals(a) for a in get_args(tp)))


Field = tuple[bool, Any]  # (required, the type as declared)


def fields(place: str, name: str) -> dict[str, Field]:
    """A declaration's fields by their names on the wire: a model's field
    that is a Python keyword (`from_`) by its alias (`from`)."""
    cls = declared(place, name)
    if place == "model":
        return {f.alias or k: (f.is_required(), f.annotation)
                for k, f in cls.model_fields.items()}
    return keys_of(cls)


def differences(body: str) -> list[str]:
    """What differs between the declarations of `body`, one line each."""
    places = [(p, n) for p, n in zip(PLACES, BODIES[body], strict=True)
              if n is not None and declared(p, n) is not None]
    found = {p: fields(p, n) for p, n in places}
    out = []
    for i, (first, _) in enumerate(places):
        for place, _ in places[i + 1:]:
            out += pair_differences(body, first, found[first], place, found[place])
    return out


def pair_differences(body: str, a: str, theirs: dict[str, Field], b: str,
                     ours: dict[str, Field]) -> list[str]:
    """What differs between two places' (`a`, `b`) declarations of `body`."""
    out = [f"{body}.{key}: in {a if key in theirs else b} only (not in "
           f"{b if key in theirs else a})" for key in sorted(set(theirs) ^ set(ours))]
    for key in sorted(set(theirs) & set(ours)):
        if ON_PURPOSE.get((body, key)) in (a, b):
            continue
        (req_a, tp_a), (req_b, tp_b) = theirs[key], ours[key]
        if req_a != req_b:
            out.append(f"{body}.{key}: required in {a if req_a else b} only")
        if norm(tp_a) != norm(tp_b):
            out.append(f"{body}.{key}: {a} says {sorted(map(str, norm(tp_a)))}, "
                       f"{b} {sorted(map(str, norm(tp_b)))}")
        elif literals(tp_a) != literals(tp_b):
            out.append(f"{body}.{key}: {a} names {sorted(literals(tp_a))}, "
                       f"{b} {sorted(literals(tp_b))}")
    return out


def test_every_body_is_declared_alike_in_the_three_places() -> None:
    found = [line for body in BODIES for line in differences(body)]
    pending = [line for line in found if tuple(line.split(":")[0].split(".")) in PENDING]
    assert not set(found) - set(pending), "the declarations differ:\n" + "\n".join(
        line for line in found if line not in pending)
    settled = {k for k in PENDING if not any(line.startswith(".".join(k) + ":")
                                             for line in pending)}
    assert not settled, f"settled now: take {sorted(settled)} out of PENDING"


def test_a_difference_is_named_by_body_and_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself: a field in one place only, required in one only,
    of another type, or naming other values, is named."""

    class Ours(TypedDict):
        a: int
        b: NotRequired[str]
        c: list[Literal["x", "y"]]

    class Theirs(BaseModel):
        a: int | None
        b: str
        c: list[Literal["x"]]
        d: bool

    monkeypatch.setitem(SHAPES, "Ours", Ours)
    monkeypatch.setitem(MODELS, "Theirs", Theirs)
    monkeypatch.setitem(BODIES, "T", ("Ours", "Theirs", None))
    assert differences("T") == [
        "T.d: in model only (not in shapes)",
        "T.a: shapes says ['int'], model ['int', 'null']",
        "T.b: required in model only",
        "T.c: shapes names ['x', 'y'], model ['x']"]


def test_a_field_named_by_a_keyword_is_compared_by_its_wire_name() -> None:
    """`Reward`'s `from` (a Python keyword): the shape and the client declare
    it functionally, the model as `from_` with the alias `from`; each is
    compared as `from`, none is left out."""
    for place, name in zip(PLACES, BODIES["Reward"], strict=True):
        assert name is not None and list(fields(place, name)) == ["from", "to", "reward"], place
