"""The registry of kinds (core/registry.py) and every place that cannot import it:
each names the same kinds, so adding one fails here, naming the place that
must follow (docs/design.md, "Adding a notification kind")."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args, is_typeddict

import pytest

from laurels.client import types as client_types
from laurels.core import registry as kinds
from laurels.core.shapes import AuditAction

pytestmark = pytest.mark.once

ROOT = Path(__file__).parents[2]
SRC = ROOT / "src" / "laurels"


def check_values(constraint: str) -> set[str]:
    """The values a CHECK (col = ANY (ARRAY[...])) of db/schema.sql allows."""
    line = next(line for line in (SRC / "db" / "schema.sql").read_text().splitlines()
                if f"CONSTRAINT {constraint} " in line)
    return set(re.findall(r"'([^']+)'::text", line))


def test_the_database_checks_the_same_kinds() -> None:
    assert check_values("notifications_kind_check") == set(kinds.NOTIFICATION_KINDS), \
        "a migration must change the CHECK (then regenerate db/schema.sql)"
    assert check_values("webhook_deliveries_type_check") == set(kinds.WEBHOOK_TYPES)
    assert check_values("league_members_zone_check") == set(get_args(kinds.Zone))
    assert check_values("audit_action_check") == set(get_args(AuditAction))


def test_the_client_names_the_same_kinds() -> None:
    assert set(get_args(client_types.NotificationKind)) == set(kinds.NOTIFICATION_KINDS), \
        "client/types.py, NotificationKind"
    assert set(get_args(client_types.AuditAction)) == set(get_args(AuditAction))


def test_every_kind_has_its_payload_and_the_page_and_contract_say_it() -> None:
    page = (SRC / "api" / "static" / "app.js").read_text()
    contract = (ROOT / "docs" / "contract.md").read_text()
    for kind in kinds.NOTIFICATION_KINDS:
        assert is_typeddict(kinds.PAYLOADS[kind]), f"kinds.PAYLOADS[{kind!r}]"
        assert f'n.kind === "{kind}"' in page, f"api/static/app.js: describe() a {kind}"
        assert f"`{kind}`" in contract, f"docs/contract.md: the {kind} notification"
    assert kinds.NAMING <= set(kinds.NOTIFICATION_KINDS)
    assert set(kinds.FOR_EVERYONE) <= set(kinds.NOTIFICATION_KINDS)
    for event in kinds.WEBHOOK_TYPES:
        assert f"`{event}`" in contract, f"docs/contract.md: the {event} webhook"


def test_the_scripts_write_the_rank_events_the_notifier_reads() -> None:
    lua = SRC / "board" / "lua"
    for script in ("apply.lua", "erase.lua"):
        text = lua.joinpath(script).read_text()
        call = re.search(r"redis\.call\('XADD', [\w.]+,(.*?)\)\n", text, re.S)
        assert call, script
        fields = re.findall(r"'([a-z0-9_]+)', [^,]+", call.group(1).split("'*',", 1)[1])
        assert tuple(fields) == kinds.RANK_EVENT_FIELDS, script
    read = re.findall(r'f(?:\["|\.get\(")([a-z0-9_]+)"', (SRC / "live" / "notifier.py").read_text())
    assert read and set(read) <= set(kinds.RANK_EVENT_FIELDS)


def test_every_webhook_the_service_enqueues_is_a_declared_type() -> None:
    code = "\n".join(p.read_text() for p in SRC.rglob("*.py") if "client" not in p.parts)
    code += "\n".join(p.read_text() for p in (SRC / "db" / "queries").rglob("*.sql"))
    used = set(re.findall(r"""(?:type=|type = )["']([a-z]+\.[a-z_]+)["']""", code))
    used |= set(re.findall(r'"([a-z]+\.(?:voided|restored|finalized|erased|created))"', code))
    assert used and used <= set(kinds.WEBHOOK_TYPES), used - set(kinds.WEBHOOK_TYPES)


def test_every_board_metric_is_named_everywhere() -> None:
    """A board kind's metric (kinds.Metric): the database's CHECK, the
    client's type, the contract and docs/boards.md name each one; mypy names
    the two places that compute it (kind_rules.score_of, db/variants.py's
    _metric: `assert_never`) the moment a new one exists."""
    assert check_values("board_kinds_metric_check") == set(kinds.METRICS), \
        "a migration must change board_kinds' metric CHECK"
    assert set(get_args(client_types.Metric)) == set(kinds.METRICS), "client/types.py, Metric"
    contract = (ROOT / "docs" / "contract.md").read_text()
    boards = (ROOT / "docs" / "boards.md").read_text()
    for metric in kinds.METRICS:
        assert f"`{metric}`" in contract, f"docs/contract.md: the {metric} metric"
        assert f"`{metric}`" in boards, f"docs/boards.md: the {metric} metric"
