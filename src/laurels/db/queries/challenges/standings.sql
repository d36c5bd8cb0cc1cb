-- A challenge's boards as they are read (challenges/standings.py): live from
-- the completions (laurels_challenge_standings_v1, migration 039) until it
-- is decided, then its frozen results.

-- name: challenge_live_all
-- The live board whole, in board order (the shown learners by `pos`, then
-- the others), tie times in microseconds since 1970: what a read pages through, kept a moment when it is large
-- (challenges/standings.py).
SELECT user_id, score, (extract(epoch FROM last_at) * 1000000)::bigint AS last_us,
       visibility, display_name, shown, rank
FROM laurels_challenge_standings_v1(%(challenge_id)s, %(policy)s)
ORDER BY pos NULLS LAST, user_id;

-- name: challenge_result_page
-- A decided challenge's frozen standings after (`after_rank`,
-- `after_user`), as the learners may be shown now (hidden, suspended and
-- erased ones left out, ranks as decided).
SELECT r.user_id, r.rank, r.score, r.reward, u.visibility, u.display_name
FROM challenge_results r LEFT JOIN users u ON u.user_id = r.user_id
WHERE r.challenge_id = %(challenge_id)s
  AND (u.user_id IS NULL OR (u.visibility <> 'hidden' AND u.suspended_at IS NULL
                             AND u.erased_at IS NULL))
  AND (%(after_user)s::bigint IS NULL
       OR (r.rank, r.user_id) > (%(after_rank)s::int, %(after_user)s::bigint))
ORDER BY r.rank, r.user_id LIMIT %(limit)s;

-- name: challenge_result_total
-- How many of a decided challenge's results a board may show now.
SELECT (SELECT count(*) FROM challenge_results WHERE challenge_id = %(challenge_id)s)
     - (SELECT count(*) FROM challenge_results r JOIN users u ON u.user_id = r.user_id
        WHERE r.challenge_id = %(challenge_id)s
          AND (u.visibility = 'hidden' OR u.suspended_at IS NOT NULL
               OR u.erased_at IS NOT NULL)) AS total;

-- name: challenge_result_of
-- One learner's decided standing (shown or not now), or no row.
SELECT r.user_id, r.rank, r.score, r.reward, coalesce(u.visibility, 'public') AS visibility,
       u.display_name,
       (u.user_id IS NULL OR (u.visibility <> 'hidden' AND u.suspended_at IS NULL
                              AND u.erased_at IS NULL)) AS shown,
       (SELECT count(*) FROM challenge_results o LEFT JOIN users v ON v.user_id = o.user_id
        WHERE o.challenge_id = r.challenge_id AND (o.rank, o.user_id) < (r.rank, r.user_id)
          AND (v.user_id IS NULL OR (v.visibility <> 'hidden' AND v.suspended_at IS NULL
                                     AND v.erased_at IS NULL))) + 1 AS at
FROM challenge_results r LEFT JOIN users u ON u.user_id = r.user_id
WHERE r.challenge_id = %(challenge_id)s AND r.user_id = %(user_id)s;

-- name: challenge_result_places
-- The shown learners at places `first` to `last` of a decided board.
WITH res AS (
    SELECT r.user_id, r.rank, r.score, r.reward, u.visibility, u.display_name,
           row_number() OVER (ORDER BY r.rank, r.user_id) AS pos
    FROM challenge_results r LEFT JOIN users u ON u.user_id = r.user_id
    WHERE r.challenge_id = %(challenge_id)s
      AND (u.user_id IS NULL OR (u.visibility <> 'hidden' AND u.suspended_at IS NULL
                                 AND u.erased_at IS NULL)))
SELECT * FROM res WHERE pos BETWEEN %(first)s AND %(last)s ORDER BY pos;

-- name: learner_challenges
-- The challenges a learner joined or has a counted completion on (a
-- decided one: a result), by end, newest first, with their decided rank,
-- score and reward (the live ones are read from the live board).
WITH mine AS (
    SELECT c.* FROM challenges c
    WHERE EXISTS (SELECT 1 FROM challenge_joins j
                  WHERE j.challenge_id = c.challenge_id AND j.user_id = %(user_id)s)
       OR EXISTS (SELECT 1 FROM challenge_results r
                  WHERE r.challenge_id = c.challenge_id AND r.user_id = %(user_id)s)
       OR (c.decided_at IS NULL AND c.join_rule = 'open' AND c.starts_at <= %(now)s
           AND EXISTS (SELECT 1 FROM completions k
                       WHERE k.user_id = %(user_id)s AND k.voided_at IS NULL
                         AND k.completed_at >= c.starts_at AND k.completed_at < c.ends_at
                         AND (c.board = 'global' OR k.tags @> ARRAY[c.board]))))
SELECT m.challenge_id, m.title, m.board, m.metric, m.starts_at, m.ends_at, m.join_rule,
       m.max_size, m.joined, m.rewards, m.notify, m.grace_seconds, m.created_at,
       m.decided_at, m.participants, j.joined_at,
       r.rank, r.score, r.reward
FROM mine m
LEFT JOIN challenge_joins j ON j.challenge_id = m.challenge_id AND j.user_id = %(user_id)s
LEFT JOIN challenge_results r ON r.challenge_id = m.challenge_id AND r.user_id = %(user_id)s
WHERE %(status)s::text IS NULL
   OR (%(status)s = 'upcoming' AND m.starts_at > %(now)s)
   OR (%(status)s = 'active' AND m.starts_at <= %(now)s AND m.ends_at > %(now)s)
   OR (%(status)s = 'ended' AND m.ends_at <= %(now)s)
ORDER BY m.ends_at DESC, m.challenge_id LIMIT 100;
