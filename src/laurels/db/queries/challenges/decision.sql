-- A challenge's decision and its live notifications (challenges/decision.py).

-- name: challenges_due
-- The challenges not decided whose end plus grace has passed at `now`,
-- oldest end first.
SELECT challenge_id FROM challenges
WHERE decided_at IS NULL AND ends_at <= %(now)s
  AND ends_at + make_interval(secs => grace_seconds) <= %(now)s
ORDER BY ends_at, challenge_id LIMIT 100;

-- name: decide_challenge
-- The decision, set-based, from the completions that count now: every
-- ranked participant's rank, score and reward frozen (the shown ones: not
-- hidden, suspended nor erased), a challenge_result notification each, the
-- challenge.decided event, and the challenge marked decided with how many
-- took part (the joins, or the learners with a counted completion). The
-- caller holds the challenge's row (lock_challenge).
-- Its notifications fire `notification_webhook` (laurels_notifications_webhook_v1:
-- a delivery each while the settings want them). No lock.
WITH ch AS (SELECT * FROM challenges WHERE challenge_id = %(challenge_id)s),
st AS (SELECT * FROM laurels_challenge_standings_v1(%(challenge_id)s, %(policy)s)),
rewards AS (
    SELECT (r ->> 'from')::int AS from_rank, (r ->> 'to')::int AS to_rank, r ->> 'reward' AS reward
    FROM ch, jsonb_array_elements(ch.rewards) r),
results AS (
    INSERT INTO challenge_results (challenge_id, user_id, rank, score, last_completed_at, reward)
    SELECT %(challenge_id)s, s.user_id, s.rank, s.score, s.last_at,
           (SELECT w.reward FROM rewards w WHERE s.rank BETWEEN w.from_rank AND w.to_rank)
    FROM st s WHERE s.shown ORDER BY s.user_id
    ON CONFLICT DO NOTHING
    RETURNING user_id, rank, score, reward),
notified AS (
    INSERT INTO notifications (user_id, kind, season, data, dedup_key)
    SELECT r.user_id, 'challenge_result', %(label)s,
           jsonb_build_object('challenge_id', %(challenge_id)s, 'title', ch.title,
                              'rank', r.rank, 'score', r.score, 'reward', r.reward)
           || CASE WHEN ch.board = 'global' THEN '{}'::jsonb
                   ELSE jsonb_build_object('board', ch.board, 'metric', ch.metric) END,
           'challenge_result:' || %(challenge_id)s
    FROM results r, ch ORDER BY r.user_id
    ON CONFLICT DO NOTHING
    RETURNING id),
took_part AS (
    SELECT CASE WHEN ch.join_rule = 'required' THEN ch.joined
                ELSE (SELECT count(*) FROM st) END AS n FROM ch),
event AS (
    SELECT laurels_enqueue_webhook_v1('challenge.decided', NULL, jsonb_build_object(
        'challenge_id', %(challenge_id)s, 'participants', (SELECT n FROM took_part),
        'rewarded', coalesce((SELECT jsonb_agg(jsonb_build_object(
                                  'user_id', r.user_id, 'rank', r.rank, 'reward', r.reward)
                                  ORDER BY r.rank, r.user_id)
                              FROM results r WHERE r.reward IS NOT NULL), '[]'::jsonb)))),
decided AS (
    UPDATE challenges SET decided_at = now(), participants = (SELECT n FROM took_part)
    WHERE challenge_id = %(challenge_id)s
    RETURNING participants),
unwatched AS (DELETE FROM challenge_watch WHERE challenge_id = %(challenge_id)s)
SELECT (SELECT count(*) FROM results) AS ranked, (SELECT count(*) FROM notified) AS notified,
       (SELECT participants FROM decided) AS participants,
       (SELECT count(*) FROM event) AS events;

-- name: watched_challenges
-- The challenges that notify and run at `now` (started, not ended).
SELECT challenge_id, title, board, metric FROM challenges
WHERE notify AND decided_at IS NULL AND starts_at <= %(now)s AND ends_at > %(now)s
ORDER BY challenge_id;

-- name: lock_challenge_watch
-- locks: challenge
-- One look at a challenge's top 100 at a time (any process), and none across
-- an erasure: its row FOR NO KEY UPDATE, or no row when another holds it
-- (another look, a join, a decision, an erasure's share: looked at on a
-- later tick). An erasure waits for a look that holds it, then deletes what
-- the look wrote of the learner.
SELECT challenge_id FROM challenges WHERE challenge_id = %(challenge_id)s
FOR NO KEY UPDATE SKIP LOCKED;

-- name: challenge_watch_look
-- A look at a challenge's top 100 (the shown learners) beside the last
-- look's ranks, and the new look kept in place of the last (one statement:
-- every CTE reads the table as it was). Each learner of either look: their
-- rank and score now (null: not in the top 100 now), their last rank (null:
-- new to it), and how many the last look held.
WITH now_top AS (
    SELECT user_id, rank::int AS rank, score
    FROM laurels_challenge_standings_v1(%(challenge_id)s, %(policy)s)
    WHERE shown AND pos <= 100),
before AS (SELECT user_id, rank FROM challenge_watch WHERE challenge_id = %(challenge_id)s),
gone AS (DELETE FROM challenge_watch w WHERE w.challenge_id = %(challenge_id)s
         AND NOT EXISTS (SELECT 1 FROM now_top n WHERE n.user_id = w.user_id)),
kept AS (INSERT INTO challenge_watch AS w (challenge_id, user_id, rank)
         SELECT %(challenge_id)s, user_id, rank FROM now_top
         ON CONFLICT (challenge_id, user_id) DO UPDATE SET rank = EXCLUDED.rank)
SELECT coalesce(n.user_id, b.user_id) AS user_id, n.rank, n.score, b.rank AS was_rank,
       (SELECT count(*) FROM before) AS looked
FROM now_top n FULL JOIN before b ON b.user_id = n.user_id;

-- name: completions_high_water
-- The newest completion's seq: the watch looks again only after it moves.
SELECT coalesce(max(seq), 0) AS seq FROM completions;
