-- Catching a board up after Redis went back in time (projection/catchup.py).

-- name: replay_rows
-- Completions to apply again after Redis went back in time (projection/catchup.py), as
-- the projector reads them (claim_outbox): each with its state now.
SELECT c.seq, c.user_id, c.points, c.completed_at, c.season, c.correction,
       c.voided_at IS NULL AS counted, c.tags,
       coalesce(u.profile_version, 0) AS profile_version,
       coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name
FROM completions c LEFT JOIN users u ON u.user_id = c.user_id
WHERE c.seq = ANY(%(seqs)s::bigint[]) ORDER BY c.seq;

-- name: learner_profiles
-- Some learners' profiles ever set (version > 0), erased ones aside: what a
-- catch-up compares with a small board's own learners.
SELECT user_id, profile_version, visibility, coalesce(display_name, '') AS display_name
FROM users WHERE user_id = ANY(%(user_ids)s) AND profile_version > 0 AND erased_at IS NULL
ORDER BY user_id;

-- name: profiled_users
-- Every learner whose profile was ever set (version > 0), erased ones aside:
-- what a catch-up compares with a board's profiles.
SELECT user_id, profile_version, visibility, coalesce(display_name, '') AS display_name
FROM users WHERE profile_version > 0 AND erased_at IS NULL ORDER BY user_id;
