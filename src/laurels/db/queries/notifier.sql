-- Turning rank events into notifications (notifier.py).

-- name: lock_users
-- locks: users
-- Share-lock the learners of an ingest so a concurrent profile change either
-- commits first (we read it) or waits for us (it then sees our seasons).
SELECT user_id, display_name, visibility, profile_version, erased_at IS NOT NULL AS erased
FROM users WHERE user_id = ANY(%(user_ids)s) ORDER BY user_id FOR SHARE;

-- name: open_seasons
-- The seasons not finalized yet: the notifier reads their rank-event streams.
SELECT season FROM seasons WHERE finalized_at IS NULL;

-- name: insert_top10
-- A pass's `top10` notifications of a season (one a learner and season:
-- the dedup key refuses a second; of one learner's several in a pass, the
-- first is written, as one at a time would).
INSERT INTO notifications (user_id, kind, season, data, dedup_key)
SELECT DISTINCT ON (e.user_id) e.user_id, 'top10', %(season)s, e.data, 'top10:' || %(season)s
FROM unnest(%(user_ids)s::bigint[], %(datas)s::jsonb[]) WITH ORDINALITY AS e(user_id, data, n)
ORDER BY e.user_id, e.n
ON CONFLICT DO NOTHING
RETURNING user_id, id;

-- name: upsert_overtaken
-- A pass's `overtaken` notifications of a season: at most one unread per
-- learner and season, so each learner's last one in the pass (in stream
-- order) refreshes their unread one, or is written anew (once: its dedup
-- key, the passing event's: a replayed event whose notice exists changes
-- nothing, and never takes a key another row holds). What one at a time
-- would leave, in one statement.
WITH e AS (
    SELECT DISTINCT ON (e.user_id) e.user_id, e.data, e.dedup_key
    FROM unnest(%(user_ids)s::bigint[], %(datas)s::jsonb[], %(dedup_keys)s::text[])
         WITH ORDINALITY AS e(user_id, data, dedup_key, n)
    ORDER BY e.user_id, e.n DESC
), refreshed AS (
    UPDATE notifications n SET data = e.data, updated_at = now(), dedup_key = e.dedup_key
    FROM e
    WHERE n.user_id = e.user_id AND n.season = %(season)s AND n.kind = 'overtaken' AND NOT n.read
      AND NOT EXISTS (SELECT 1 FROM notifications d
                      WHERE d.user_id = e.user_id AND d.dedup_key = e.dedup_key)
    RETURNING n.user_id, n.id
), written AS (
    INSERT INTO notifications (user_id, kind, season, data, dedup_key)
    SELECT e.user_id, 'overtaken', %(season)s, e.data, e.dedup_key FROM e
    WHERE e.user_id NOT IN (SELECT user_id FROM refreshed)
    ON CONFLICT DO NOTHING
    RETURNING user_id, id
)
SELECT user_id, id FROM refreshed UNION ALL SELECT user_id, id FROM written;

-- name: notify_season_final
-- Everyone's final rank of finalized weeks, in the finalizing transaction
-- (`extras`, one a season: the board of a kind's, {} on the whole board).
INSERT INTO notifications (user_id, kind, season, data, dedup_key)
SELECT s.user_id, 'season_final', s.season,
       jsonb_build_object('rank', s.rank, 'score', s.score) || f.extra,
       'season_final:' || s.season
FROM unnest(%(seasons)s::text[], %(extras)s::jsonb[]) AS f(season, extra)
JOIN season_standings s ON s.season = f.season
ON CONFLICT DO NOTHING;
