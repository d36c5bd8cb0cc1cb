-- One deployment, one set of settings (process/deployment.py, migration 023).

-- name: lock_deployment
-- locks: deployment
-- One process at a time compares, records and registers (migration 023).
SELECT pg_advisory_xact_lock(hashtext('laurels deployment')) AS locked;

-- name: share_settings_in_use
-- locks: deployment
-- A one-shot command runs with the recorded settings: the shared side of
-- their lock, on a connection of its own for as long as it runs (closing
-- it lets go); a process recording a change tries the other side first.
SELECT pg_advisory_lock_shared(hashtext('laurels settings in use')) AS locked;

-- name: settings_no_longer_in_use
-- locks: deployment
-- A one-shot command has finished: the shared side of the settings' lock
-- let go, its connection back in the pool.
SELECT pg_advisory_unlock_shared(hashtext('laurels settings in use')) AS unlocked;

-- name: settings_unused
-- locks: deployment
-- Whether no one-shot command runs with the recorded settings now: tried
-- in the recording transaction, held to its end.
SELECT pg_try_advisory_xact_lock(hashtext('laurels settings in use')) AS free;

-- name: forget_silent_processes
-- Processes not heard from for `seconds` are gone (killed, or lost).
DELETE FROM deployment_processes
WHERE heard_at < now() - make_interval(secs => %(seconds)s);

-- name: running_processes
-- The deployment's processes heard from lately, with their secrets'
-- fingerprints.
SELECT id, kind, host, pid, started_at, secrets FROM deployment_processes ORDER BY started_at;

-- name: recorded_settings
-- The deployment's recorded settings and secrets' fingerprints.
SELECT name, value FROM deployment_settings ORDER BY name;

-- name: record_setting
-- Records one setting's value (or one secret's fingerprints) for the
-- deployment.
INSERT INTO deployment_settings AS d (name, value) VALUES (%(setting)s, %(value)s)
ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, recorded_at = now();

-- name: register_process
-- A process joins the deployment, or says it still runs (every 2 s).
INSERT INTO deployment_processes (id, kind, host, pid, secrets)
VALUES (%(id)s, %(kind)s, %(host)s, %(pid)s, %(secrets)s)
ON CONFLICT (id) DO UPDATE SET heard_at = now();

-- name: beat_process
-- A running process says it still runs (every 2 s); no row: it was
-- forgotten (silent for 10 s) and joins again, compared (process/deployment.py).
UPDATE deployment_processes SET heard_at = now() WHERE id = %(id)s;

-- name: leave_deployment
-- A process stopped cleanly leaves the deployment at once.
DELETE FROM deployment_processes WHERE id = %(id)s;
