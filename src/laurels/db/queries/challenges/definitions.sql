-- Challenges: their definitions and joins (challenges/definitions.py,
-- migration 039).

-- name: insert_challenge
-- A new challenge.
INSERT INTO challenges (challenge_id, title, board, metric, starts_at, ends_at, join_rule,
                        max_size, rewards, notify, grace_seconds)
VALUES (%(challenge_id)s, %(title)s, %(board)s, %(metric)s, %(starts_at)s, %(ends_at)s,
        %(join_rule)s, %(max_size)s, %(rewards)s, %(notify)s, %(grace_seconds)s);

-- name: update_challenge
-- A challenge's new definition (what may still change: challenges/rules.py).
UPDATE challenges
SET title = %(title)s, board = %(board)s, metric = %(metric)s, starts_at = %(starts_at)s,
    ends_at = %(ends_at)s, join_rule = %(join_rule)s, max_size = %(max_size)s,
    rewards = %(rewards)s, notify = %(notify)s, grace_seconds = %(grace_seconds)s
WHERE challenge_id = %(challenge_id)s;

-- name: delete_challenge
-- A challenge is gone, with its joins, results and watch (ON DELETE CASCADE).
DELETE FROM challenges WHERE challenge_id = %(challenge_id)s RETURNING challenge_id;

-- name: learner_erased
-- Whether a learner is erased (a join reads it under the challenge's lock,
-- which an erasure takes after the learner's: challenges/erasure.py).
SELECT erased_at IS NOT NULL AS erased FROM users WHERE user_id = %(user_id)s;

-- name: challenge_join_of
-- A learner's join of a challenge, or no row.
SELECT joined_at, position FROM challenge_joins
WHERE challenge_id = %(challenge_id)s AND user_id = %(user_id)s;

-- name: insert_challenge_join
-- A join, the challenge's next (the caller holds its row: joins are
-- numbered in the order they commit).
WITH joined AS (
    UPDATE challenges SET joined = joined + 1 WHERE challenge_id = %(challenge_id)s
    RETURNING joined)
INSERT INTO challenge_joins (challenge_id, user_id, joined_at, position)
SELECT %(challenge_id)s, %(user_id)s, %(joined_at)s, joined FROM joined
RETURNING joined_at, position;

-- name: challenge_rows
-- Challenges in id order after `after`: all, or those of one status at
-- `now` (upcoming, active, ended), with how many take part (a decided one:
-- as decided; a join: the joins; an open one running: the learners with a
-- counted completion, read only for the rows listed).
SELECT c.challenge_id, c.title, c.board, c.metric, c.starts_at, c.ends_at, c.join_rule,
       c.max_size, c.joined, c.rewards, c.notify, c.grace_seconds, c.created_at,
       c.decided_at,
       CASE WHEN c.decided_at IS NOT NULL THEN c.participants
            WHEN c.join_rule = 'required' THEN c.joined
            WHEN c.starts_at > %(now)s THEN 0
            ELSE (SELECT count(*) FROM laurels_challenge_standings_v1(c.challenge_id, 'shared'))
       END AS participants
FROM challenges c
WHERE c.challenge_id > %(after)s
  AND (%(challenge_id)s::text IS NULL OR c.challenge_id = %(challenge_id)s)
  AND (%(status)s::text IS NULL
       OR (%(status)s = 'upcoming' AND c.starts_at > %(now)s)
       OR (%(status)s = 'active' AND c.starts_at <= %(now)s AND c.ends_at > %(now)s)
       OR (%(status)s = 'ended' AND c.ends_at <= %(now)s))
ORDER BY c.challenge_id LIMIT %(limit)s;

-- name: lock_challenge_creation
-- locks: challenge
-- Two creations of one challenge at once: the second waits here until the
-- first commits, then finds its row.
SELECT pg_advisory_xact_lock(hashtextextended('laurels challenge ' || %(challenge_id)s, 0));
