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
