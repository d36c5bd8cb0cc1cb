-- Reads PostgreSQL answers (reads/boards.py): archived seasons, "why my score".

-- name: season_has_completions
-- Whether a season has any completion (a season without one reads as empty).
SELECT EXISTS (SELECT 1 FROM completions WHERE SEASON_FILTER()) AS present;

-- name: archive_top
-- The archived board from the top, or after a position (after_score: a total;
-- then the tie: the latest completion under `first`, the user id).
SELECT st.user_id, st.score, st.rank, st.last_completed_at,
       coalesce(u.display_name, '') AS display_name,
       coalesce(u.visibility, 'public') AS visibility
FROM season_standings st LEFT JOIN users u ON u.user_id = st.user_id
WHERE st.season = %(season)s
  AND coalesce(u.visibility, 'public') <> 'hidden' AND u.erased_at IS NULL AND st.pos IS NOT NULL
  AND (%(after_score)s::bigint IS NULL OR st.score < %(after_score)s
       OR (st.score = %(after_score)s AND CASE WHEN %(tie_policy)s = 'first'
           THEN (st.last_completed_at, st.user_id) > (%(after_at)s::timestamptz, %(after_user)s::bigint)
           ELSE st.user_id > %(after_user)s::bigint END))
ORDER BY st.pos LIMIT %(limit)s;

-- name: archive_total
-- How many learners a finalized season's archive ranks (hidden ones take no
-- place).
SELECT count(*) AS total FROM season_standings WHERE season = %(season)s AND pos IS NOT NULL;

-- name: archive_user
-- A learner's archived standing, with their profile now.
SELECT st.user_id, st.score, st.rank, st.pos, st.last_completed_at,
       coalesce(u.display_name, '') AS display_name,
       coalesce(u.visibility, 'public') AS visibility
FROM season_standings st LEFT JOIN users u ON u.user_id = st.user_id
WHERE st.season = %(season)s AND st.user_id = %(user_id)s;

-- name: archive_would_be
-- Where a hidden learner would stand: public learners ordered before them.
SELECT count(*) FILTER (WHERE st.score > %(score)s) AS better,
       count(*) FILTER (WHERE st.score > %(score)s OR (st.score = %(score)s AND (
           CASE WHEN %(tie_policy)s = 'first'
                THEN (st.last_completed_at, st.user_id) < (%(last)s, %(user_id)s)
                ELSE st.user_id < %(user_id)s END))) AS before
FROM season_standings st
WHERE st.season = %(season)s AND st.pos IS NOT NULL;

-- name: archive_slice
-- A slice of an archive by place: an archived neighbourhood.
SELECT st.user_id, st.score, st.rank, coalesce(u.display_name, '') AS display_name,
       coalesce(u.visibility, 'public') AS visibility
FROM season_standings st LEFT JOIN users u ON u.user_id = st.user_id
WHERE st.season = %(season)s
  AND coalesce(u.visibility, 'public') <> 'hidden' AND u.erased_at IS NULL AND st.pos BETWEEN %(first)s AND %(last)s
ORDER BY st.pos;

-- name: user_completions
-- "Why is my score X": a learner's completions in a season, newest first,
-- after the position (completed_at, seq) of the previous page's last one.
SELECT seq, completion_id, points, completed_at, voided_at IS NULL AS counted
FROM completions
WHERE SEASON_FILTER() AND user_id = %(user_id)s
  AND (%(after_at)s::timestamptz IS NULL OR (completed_at, seq) < (%(after_at)s, %(after_seq)s))
ORDER BY completed_at DESC, seq DESC
LIMIT %(limit)s;

-- name: user_season_score
-- A learner's counted points and completions in a season ("why my score").
SELECT coalesce(METRIC(SCORE(completions)), 0)::bigint AS score, count(*) AS completions
FROM completions WHERE SEASON_FILTER() AND user_id = %(user_id)s AND voided_at IS NULL;

-- name: retired_between
-- Whether some of a range's completions were retired (dropped with their
-- month: a UTC month of the partitions, whatever the seasons' time zone).
SELECT EXISTS (SELECT 1 FROM retired_months
               WHERE (month::timestamp AT TIME ZONE 'UTC') < %(ends)s::timestamptz
                 AND ((month + interval '1 month')::timestamp AT TIME ZONE 'UTC')
                     > %(starts)s::timestamptz)
       AS retired;

-- name: archived_score
-- A learner's archived score in a season whose completions were retired.
SELECT score FROM season_standings WHERE season = %(season)s AND user_id = %(user_id)s;

-- name: learner_tags
-- The tags of a learner's counted completions within a span (their boards
-- of a week: GET /v1/users/{user_id}/boards).
SELECT DISTINCT unnest(tags) AS tag FROM completions
WHERE user_id = %(user_id)s AND tags IS NOT NULL AND voided_at IS NULL
  AND completed_at >= %(starts)s AND completed_at < %(ends)s;
