-- What an erasure asks of the leagues (leagues/erasure.py): the locks of the
-- weeks a learner joined, and their league rows.

-- name: lock_league_weeks_of
-- locks: league
-- An erasure: the placer/decider lock of one week the learner joined (the
-- caller takes them in name order, before the learner's seasons), so no
-- placement, zone pass or decision of theirs runs across the erasure.
SELECT pg_advisory_xact_lock(hashtextextended('laurels league ' || %(season)s, 0)) AS locked;

-- name: learner_league_weeks
-- The weeks a learner joined (placed or not), in name order.
SELECT DISTINCT season FROM league_joins WHERE user_id = %(user_id)s ORDER BY season;

-- name: delete_league_history
-- An erasure: the learner's joins, memberships, results and tier go (the
-- others keep their outcomes). Returns the cohorts they were in (their
-- live streams check their readers again).
WITH j AS (DELETE FROM league_joins WHERE user_id = %(user_id)s),
     m AS (DELETE FROM league_members WHERE user_id = %(user_id)s
           RETURNING season, tier, cohort),
     r AS (DELETE FROM league_results WHERE user_id = %(user_id)s),
     t AS (DELETE FROM league_tiers WHERE user_id = %(user_id)s)
SELECT season, tier, cohort FROM m;
