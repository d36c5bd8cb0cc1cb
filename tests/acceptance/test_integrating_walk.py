"""The integration walk of docs/integrating.md runs start to finish on the
default configuration (issue 26): its Python blocks, in order, against a
`laurels serve` with nothing but the tokens set, then a learner's read
with a token from `laurels token`."""

from __future__ import annotations

import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from laurels.client import Client
from tests.helpers import INGEST, laurels_bin

pytestmark = pytest.mark.once

DOC = Path(__file__).parents[2] / "docs" / "integrating.md"
EXAMPLE_URL = "https://laurels.example"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_integration_walk_runs_on_the_default_configuration(serve: Any) -> None:
    server = serve()  # the default configuration: week boards only, no CORS, no webhooks
    now = datetime.now(UTC)
    history = [(f"tutorial-{t}", u, 5 + t, (now - timedelta(minutes=t)).isoformat())
               for t in range(1, 4) for u in (42, 43, 44)]
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) >= 3
    scope: dict[str, Any] = {"INGEST_TOKEN": INGEST, "history": history}
    for block in blocks:
        exec(compile(block.replace(EXAMPLE_URL, server.url), str(DOC), "exec"),  # noqa: S102
             scope)
    assert {e["user_id"] for e in scope["top"]["entries"]} == {None, 43, 44}  # 42 anonymous
    assert {e["user_id"] for e in scope["klass"]["entries"]} <= {42, 43, None}
    scope["laurels"].close()
    # Step 1's `laurels token --user 42`, then the learner's own read.
    out = subprocess.run([laurels_bin(), "token", "--user", "42"], env=server.env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    learner_jwt = out.stdout.strip()
    with Client(server.url, token=learner_jwt) as browser:
        me = browser.around("current", 42)
    assert me["user"]["user_id"] == 42 and me["user"]["visibility"] == "anonymous"
