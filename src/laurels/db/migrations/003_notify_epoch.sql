-- The projector LISTENs on laurels_outbox: every statement that writes outbox
-- rows wakes it (delivered at commit; one per transaction), so a completion
-- whose fast path fails is applied within a fraction of a second, not at the
-- next poll.
CREATE FUNCTION laurels_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('laurels_outbox', '');
    RETURN NULL;
END $$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION laurels_outbox_notify();

-- The Redis servers the boards of a key prefix were last known to live on
-- (their run ids). A different fingerprint means Redis restarted or failed
-- over, maybe to an older state: every board it holds is rebuilt.
CREATE TABLE redis_epochs (
    key_prefix   text PRIMARY KEY,
    fingerprint  text NOT NULL,
    repaired_at  timestamptz NOT NULL DEFAULT now()
);

-- Every API process keeps the learners who are not public (hidden, anonymous,
-- erased) in memory, refreshed by what changed since it last looked.
CREATE INDEX users_updated ON users (updated_at);
