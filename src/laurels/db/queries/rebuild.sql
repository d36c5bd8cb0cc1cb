-- Building a board from PostgreSQL (rebuild.py): its snapshot's bits,
-- aggregates, corrections, tombstones; its record.

-- name: season_seqs
-- A rebuild's idempotency bits: every completion of the season, in seq order.
SELECT seq FROM completions WHERE SEASON_FILTER() ORDER BY seq;

-- name: season_aggregates
-- A rebuild's board: one row per learner (the sum, the latest completion and
-- the profile), so a lost board is back in seconds per million completions.
-- Voided completions count nowhere.
SELECT c.user_id, METRIC(SCORE(c))::bigint AS score, TIE_AT(SCORE(c), c.completed_at) AS last_at,
       coalesce(u.profile_version, 0) AS profile_version,
       coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name
FROM completions c LEFT JOIN users u ON u.user_id = c.user_id
WHERE SEASON_FILTER(c) AND c.voided_at IS NULL
GROUP BY c.user_id, u.profile_version, u.visibility, u.display_name;

-- name: completions_by_seq
-- Some completions by seq: those a rebuild found applied live before its
-- stream.
SELECT seq, user_id, points, voided_at IS NULL AS counted
FROM completions WHERE seq = ANY(%(seqs)s);

-- name: season_event_count
-- How many completions a season's board is built from (a rebuild's progress).
SELECT count(*) AS n FROM completions WHERE SEASON_FILTER();

-- name: insert_rebuild
-- A rebuild's record, running.
INSERT INTO rebuilds (rebuild_id, season, tie_policy, status)
VALUES (%(rebuild_id)s, %(season)s, %(tie_policy)s, 'running');

-- name: update_rebuild
-- A rebuild's progress or outcome.
UPDATE rebuilds SET status = %(status)s, events = %(events)s, error = %(error)s,
    finished_at = CASE WHEN %(status)s = 'running' THEN NULL ELSE now() END
WHERE rebuild_id = %(rebuild_id)s;

-- name: get_rebuild
-- A rebuild's record (GET /v1/admin/rebuilds/{id}).
SELECT rebuild_id, season, status, events, error FROM rebuilds WHERE rebuild_id = %(rebuild_id)s;

-- name: running_rebuild
-- The rebuild of a season running now, if any.
SELECT rebuild_id FROM rebuilds
WHERE season = %(season)s AND tie_policy = %(tie_policy)s AND status = 'running'
ORDER BY started_at DESC LIMIT 1;

-- name: long_seqs
-- A long board's idempotency bits: its completions from `cutoff` on (those
-- before are counted in their parts' archives), in seq order.
SELECT seq FROM completions
WHERE SEASON_FILTER() AND completed_at >= %(cutoff)s ORDER BY seq;

-- name: long_event_count
-- How many facts a long board is built from: its archived parts' standings and
-- its completions from the cutoff on.
SELECT (SELECT count(*) FROM completions WHERE SEASON_FILTER() AND completed_at >= %(cutoff)s)
     + (SELECT count(*) FROM season_standings WHERE season = ANY(%(parts)s)) AS n;

-- name: long_aggregates
-- A long board from its history: the archived standings of its closed parts
-- plus its completions from `cutoff` on, one row per learner.
WITH history AS (
    SELECT st.user_id, st.score, st.last_completed_at AS last_at
    FROM season_standings st WHERE st.season = ANY(%(parts)s)
    UNION ALL
    SELECT c.user_id, SCORE(c), c.completed_at FROM completions c
    WHERE SEASON_FILTER(c) AND c.completed_at >= %(cutoff)s AND c.voided_at IS NULL)
SELECT h.user_id, METRIC(h.score)::bigint AS score, TIE_AT(h.score, h.last_at) AS last_at,
       coalesce(u.profile_version, 0) AS profile_version,
       coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name
FROM history h LEFT JOIN users u ON u.user_id = h.user_id
GROUP BY h.user_id, u.profile_version, u.visibility, u.display_name;
