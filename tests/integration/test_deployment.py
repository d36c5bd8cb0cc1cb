"""One deployment, one set of settings (issue 40; CONTRACT.md,
Configuration), on the real PostgreSQL: the first start records the shared
settings and the secrets' fingerprints; a process that differs while
another runs is refused before it changes anything; alone, it records its
values; one-shot commands never record; a process killed is forgotten 10 s
after it was last heard."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from laurels.process import deployment
from laurels.process.deployment import DeploymentConflict, Membership
from laurels.process.fingerprints import fingerprint
from laurels.process.settings import Secrets, Settings
from laurels.runtime import Runtime
from tests.helpers import ADMIN, INGEST, USER_SECRET

SECRETS = Secrets(INGEST, ADMIN, USER_SECRET)


async def recorded(rt: Runtime) -> dict[str, Any]:
    return {r["name"]: r["value"] for r in await rt.db.fetch("recorded_settings")}


def with_(settings: Settings, **changes: Any) -> Settings:
    return settings.model_copy(update=changes)


async def test_the_first_start_records_and_a_second_with_other_values_is_refused(
        rt: Runtime) -> None:
    first = Membership(rt.db, "serve")
    assert await first.join(rt.settings, SECRETS) == []
    stored = await recorded(rt)
    assert stored["LAURELS_TIE_POLICY"] == rt.settings.tie_policy
    salt = stored[deployment.SALT]
    assert len(bytes.fromhex(salt)) == 16  # one salt per deployment
    assert stored["LAURELS_INGEST_TOKEN"] == {"current": fingerprint(INGEST, salt),
                                              "accepts": [fingerprint(INGEST, salt)]}
    assert INGEST not in str(stored) and ADMIN not in str(stored)  # fingerprints only
    # The same values: it joins.
    same = Membership(rt.db, "projector")
    assert await same.join(rt.settings, SECRETS) == []
    # Other values while they run: refused, nothing recorded, not registered.
    for changed, secrets, name in [
            (with_(rt.settings, tie_policy="first"), SECRETS, "LAURELS_TIE_POLICY"),
            (rt.settings, Secrets("other-ingest", ADMIN, USER_SECRET), "LAURELS_INGEST_TOKEN"),
            (with_(rt.settings, league_tiers=()), SECRETS, "LAURELS_LEAGUE_TIERS")]:
        if name == "LAURELS_LEAGUE_TIERS":  # the deployment plays leagues; this one not
            await first.leave()
            await same.leave()
            first = Membership(rt.db, "serve")
            await first.join(with_(rt.settings, league_tiers=("bronze", "silver"),
                                   league_promote=(1,), league_demote=(1,)), SECRETS)
        refused = Membership(rt.db, "projector")
        with pytest.raises(DeploymentConflict) as conflict:
            await refused.join(changed, secrets)
        line = str(conflict.value)
        assert line.startswith(name) and "\n" not in line and "runs" in line, line
        assert "other-ingest" not in line
        assert refused.id not in {str(r["id"]) for r in await rt.db.fetch("running_processes")}
    assert (await recorded(rt))["LAURELS_LEAGUE_TIERS"] == ["bronze", "silver"]


async def test_alone_a_process_records_new_values_and_says_what_they_imply(
        rt: Runtime, caplog: pytest.LogCaptureFixture) -> None:
    first = Membership(rt.db, "serve")
    await first.join(rt.settings, SECRETS)
    await first.leave()  # a clean stop leaves at once
    later = Membership(rt.db, "serve")
    changes = await later.join(with_(rt.settings, tie_policy="first"), SECRETS)
    assert [c.name for c in changes] == ["LAURELS_TIE_POLICY"]
    assert (await recorded(rt))["LAURELS_TIE_POLICY"] == "first"
    assert any("LAURELS_TIE_POLICY from shared to first" in r.getMessage()
               and "rebuilt" in r.getMessage() for r in caplog.records)


async def test_a_process_killed_is_forgotten_10_s_after_it_was_last_heard(rt: Runtime) -> None:
    killed = Membership(rt.db, "serve")
    await killed.join(rt.settings, SECRETS)
    async with rt.db.connection() as conn:  # as if its last beat were 11 s ago
        await conn.execute("UPDATE deployment_processes SET heard_at = now() - interval '11 s'")
    alone = Membership(rt.db, "serve")
    assert [c.name for c in await alone.join(with_(rt.settings, tie_policy="first"),
                                             SECRETS)] == ["LAURELS_TIE_POLICY"]
    await alone.beat()
    assert [str(r["id"]) for r in await rt.db.fetch("running_processes")] == [alone.id]


@pytest.mark.parametrize("worker", [False, True])
async def test_a_process_silent_past_the_heartbeat_rejoins_compared(
        rt: Runtime, worker: bool) -> None:
    """Issue 63, point 6: a process paused for more than 10 s is forgotten;
    another records other settings meanwhile. Its next beat joins again,
    compared as at its start: refused (it stops), never registered beside
    the other; with the same settings it is simply back. Before, the beat
    re-registered it unchecked, old and new settings side by side. A serve's
    worker (which never joined itself: its serve did) rejoins the same way."""
    stopped: list[str] = []
    if worker:  # as runtime.wire makes it for a serve's worker
        paused = Membership(rt.db, "serve", joined=(rt.settings, SECRETS),
                            refused=stopped.append)
        await Membership(rt.db, "serve", paused.id).join(rt.settings, SECRETS)
    else:
        paused = Membership(rt.db, "serve", refused=stopped.append)
        await paused.join(rt.settings, SECRETS)
    again = Membership(rt.db, "projector", refused=stopped.append)
    await again.join(rt.settings, SECRETS)
    async with rt.db.connection() as conn:  # both silent for 11 s: paused
        await conn.execute("UPDATE deployment_processes SET heard_at = now() - interval '11 s'")
    await again.beat()  # heard again before anyone forgot it: nothing to compare
    assert stopped == []
    async with rt.db.connection() as conn:
        await conn.execute("UPDATE deployment_processes SET heard_at = now() - interval '11 s'"
                           " WHERE id = %s", (paused.id,))
    other = Membership(rt.db, "serve")
    await again.leave()  # alone, the other records a new tie policy
    assert [c.name for c in await other.join(with_(rt.settings, tie_policy="first"),
                                             SECRETS)] == ["LAURELS_TIE_POLICY"]
    await paused.beat()  # the paused one resumes
    assert len(stopped) == 1 and stopped[0].startswith("LAURELS_TIE_POLICY"), stopped
    assert "forgotten while silent" in stopped[0] and "\n" not in stopped[0]
    assert [str(r["id"]) for r in await rt.db.fetch("running_processes")] == [other.id]
    assert (await recorded(rt))["LAURELS_TIE_POLICY"] == "first"


async def test_a_one_shot_command_holds_the_settings_it_compared(rt: Runtime) -> None:
    """A suspicion of issue 63, fixed: a one-shot command compared the
    settings, then acted, and a serve starting alone meanwhile could record
    others. While one runs (deployment.one_shot) a start that would record
    a change is refused with one line; one with the same settings starts;
    once the command ends, the change is recorded."""
    first = Membership(rt.db, "serve")
    await first.join(rt.settings, SECRETS)
    await first.leave()
    async with deployment.one_shot(rt.db, rt.settings, SECRETS, {"ingest_token"}):
        changing = Membership(rt.db, "serve")
        with pytest.raises(DeploymentConflict) as conflict:
            await changing.join(with_(rt.settings, tie_policy="first"), SECRETS)
        line = str(conflict.value)
        assert line.startswith("LAURELS_TIE_POLICY") and "one-shot command runs" in line
        assert "\n" not in line
        same = Membership(rt.db, "serve")
        assert await same.join(rt.settings, SECRETS) == []
        await same.leave()
        assert (await recorded(rt))["LAURELS_TIE_POLICY"] == rt.settings.tie_policy
    assert [c.name for c in await changing.join(with_(rt.settings, tie_policy="first"),
                                                SECRETS)] == ["LAURELS_TIE_POLICY"]


async def test_a_one_shot_command_never_records(rt: Runtime) -> None:
    await deployment.check(rt.db, with_(rt.settings, tie_policy="first"), SECRETS,
                           {"ingest_token"})
    assert await recorded(rt) == {}  # nothing to compare with, nothing recorded
    await Membership(rt.db, "serve").join(rt.settings, SECRETS)
    with pytest.raises(DeploymentConflict, match=r"^LAURELS_TIE_POLICY is first here"):
        await deployment.check(rt.db, with_(rt.settings, tie_policy="first"), SECRETS, set())
    # A secret it does not know (a throwaway) is not compared; one it knows is.
    other = Secrets("throwaway", ADMIN, USER_SECRET)
    await deployment.check(rt.db, rt.settings, other, {"admin_token"})
    with pytest.raises(DeploymentConflict, match=r"^LAURELS_INGEST_TOKEN is not the"):
        await deployment.check(rt.db, rt.settings, other, {"ingest_token"})
    assert (await recorded(rt))["LAURELS_TIE_POLICY"] == rt.settings.tie_policy


async def test_a_secret_rotates_without_downtime(rt: Runtime) -> None:
    """docs/operations.md, "Rotating a secret": every process is restarted in
    turn with `old,new`, then with `new,old`, then with `new`; at each step
    the new process runs beside the old ones. Skipping a step is refused."""
    new = "the-new-ingest-token"
    running = [Membership(rt.db, "serve") for _ in range(2)]
    for m in running:
        await m.join(rt.settings, SECRETS)
    with pytest.raises(DeploymentConflict, match=r"^LAURELS_INGEST_TOKEN is not the"):
        await Membership(rt.db, "serve").join(rt.settings, Secrets(new, ADMIN, USER_SECRET))
    for step in (f"{INGEST},{new}", f"{new},{INGEST}", new):
        for i, old in enumerate(running):
            await old.leave()
            running[i] = Membership(rt.db, "serve")
            await running[i].join(rt.settings, Secrets(step, ADMIN, USER_SECRET))
    # Rotated: the old token is no longer the deployment's.
    with pytest.raises(DeploymentConflict):
        await deployment.check(rt.db, rt.settings, SECRETS, {"ingest_token"})
    await deployment.check(rt.db, rt.settings, Secrets(new, ADMIN, USER_SECRET),
                           {"ingest_token"})


async def test_the_time_zone_is_fixed_at_the_first_start(rt: Runtime) -> None:
    """LAURELS_TIME_ZONE names and bounds every season: a later start with
    another is refused even when no other process runs, and a deployment
    recorded before the setting existed was a UTC one."""
    first = Membership(rt.db, "serve")
    await first.join(with_(rt.settings, time_zone="Europe/Paris"), SECRETS)
    assert (await recorded(rt))["LAURELS_TIME_ZONE"] == "Europe/Paris"
    await first.leave()  # alone: any other setting could change now, not this one
    alone = Membership(rt.db, "serve")
    with pytest.raises(DeploymentConflict) as conflict:
        await alone.join(with_(rt.settings, time_zone="UTC"), SECRETS)
    line = str(conflict.value)
    assert line.startswith("LAURELS_TIME_ZONE is UTC here") and "fixed" in line, line
    assert "LAURELS_TIME_ZONE=Europe/Paris" in line and "\n" not in line
    assert alone.id not in {str(r["id"]) for r in await rt.db.fetch("running_processes")}
    with pytest.raises(DeploymentConflict, match=r"^LAURELS_TIME_ZONE is UTC here"):
        await deployment.check(rt.db, with_(rt.settings, time_zone="UTC"), SECRETS, set())
    assert (await recorded(rt))["LAURELS_TIME_ZONE"] == "Europe/Paris"
    # A deployment recorded before LAURELS_TIME_ZONE existed kept UTC seasons.
    async with rt.db.connection() as conn:
        await conn.execute("DELETE FROM deployment_settings WHERE name = 'LAURELS_TIME_ZONE'")
    with pytest.raises(DeploymentConflict, match=r"^LAURELS_TIME_ZONE is Europe/Paris here"):
        await Membership(rt.db, "serve").join(with_(rt.settings, time_zone="Europe/Paris"),
                                              SECRETS)
    await Membership(rt.db, "serve").join(with_(rt.settings, time_zone="UTC"), SECRETS)
    assert (await recorded(rt))["LAURELS_TIME_ZONE"] == "UTC"


async def test_a_zone_postgresql_does_not_know_is_refused(rt: Runtime) -> None:
    """PostgreSQL computes local dates too (an erasure's seasons): a zone its
    time zone data lacks stops a start and a one-shot command, one line."""
    await deployment.refuse_unknown_zone(rt.db, "Europe/Paris")
    with pytest.raises(DeploymentConflict, match=r"^LAURELS_TIME_ZONE Mars/Olympus is not"):
        await deployment.refuse_unknown_zone(rt.db, "Mars/Olympus")
    assert await recorded(rt) == {}


async def test_a_webhook_urls_secrets_are_never_stored_or_said(
        rt: Runtime, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 64, point 5: the webhook URL's password and query values are
    recorded masked, with a fingerprint that tells two URLs apart; the
    refusal and the warning on a change show them masked; a URL an earlier
    version recorded in clear compares as the same URL."""
    url = "https://hooks:pw-hunter2@hooks.example/in?token=tk-abc123"
    other = "https://hooks:pw-other9@hooks.example/in?token=tk-abc123"
    first = Membership(rt.db, "serve")
    await first.join(with_(rt.settings, webhook_url=url), SECRETS)
    stored = await recorded(rt)
    assert stored["LAURELS_WEBHOOK_URL"]["shown"] == "https://hooks:***@hooks.example/in?token=***"
    assert "hunter2" not in str(stored) and "abc123" not in str(stored)
    with pytest.raises(DeploymentConflict) as conflict:
        await Membership(rt.db, "projector").join(with_(rt.settings, webhook_url=other), SECRETS)
    line = str(conflict.value)
    assert line.startswith("LAURELS_WEBHOOK_URL is https://hooks:***@hooks.example/in?token=***")
    assert "other9" not in line and "hunter2" not in line and "abc123" not in line
    # An earlier version's record in clear: the same URL still joins.
    async with rt.db.connection() as conn:
        await conn.execute("UPDATE deployment_settings SET value = to_jsonb(%s::text)"
                           " WHERE name = 'LAURELS_WEBHOOK_URL'", (url,))
    assert await Membership(rt.db, "projector").join(
        with_(rt.settings, webhook_url=url), SECRETS) == []
    with caplog.at_level(logging.INFO, logger="laurels.deployment"):
        for m in await rt.db.fetch("running_processes"):
            await Membership(rt.db, "serve", str(m["id"])).leave()
        await Membership(rt.db, "serve").join(with_(rt.settings, webhook_url=other), SECRETS)
    assert "LAURELS_WEBHOOK_URL from https://hooks:***@" in caplog.text
    assert "hunter2" not in caplog.text and "other9" not in caplog.text
    assert "hunter2" not in str(await recorded(rt)) and "other9" not in str(await recorded(rt))


async def test_secret_fingerprints_are_salted_and_slow_and_upgrade_in_place(
        rt: Runtime, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 64, point 10: a secret's fingerprint is scrypt under a salt of
    the deployment's (whoever reads the table cannot check a guessed token
    against a hash every deployment shares). A deployment recorded by an
    earlier version (an unsalted keyed hash) still compares equal while its
    processes run, and is recorded anew, salted, by a process alone, with
    no change said."""
    import hashlib
    import hmac

    def legacy(secret: str) -> str:
        return hmac.new(b"laurels deployment fingerprint", secret.encode(),
                        hashlib.sha256).hexdigest()[:32]

    first = Membership(rt.db, "serve")
    await first.join(rt.settings, SECRETS)
    stored = await recorded(rt)
    other_salt = "00" * 16
    assert fingerprint(ADMIN, stored[deployment.SALT]) != fingerprint(
        ADMIN, other_salt) != legacy(ADMIN)
    assert legacy(ADMIN) not in str(stored)
    await first.leave()
    # As an earlier version left it: no salt, unsalted records.
    async with rt.db.connection() as conn:
        await conn.execute("DELETE FROM deployment_settings WHERE name = %s",
                           (deployment.SALT,))
        for name, secret in (("LAURELS_INGEST_TOKEN", INGEST), ("LAURELS_ADMIN_TOKEN", ADMIN),
                             ("LAURELS_USER_TOKEN_SECRET", USER_SECRET)):
            await conn.execute(
                "UPDATE deployment_settings SET value = %s WHERE name = %s",
                (deployment.Jsonb({"current": legacy(secret), "accepts": [legacy(secret)]}),
                 name))
    old = Membership(rt.db, "serve")  # an earlier version's process, still running
    await rt.db.run("register_process", id=old.id, kind="serve", host="h", pid=1,
                    secrets=deployment.Jsonb(deployment.secrets_of(SECRETS)))
    assert await Membership(rt.db, "projector").join(rt.settings, SECRETS) == []
    assert deployment.SALT not in await recorded(rt)  # others run: nothing recorded
    await deployment.check(rt.db, rt.settings, SECRETS, {"ingest_token"})  # one-shot: same
    for row in await rt.db.fetch("running_processes"):
        await Membership(rt.db, "serve", str(row["id"])).leave()
    with caplog.at_level(logging.INFO, logger="laurels.deployment"):
        assert await Membership(rt.db, "serve").join(rt.settings, SECRETS) == []
    assert "changes" not in caplog.text  # the same secrets: no change said
    again = await recorded(rt)
    salt = again[deployment.SALT]
    assert again["LAURELS_ADMIN_TOKEN"]["current"] == fingerprint(ADMIN, salt)
    assert legacy(ADMIN) not in str(again)
