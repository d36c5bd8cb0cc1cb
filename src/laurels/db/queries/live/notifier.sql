-- Turning rank events into notifications (live/notifier.py).

-- name: lock_users
-- locks: users
-- Share-lock the learners of an ingest so a concurrent profile change either
-- commits first (we read it) or waits for us (it then sees our seasons).
SELECT user_id, display_name, visibility, profile_version, erased_at IS NOT NULL AS erased
FROM users WHERE user_id = ANY(%(user_ids)s) ORDER BY user_id FOR SHARE;

-- name: open_seasons
-- The seasons not finalized yet: the notifier reads their rank-event streams.
SELECT season FROM seasons WHERE finalized_at IS NULL;

-- name: insert_notification
-- A notification, once (its dedup key refuses a second). Fires
-- `notification_webhook` (laurels_notifications_webhook_v1, once for the
-- statement, the webhooks' work): while the webhook settings want the
-- kind, a `notification.created` delivery in webhook_deliveries for the
-- row inserted (none for a duplicate). No lock.
INSERT INTO notifications (user_id, kind, season, data, dedup_key)
VALUES (%(user_id)s, %(kind)s, %(season)s, %(data)s, %(dedup_key)s)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: refresh_overtaken
-- locks: deliveries
-- At most one unread "overtaken" per learner and season: refresh it instead.
-- Not with an event whose notice exists (a replay: handled, then delivered
-- again after a crash before its acknowledgement), which changes nothing and
-- never takes a key another row holds.
-- Fires `notification_refreshed_webhook` (laurels_notification_webhook_v1,
-- for the row refreshed: its data and dedup key change; the webhooks'
-- work): while the settings want the kind, a delivery of the notification
-- still waiting for its first attempt is locked FOR SHARE until commit and
-- carries the new state (a sender's claim of it in flight is waited for,
-- and a sender claims it only after the commit: migration 036); otherwise
-- a new delivery is queued, due after the kind's coalescing window.
UPDATE notifications n SET data = %(data)s, updated_at = now(), dedup_key = %(dedup_key)s
WHERE n.user_id = %(user_id)s AND n.season = %(season)s AND n.kind = 'overtaken' AND NOT n.read
  AND NOT EXISTS (SELECT 1 FROM notifications d
                  WHERE d.user_id = %(user_id)s AND d.dedup_key = %(dedup_key)s)
RETURNING n.id;

-- name: notify_season_final
-- Everyone's final rank of finalized weeks, in the finalizing transaction
-- (`extras`, one a season: the board of a kind's, {} on the whole board).
-- Fires `notification_webhook` (laurels_notifications_webhook_v1, once for
-- the statement): while the settings want `season_final`, a delivery for
-- every notification inserted, in this transaction (the webhooks' work).
-- No lock.
INSERT INTO notifications (user_id, kind, season, data, dedup_key)
SELECT s.user_id, 'season_final', s.season,
       jsonb_build_object('rank', s.rank, 'score', s.score) || f.extra,
       'season_final:' || s.season
FROM unnest(%(seasons)s::text[], %(extras)s::jsonb[]) AS f(season, extra)
JOIN season_standings s ON s.season = f.season
ON CONFLICT DO NOTHING;
