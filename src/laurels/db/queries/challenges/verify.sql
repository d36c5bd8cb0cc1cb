-- A challenge checked against its own rules (challenges/verify.py).

-- name: challenge_ids
-- Every challenge, by id (`laurels verify --all`).
SELECT challenge_id FROM challenges ORDER BY challenge_id;

-- name: challenge_counted
-- The completions that count on a challenge now, read plainly (no
-- aggregate): its window, its board, not voided, after the learner's join
-- when one is required, of learners not erased; with whether a public
-- board shows each learner.
SELECT c.user_id, c.points, c.completed_at,
       (u.user_id IS NULL OR (u.visibility <> 'hidden' AND u.suspended_at IS NULL)) AS shown
FROM challenges ch
JOIN completions c ON c.completed_at >= ch.starts_at AND c.completed_at < ch.ends_at
LEFT JOIN challenge_joins j ON j.challenge_id = ch.challenge_id AND j.user_id = c.user_id
LEFT JOIN users u ON u.user_id = c.user_id
WHERE ch.challenge_id = %(challenge_id)s AND c.voided_at IS NULL
  AND (ch.board = 'global' OR %(board)s = ANY(c.tags))
  AND (ch.join_rule = 'open' OR c.completed_at >= j.joined_at)
  AND (u.user_id IS NULL OR u.erased_at IS NULL);

-- name: challenge_standings_now
-- The standings as the boards read them (laurels_challenge_standings_v1).
SELECT user_id, score, last_at, shown, rank
FROM laurels_challenge_standings_v1(%(challenge_id)s, %(policy)s);

-- name: challenge_results_checked
-- A decided challenge's results, with whether each learner is erased.
SELECT r.user_id, r.rank, r.score, r.reward, (u.erased_at IS NOT NULL) AS erased
FROM challenge_results r LEFT JOIN users u ON u.user_id = r.user_id
WHERE r.challenge_id = %(challenge_id)s ORDER BY r.rank, r.user_id;
