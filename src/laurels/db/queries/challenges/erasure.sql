-- What an erasure asks of the challenges (challenges/erasure.py).

-- name: share_undecided_challenges
-- locks: challenge
-- An erasure: every challenge not decided yet, shared, in id order, after
-- the learner's row: a join or decision in flight commits first (and is
-- undone below), a later one finds the learner erased.
SELECT challenge_id FROM challenges WHERE decided_at IS NULL
ORDER BY challenge_id FOR SHARE;

-- name: forget_challenge_learner
-- An erasure: the learner's joins, results and place in a watch go, and
-- every challenge.decided event, sent or not, stops naming them.
WITH j AS (DELETE FROM challenge_joins WHERE user_id = %(user_id)s),
     r AS (DELETE FROM challenge_results WHERE user_id = %(user_id)s),
     w AS (DELETE FROM challenge_watch WHERE user_id = %(user_id)s)
UPDATE webhook_deliveries d
SET body = jsonb_set(d.body, '{data,rewarded}', coalesce((
    SELECT jsonb_agg(e) FROM jsonb_array_elements(d.body #> '{data,rewarded}') e
    WHERE (e ->> 'user_id')::bigint <> %(user_id)s), '[]'::jsonb))
WHERE d.type = 'challenge.decided'
  AND d.body #> '{data,rewarded}' @> jsonb_build_array(jsonb_build_object('user_id', %(user_id)s::bigint));
