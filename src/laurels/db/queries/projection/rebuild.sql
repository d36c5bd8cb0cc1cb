-- A rebuild's record (projection/rebuild.py): running, its progress, its outcome.

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
