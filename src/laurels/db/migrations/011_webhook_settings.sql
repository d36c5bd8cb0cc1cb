-- Webhooks are the deployment's, not a process's (issue 26). Whether an
-- event is recorded no longer depends on the session setting of the process
-- that causes it (a CLI void, a projector started alone): the serving
-- process stores the deployment's webhook settings here, and every writer's
-- transaction reads them. Sending stays with the processes that have the URL.
CREATE TABLE webhook_settings (
    id                boolean PRIMARY KEY DEFAULT true CHECK (id),  -- one row
    enabled           boolean NOT NULL,
    events            text[],  -- NULL: every type and kind
    coalesce_seconds  integer NOT NULL DEFAULT 60,
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- A notification's deliveries: which notification (its body is built when it
-- is sent, from the notification as it is then), its kind (coalescing), and
-- the error of every failed attempt.
ALTER TABLE webhook_deliveries
    ADD COLUMN notification_id bigint,
    ADD COLUMN kind text,
    ADD COLUMN errors jsonb NOT NULL DEFAULT '[]';
CREATE INDEX webhook_deliveries_learner ON webhook_deliveries (user_id, kind)
    WHERE type = 'notification.created';
CREATE INDEX webhook_deliveries_notification ON webhook_deliveries (notification_id)
    WHERE notification_id IS NOT NULL AND status = 'pending';

-- Whether events of this type (and notification kind) are recorded.
CREATE OR REPLACE FUNCTION laurels_webhook_wanted(p_type text, p_kind text)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT enabled AND (events IS NULL OR p_type = ANY(events)
                                         OR 'notification.' || p_kind = ANY(events))
                     FROM webhook_settings), false)
$$;

CREATE OR REPLACE FUNCTION laurels_webhooks_on() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT enabled FROM webhook_settings), false)
$$;

CREATE OR REPLACE FUNCTION laurels_enqueue_webhook(p_type text, p_user bigint, p_data jsonb)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid := gen_random_uuid();
BEGIN
    IF laurels_webhook_wanted(p_type, NULL) THEN
        INSERT INTO webhook_deliveries (id, type, user_id, body)
        VALUES (v_id, p_type, p_user, jsonb_build_object(
            'id', v_id, 'type', p_type, 'created_at', laurels_utc(now()), 'data', p_data));
    END IF;
END $$;

-- A notification written is an event at once. A refreshed one (the one
-- unread `overtaken`, updated in place) is coalesced: if a delivery of it is
-- still waiting for its first attempt, that one carries the latest state
-- (bodies are built when sent); otherwise the new one waits until the
-- learner's last delivery of this kind is `coalesce_seconds` old.
CREATE OR REPLACE FUNCTION laurels_notification_webhook() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid := gen_random_uuid();
    v_at timestamptz := now();
    v_window integer;
BEGIN
    IF NOT laurels_webhook_wanted('notification.created', NEW.kind) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        IF EXISTS (SELECT 1 FROM webhook_deliveries
                   WHERE notification_id = NEW.id AND status = 'pending' AND attempts = 0) THEN
            RETURN NULL;
        END IF;
        SELECT coalesce_seconds INTO v_window FROM webhook_settings;
        SELECT greatest(v_at, max(coalesce(delivered_at, next_attempt_at))
                              + make_interval(secs => v_window))
        INTO v_at FROM webhook_deliveries
        WHERE type = 'notification.created' AND user_id = NEW.user_id AND kind = NEW.kind;
        v_at := coalesce(v_at, now());
    END IF;
    INSERT INTO webhook_deliveries (id, type, user_id, notification_id, kind, next_attempt_at,
                                    body)
    VALUES (v_id, 'notification.created', NEW.user_id, NEW.id, NEW.kind, v_at,
            jsonb_build_object('id', v_id, 'type', 'notification.created',
                               'created_at', laurels_utc(now()), 'data', jsonb_build_object(
                'id', NEW.id, 'user_id', NEW.user_id, 'kind', NEW.kind, 'season', NEW.season,
                'data', NEW.data, 'created_at', laurels_utc(NEW.created_at),
                'read', NEW.read)));
    RETURN NULL;
END $$;
