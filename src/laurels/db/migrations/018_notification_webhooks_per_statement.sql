-- Notifications written in bulk (a league decision: one per member; a
-- season's close: one per learner) ran a PL/pgSQL trigger per row, each
-- reading the webhook settings: a 1,000,000-member league decision spent
-- about 10 s of its 28 s of notification inserts there, webhooks on or off
-- (docs/performance.md, "Leagues"). The insert trigger is now one per
-- statement over the rows it inserted, and does nothing when webhooks are
-- off; what it writes is what the row trigger wrote. A refreshed
-- notification (an UPDATE, coalesced) keeps its row trigger (011).
CREATE FUNCTION laurels_notifications_webhook() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT laurels_webhooks_on() THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (id, type, user_id, notification_id, kind, next_attempt_at,
                                    body)
    SELECT n.delivery, 'notification.created', n.user_id, n.id, n.kind, now(),
           jsonb_build_object('id', n.delivery, 'type', 'notification.created',
                              'created_at', laurels_utc(now()), 'data', jsonb_build_object(
               'id', n.id, 'user_id', n.user_id, 'kind', n.kind, 'season', n.season,
               'data', n.data, 'created_at', laurels_utc(n.created_at), 'read', n.read))
    FROM (SELECT f.*, gen_random_uuid() AS delivery FROM fresh f) n  -- a new id per row
    WHERE laurels_webhook_wanted('notification.created', n.kind)
    ORDER BY n.id;
    RETURN NULL;
END $$;

DROP TRIGGER notification_webhook ON notifications;
CREATE TRIGGER notification_webhook AFTER INSERT ON notifications
    REFERENCING NEW TABLE AS fresh
    FOR EACH STATEMENT EXECUTE FUNCTION laurels_notifications_webhook();
