-- Webhook deliveries (live/webhooks.py): leases, erasure locks, outcomes, the
-- operator's listing.

-- name: claim_deliveries
-- locks: deliveries
-- Due deliveries after the worker's cursor (its last claim's last (due, id);
-- the start of the index when it has none), leased for `lease_seconds` (a
-- process that dies while sending leaves them to be sent again once the
-- lease runs out: at least once), their attempt counted; each with when it
-- was due, the cursor of the next claim.
WITH due AS (
    SELECT id, next_attempt_at AS due_at FROM webhook_deliveries
    WHERE status = 'pending' AND next_attempt_at <= now()
      AND (next_attempt_at, id) > (%(after_at)s::timestamptz, %(after_id)s::uuid)
    ORDER BY next_attempt_at, id LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
UPDATE webhook_deliveries d
SET next_attempt_at = now() + make_interval(secs => %(lease_seconds)s),
    attempts = d.attempts + 1
FROM due WHERE d.id = due.id
RETURNING d.id, d.type, d.user_id, d.notification_id, d.body, d.attempts, d.give_up_at,
          due.due_at;

-- name: share_erasure_locks
-- locks: erasure
-- The shared side of some learners' erasure locks (a delivery in flight that
-- concerns them; erase_lock takes the other side), in ascending order.
SELECT pg_advisory_xact_lock_shared(hashtextextended('laurels erasure ' || u, 0))
FROM unnest(%(user_ids)s::bigint[]) AS u ORDER BY u;

-- name: leased_deliveries
-- Leased deliveries as they are now (an erasure may have deleted or
-- scrubbed them since the lease), still due to be sent. By key, one row
-- each (a join on the ids: `id = ANY(...) AND status = ...` let the planner
-- AND the status index in, 200,000 entries of it for 8 rows, when a
-- decision had just written the rows and their statistics were stale).
SELECT d.id, d.type, d.user_id, d.notification_id, d.body, d.attempts
FROM unnest(%(ids)s::uuid[]) AS k(id) JOIN webhook_deliveries d ON d.id = k.id
WHERE d.status = 'pending' ORDER BY d.created_at, d.id;

-- name: deliveries_done
-- Delivered (a batch's, in one statement, by key as above); the errors of
-- the attempts before stay (last_error among them).
UPDATE webhook_deliveries d SET status = 'delivered', delivered_at = now()
FROM unnest(%(ids)s::uuid[]) AS k(id)
WHERE d.id = k.id AND d.status = 'pending';

-- name: delivery_failed_attempt
-- Another attempt later, or `failed` once the next would come after give_up_at.
-- Every attempt's error is kept, in order.
UPDATE webhook_deliveries
SET last_error = %(error)s,
    errors = errors || jsonb_build_array(jsonb_build_object(
        'attempt', attempts, 'at', laurels_utc_v1(now()), 'error', %(error)s::text)),
    status = CASE WHEN now() + make_interval(secs => %(delay)s) > give_up_at
                  THEN 'failed' ELSE 'pending' END,
    next_attempt_at = now() + make_interval(secs => %(delay)s)
WHERE id = %(id)s AND status = 'pending'
RETURNING status;

-- name: delivery_dropped
-- Nothing left to send: the notification it announced is gone.
UPDATE webhook_deliveries SET status = 'failed', last_error = %(error)s
WHERE id = %(id)s AND status = 'pending';

-- name: store_webhook_settings
-- The deployment's webhook settings, stored by the serving process (every
-- writer's transaction reads them: migration 011).
INSERT INTO webhook_settings AS w (id, enabled, events, coalesce_seconds)
VALUES (true, %(enabled)s, %(events)s, %(coalesce_seconds)s)
ON CONFLICT (id) DO UPDATE SET enabled = EXCLUDED.enabled, events = EXCLUDED.events,
    coalesce_seconds = EXCLUDED.coalesce_seconds, updated_at = now();

-- name: notifications_by_id
-- The notifications some deliveries announce, as they are now.
SELECT id, user_id, kind, season, data, created_at, updated_at, read FROM notifications
WHERE id = ANY(%(ids)s);

-- name: retry_delivery
-- An operator's retry: pending again, at once, for another 24 hours.
UPDATE webhook_deliveries
SET status = 'pending', next_attempt_at = now(), give_up_at = now() + interval '24 hours'
WHERE id = %(id)s RETURNING id;

-- name: list_deliveries
-- Webhook deliveries for the operator, by status, a page at a time.
SELECT id, type, status, attempts, last_error, errors, next_attempt_at, created_at
FROM webhook_deliveries
WHERE (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(after_at)s::timestamptz IS NULL
       OR (created_at, id) < (%(after_at)s, %(after_id)s::uuid))
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: delivery_counts
-- Webhook deliveries by status (the metrics).
SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status;

-- name: erase_lock
-- locks: erasure
-- An erasure waits for the deliveries in flight that concern the learner.
SELECT pg_advisory_xact_lock(hashtextextended('laurels erasure ' || %(user_id)s, 0));

-- name: delete_deliveries_of
-- An erasure: the learner's events go, sent or not (PostgreSQL keeps
-- nothing of theirs).
DELETE FROM webhook_deliveries WHERE user_id = %(user_id)s;

-- name: scrub_deliveries_about
-- An erasure: others' notifications, sent or not, name them no more.
UPDATE webhook_deliveries
SET body = jsonb_set(body, '{data,data}',
                     (body #> '{data,data}') - 'by_user_id' - 'by_display_name')
WHERE type = 'notification.created'
  AND body #>> '{data,data,by_user_id}' = %(user_id)s::text;
