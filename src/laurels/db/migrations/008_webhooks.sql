-- Webhooks (issue 16): an outbox of deliveries, written in the transaction of
-- the event that causes it, only while webhooks are on: every pooled
-- connection of a process with LAURELS_WEBHOOK_URL runs
-- `SET laurels.webhooks = 'on'` (db/__init__.py), and every enqueue checks it.
CREATE TABLE webhook_deliveries (
    id               uuid PRIMARY KEY,
    type             text NOT NULL CHECK (type IN ('notification.created', 'season.finalized',
                                                   'completion.voided', 'completion.restored',
                                                   'user.erased')),
    user_id          bigint,  -- whose it is (an erasure scrubs what is not yet sent)
    body             jsonb NOT NULL,  -- {"id", "type", "created_at", "data"}
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    give_up_at       timestamptz NOT NULL DEFAULT now() + interval '24 hours',
    delivered_at     timestamptz
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_status ON webhook_deliveries (status, created_at);

CREATE FUNCTION laurels_webhooks_on() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce(current_setting('laurels.webhooks', true), '') = 'on'
$$;

CREATE FUNCTION laurels_utc(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

-- Enqueue one event (the caller's transaction), if webhooks are on.
CREATE FUNCTION laurels_enqueue_webhook(p_type text, p_user bigint, p_data jsonb)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid := gen_random_uuid();
BEGIN
    IF laurels_webhooks_on() THEN
        INSERT INTO webhook_deliveries (id, type, user_id, body)
        VALUES (v_id, p_type, p_user, jsonb_build_object(
            'id', v_id, 'type', p_type, 'created_at', laurels_utc(now()), 'data', p_data));
    END IF;
END $$;

-- Every notification written (or an `overtaken` one refreshed) is an event.
CREATE FUNCTION laurels_notification_webhook() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- data: the notification as the API shows it, and its user_id
    PERFORM laurels_enqueue_webhook('notification.created', NEW.user_id, jsonb_build_object(
        'id', NEW.id, 'user_id', NEW.user_id, 'kind', NEW.kind, 'season', NEW.season,
        'data', NEW.data, 'created_at', laurels_utc(NEW.created_at), 'read', NEW.read));
    RETURN NULL;
END $$;

CREATE TRIGGER notification_webhook AFTER INSERT ON notifications
    FOR EACH ROW EXECUTE FUNCTION laurels_notification_webhook();
CREATE TRIGGER notification_refreshed_webhook AFTER UPDATE OF data ON notifications
    FOR EACH ROW WHEN (OLD.dedup_key IS DISTINCT FROM NEW.dedup_key)
    EXECUTE FUNCTION laurels_notification_webhook();
