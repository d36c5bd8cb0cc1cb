"""Whether an event is sent does not depend on which process caused it
(issue 26; docs/contract.md, Webhooks): a CLI void and restore, and a
notification written by `laurels projector`, reach the receiver of the
deployment. Each process runs with the deployment's settings (issue 40,
"One deployment, one set of settings"): one started without the webhook
variables is refused, never quietly sending nothing.

The receiver is the suite's (tests/webhook_receiver.py): a
`ThreadingHTTPServer` as docs/webhooks.md shows, checking each signature as
the docs say, both ways."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    INGEST,
    WEBHOOK_SECRET,
    completion,
    laurels_bin,
    server_env,
    stop_process,
    wait_until,
)
from tests.webhook_receiver import Receiver

pytestmark = [pytest.mark.once, pytest.mark.slow]


def cli(env: dict[str, str], *args: str) -> str:
    out = subprocess.run([laurels_bin(), *args], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_events_of_every_writer_reach_the_receiver(tmp_path: Path, database_url: str,
                                                   redis_url: str, key_prefix: str,
                                                   serve: Any) -> None:
    with Receiver(secret=WEBHOOK_SECRET) as receiver:
        # The serving process has the URL (it sends); it runs no projector.
        server = serve("--no-projector", LAURELS_WEBHOOK_URL=receiver.url,
                       LAURELS_WEBHOOK_SECRET=WEBHOOK_SECRET)
        bare = server_env(database_url, redis_url, key_prefix, tmp_path / "cli")
        refused = subprocess.run([laurels_bin(), "projector"], env=bare, capture_output=True,
                                 text=True, timeout=60, check=False)
        assert refused.returncode != 0 and "LAURELS_WEBHOOK_URL is unset here" in \
            refused.stderr
        env = {**bare, "LAURELS_WEBHOOK_URL": receiver.url,
               "LAURELS_WEBHOOK_SECRET": WEBHOOK_SECRET}
        log = (tmp_path / "projector.log").open("wb")
        projector = subprocess.Popen([laurels_bin(), "projector"], env=env, stdout=log,
                                     stderr=subprocess.STDOUT)
        try:
            # A completion on a live board makes a rank event; the projector
            # alone turns it into a notification (the learner enters the top
            # 10). One absorbed by the board's first build makes none: the
            # next learner's then does.
            def kinds() -> list[tuple[str, Any]]:
                return [(e["type"], e["data"].get("kind") or e["data"].get("completion_id"))
                        for e in receiver.events]

            for uid in range(1, 6):
                resp = server.client(INGEST).post("/v1/completions",
                                                  json=completion(f"w{uid}", uid, 10 - uid))
                assert resp.status_code == 201, resp.text
                try:
                    wait_until(lambda: ("notification.created", "top10") in kinds(), 5)
                    break
                except AssertionError:
                    continue
            assert ("notification.created", "top10") in kinds()
            cli(env, "void", "w1", "--reason", "copied answers")
            wait_until(lambda: ("completion.voided", "w1") in kinds(), 30)
            cli(env, "restore", "w1")
            wait_until(lambda: ("completion.restored", "w1") in kinds(), 30)
            time.sleep(0.5)
        finally:
            stop_process(projector)
            log.close()
        said = (tmp_path / "projector.log").read_text()  # issue 65: it says it runs
        assert "laurels: projector running (pid " in said and "projector stopped" in said, said
        assert receiver.bad_signatures == 0
        assert {k for k in kinds() if k[0] != "notification.created"} == {
            ("completion.restored", "w1"), ("completion.voided", "w1")}
