-- Comparing a board with PostgreSQL (projection/verify.py).

-- name: season_sums
-- verify's PostgreSQL side of a season's board: each learner's counted points.
SELECT c.user_id, METRIC(SCORE(c))::bigint AS score,
       min(coalesce(u.visibility, 'public')) AS visibility,
       min(coalesce(u.display_name, '')) AS display_name, TIE_AT(SCORE(c), c.completed_at) AS last_at
FROM completions c LEFT JOIN users u ON u.user_id = c.user_id
WHERE SEASON_FILTER(c) AND c.voided_at IS NULL
GROUP BY c.user_id ORDER BY c.user_id;

-- name: season_sums_for
-- verify's sums for some learners only.
SELECT c.user_id, METRIC(SCORE(c))::bigint AS score,
       min(coalesce(u.visibility, 'public')) AS visibility,
       min(coalesce(u.display_name, '')) AS display_name, TIE_AT(SCORE(c), c.completed_at) AS last_at
FROM completions c LEFT JOIN users u ON u.user_id = c.user_id
WHERE SEASON_FILTER(c) AND c.voided_at IS NULL AND c.user_id = ANY(%(user_ids)s)
GROUP BY c.user_id;

-- name: archived_states
-- A finalized season's archive, learner by learner: what its board in Redis
-- must hold.
SELECT st.user_id, st.score, coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name, st.last_completed_at AS last_at
FROM season_standings st LEFT JOIN users u ON u.user_id = st.user_id
WHERE st.season = %(season)s AND st.user_id = ANY(%(user_ids)s);

-- name: every_season
-- Every season PostgreSQL knows, open and closed, of every board (the whole
-- board's periods, the boards of kinds): what `laurels verify --all` walks.
SELECT season, finalized_at IS NOT NULL AS finalized FROM seasons ORDER BY season;

-- name: last_retired
-- The latest month retention retired (null: none): a closed season that
-- reaches into it has only its archive left to compare (projection/verify.py).
SELECT max(month) AS month FROM retired_months;

-- name: archived_ids
-- Every learner of a finalized season's archive, in id order (verify's
-- search for archived learners PostgreSQL does not count).
SELECT user_id FROM season_standings WHERE season = %(season)s ORDER BY user_id;

-- name: long_sums
-- verify's PostgreSQL side of a long board: as long_aggregates, by learner.
WITH history AS (
    SELECT st.user_id, st.score, st.last_completed_at AS last_at
    FROM season_standings st WHERE st.season = ANY(%(parts)s)
    UNION ALL
    SELECT c.user_id, SCORE(c), c.completed_at FROM completions c
    WHERE SEASON_FILTER(c) AND c.completed_at >= %(cutoff)s AND c.voided_at IS NULL)
SELECT h.user_id, METRIC(h.score)::bigint AS score,
       min(coalesce(u.visibility, 'public')) AS visibility,
       min(coalesce(u.display_name, '')) AS display_name, TIE_AT(h.score, h.last_at) AS last_at
FROM history h LEFT JOIN users u ON u.user_id = h.user_id
GROUP BY h.user_id ORDER BY h.user_id;
