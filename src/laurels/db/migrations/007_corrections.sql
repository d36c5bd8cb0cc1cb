-- Corrections (issue 15): void and restore, suspension, and the audit log.
--
-- A void or a restore is a durable fact on the completion: `voided_at` (NULL
-- while it counts) and `correction`, bumped by every change of that state.
-- It is projected like a completion: an outbox row for the completion's seq,
-- which the projector (or the admin call's fast path) applies to every board
-- the completion counts on, with its correction number, so a late or
-- repeated projection of an older state changes nothing (apply.lua).
ALTER TABLE completions ADD COLUMN voided_at timestamptz,
                        ADD COLUMN correction integer NOT NULL DEFAULT 0;

-- A suspended learner is hidden whatever they chose: `visibility` holds the
-- effective value (what every projection and the privacy filter read), and
-- `own_visibility` keeps their own choice while they are suspended.
ALTER TABLE users ADD COLUMN suspended_at timestamptz,
                  ADD COLUMN own_visibility text
                      CHECK (own_visibility IN ('public', 'anonymous', 'hidden'));

-- Every admin action, with its reason, written in the transaction of the
-- action itself. Append-only: the triggers below refuse any UPDATE, DELETE
-- or TRUNCATE, whoever asks (the application's role included).
CREATE TABLE audit (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at       timestamptz NOT NULL DEFAULT now(),
    action   text NOT NULL CHECK (action IN ('void', 'restore', 'suspend', 'unsuspend',
                                             'erase', 'rebuild', 'group_delete')),
    target   text NOT NULL,
    reason   text,
    details  jsonb
);

CREATE FUNCTION laurels_audit_is_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only' USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit
    FOR EACH ROW EXECUTE FUNCTION laurels_audit_is_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
    FOR EACH STATEMENT EXECUTE FUNCTION laurels_audit_is_append_only();
