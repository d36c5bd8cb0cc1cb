-- One deployment, one set of settings (issue 40; CONTRACT.md, Configuration).
--
-- The settings every process of a deployment must share, and the
-- fingerprints of its secrets (never the secrets), recorded by its first
-- `serve` or `projector` and changed only when no other process runs; and
-- the processes running now, each heard from every 2 s (one stopped cleanly
-- leaves at once; one killed is forgotten 10 s after it was last heard).
CREATE TABLE deployment_settings (
    name         text PRIMARY KEY,  -- the variable, LAURELS_TIE_POLICY
    value        jsonb NOT NULL,    -- its value as the process read it (a secret's fingerprint)
    recorded_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE deployment_processes (
    id          uuid PRIMARY KEY,
    kind        text NOT NULL,      -- serve, projector
    host        text NOT NULL,
    pid         integer NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    heard_at    timestamptz NOT NULL DEFAULT now(),
    -- the fingerprints of its secrets, the current one and every one it
    -- accepts (a rotation's `new,old`): a process joining must accept each
    -- running one's current secret, and they its own
    secrets     jsonb NOT NULL DEFAULT '{}'
);
