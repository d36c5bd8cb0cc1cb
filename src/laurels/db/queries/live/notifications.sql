-- Reading and marking learners' notifications (live/notifications.py).

-- name: list_notifications
-- A learner's notifications, the latest change first (a refreshed one moves up).
SELECT id, kind, season, data, created_at, updated_at, read FROM notifications
WHERE user_id = %(user_id)s ORDER BY updated_at DESC, id DESC LIMIT %(limit)s;

-- name: naming_states
-- What a notification may say of the learners it names (live/notifications.py).
SELECT user_id, visibility, display_name, erased_at IS NOT NULL AS erased
FROM users WHERE user_id = ANY(%(user_ids)s);

-- name: get_notifications
-- Some of a learner's notifications by id (a live stream fetches what it was
-- told of).
SELECT id, kind, season, data, created_at, updated_at, read FROM notifications
WHERE user_id = %(user_id)s AND id = ANY(%(ids)s) ORDER BY id;

-- name: season_final_of
-- A learner's notification of a kind written for everyone at once (a
-- season's final ranks, a week's league results), told to live streams by
-- one message per season rather than one per learner.
SELECT id, kind, season, data, created_at, updated_at, read FROM notifications
WHERE user_id = %(user_id)s AND kind = %(kind)s AND season = %(season)s;

-- name: mark_read
-- Marks some of a learner's notifications read.
UPDATE notifications SET read = true
WHERE user_id = %(user_id)s AND id = ANY(%(ids)s) AND NOT read
RETURNING id;

-- name: delete_user_notifications
-- An erasure: the learner's notifications.
DELETE FROM notifications WHERE user_id = %(user_id)s;

-- name: scrub_notifications_about
-- An erasure: others' notifications stop naming the learner. It sets data
-- but not dedup_key: `notification_refreshed_webhook` does not fire (its
-- WHEN), nothing is sent again.
UPDATE notifications SET data = data - 'by_user_id' - 'by_display_name'
WHERE data ->> 'by_user_id' = %(user_id)s::text;
