-- name: lock_users
-- Share-lock the learners of an ingest so a concurrent profile change either
-- commits first (we read it) or waits for us (it then sees our seasons).
SELECT user_id, display_name, visibility, profile_version, erased_at IS NOT NULL AS erased
FROM users WHERE user_id = ANY(%(user_ids)s) ORDER BY user_id FOR SHARE;

-- name: create_users
INSERT INTO users (user_id) SELECT unnest(%(user_ids)s::bigint[]) ORDER BY 1
ON CONFLICT (user_id) DO NOTHING;

-- name: find_completions
SELECT completion_id, seq, user_id, points, completed_at, received_at, season
FROM completions WHERE completion_id = ANY(%(completion_ids)s);

-- name: insert_completions
INSERT INTO completions (completion_id, user_id, points, completed_at, received_at, season)
SELECT * FROM unnest(%(completion_ids)s::text[], %(user_ids)s::bigint[], %(points)s::int[],
                     %(completed_ats)s::timestamptz[], %(received_ats)s::timestamptz[],
                     %(seasons)s::text[])
ON CONFLICT (completion_id) DO NOTHING
RETURNING completion_id, seq;

-- name: insert_outbox
INSERT INTO outbox (seq) SELECT unnest(%(seqs)s::bigint[]);

-- name: delete_outbox
DELETE FROM outbox WHERE seq = ANY(%(seqs)s);

-- name: claim_outbox
SELECT c.seq, c.user_id, c.points, c.completed_at, c.season,
       coalesce(u.profile_version, 0) AS profile_version,
       coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name
FROM outbox o
JOIN completions c ON c.seq = o.seq
LEFT JOIN users u ON u.user_id = c.user_id
WHERE o.created_at <= now() - make_interval(secs => %(min_age_seconds)s)
ORDER BY o.seq
LIMIT %(limit)s
FOR UPDATE OF o SKIP LOCKED;

-- name: outbox_depth
SELECT count(*) AS depth, coalesce(extract(epoch FROM now() - min(created_at)), 0) AS oldest_seconds
FROM outbox;

-- name: season_has_completions
SELECT EXISTS (SELECT 1 FROM completions WHERE season = %(season)s) AS present;

-- name: season_events
SELECT c.seq, c.user_id, c.points, c.completed_at,
       coalesce(u.profile_version, 0) AS profile_version,
       coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name
FROM completions c LEFT JOIN users u ON u.user_id = c.user_id
WHERE c.season = %(season)s
ORDER BY c.seq;

-- name: season_event_count
SELECT count(*) AS n FROM completions WHERE season = %(season)s;

-- name: season_sums
SELECT user_id, sum(points)::bigint AS score
FROM completions WHERE season = %(season)s
GROUP BY user_id ORDER BY user_id;

-- name: get_user
SELECT user_id, display_name, visibility, profile_version, erased_at IS NOT NULL AS erased
FROM users WHERE user_id = %(user_id)s;

-- name: upsert_user
INSERT INTO users AS u (user_id, display_name, visibility, profile_version)
VALUES (%(user_id)s, %(display_name)s, coalesce(%(visibility)s, 'public'), 1)
ON CONFLICT (user_id) DO UPDATE SET
    display_name = coalesce(%(display_name)s, u.display_name),
    visibility = coalesce(%(visibility)s, u.visibility),
    profile_version = u.profile_version + 1,
    updated_at = now()
WHERE u.erased_at IS NULL
RETURNING user_id, display_name, visibility, profile_version, erased_at IS NOT NULL AS erased;

-- name: user_seasons
SELECT DISTINCT season FROM completions WHERE user_id = %(user_id)s;

-- name: insert_rebuild
INSERT INTO rebuilds (rebuild_id, season, tie_policy, status)
VALUES (%(rebuild_id)s, %(season)s, %(tie_policy)s, 'running');

-- name: update_rebuild
UPDATE rebuilds SET status = %(status)s, events = %(events)s, error = %(error)s,
    finished_at = CASE WHEN %(status)s = 'running' THEN NULL ELSE now() END
WHERE rebuild_id = %(rebuild_id)s;

-- name: get_rebuild
SELECT rebuild_id, season, status, events, error FROM rebuilds WHERE rebuild_id = %(rebuild_id)s;

-- name: season_sums_for
SELECT user_id, sum(points)::bigint AS score
FROM completions WHERE season = %(season)s AND user_id = ANY(%(user_ids)s)
GROUP BY user_id;
