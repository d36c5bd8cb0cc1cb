-- A refreshed notification folded into a delivery still waiting for its
-- first attempt holds that delivery until it commits (issue 63, point 5).
-- The refresh (the one unread `overtaken`, updated in place) checked, in its
-- own transaction, that such a delivery exists and left it to carry the new
-- state, since bodies are built when sent; but the sender could claim it
-- between that check and the refresh's commit and build its body from the
-- old state, and the new state was then never sent. The check now takes
-- the delivery's row FOR SHARE: the sender's claim (FOR UPDATE SKIP LOCKED)
-- skips it until the refresh commits, and builds the body after; a claim
-- that came first is waited for, its attempt counted, and the refresh then
-- queues a delivery of its own (as for one already attempted).
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
        PERFORM 1 FROM webhook_deliveries
        WHERE notification_id = NEW.id AND status = 'pending' AND attempts = 0
        FOR SHARE;
        IF FOUND THEN
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
