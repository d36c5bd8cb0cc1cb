-- The outbox relay (projection/projector.py): claiming, applying, deleting outbox rows.

-- name: claim_outbox
-- locks: outbox
-- The projector's batch: rows old enough that the fast path has given up on
-- them. Locked until applied and deleted, so an erasure (whose cascade
-- deletes these rows) waits for the apply, and a re-apply never reads a
-- completion or profile that is already gone.
-- A completion's row says its state now (counted or voided, and how many
-- corrections it has had): the board converges to it (apply.lua).
SELECT c.seq, c.user_id, c.points, c.completed_at, c.season, c.correction,
       c.voided_at IS NULL AS counted, c.tags,
       coalesce(u.profile_version, 0) AS profile_version,
       coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name,
       extract(epoch FROM now() - o.created_at) AS queued_seconds
FROM outbox o
JOIN completions c ON c.seq = o.seq
LEFT JOIN users u ON u.user_id = c.user_id
WHERE o.created_at <= now() - make_interval(secs => %(min_age_seconds)s)
ORDER BY o.seq
LIMIT %(limit)s
FOR UPDATE OF o SKIP LOCKED;

-- name: outbox_depth
-- How many completions wait to be applied, and the oldest's age (the metrics).
SELECT count(*) AS depth, coalesce(extract(epoch FROM now() - min(created_at)), 0) AS oldest_seconds
FROM outbox;

-- name: latest_counted
-- What a void falls back to on a season's board: the learner's score from
-- the completions that still count (a `best` board's next best) and their
-- tie time (the latest such completion; on `best`, the earliest giving the
-- best); NULLs when none counts.
SELECT METRIC(SCORE(completions))::bigint AS score,
       TIE_AT(SCORE(completions), completed_at) AS last_at FROM completions
WHERE SEASON_FILTER() AND user_id = %(user_id)s AND voided_at IS NULL;
