-- Weekly leagues (leagues/cohorts.py): joining, placement, zones, the decision, reads.

-- name: store_league_settings
-- The deployment's league switch, stored by the serving process (every
-- writer's transaction reads it: migration 012).
INSERT INTO league_settings AS l (id, enabled) VALUES (true, %(enabled)s)
ON CONFLICT (id) DO UPDATE SET enabled = EXCLUDED.enabled, updated_at = now();

-- name: league_weeks_open
-- The weeks whose leagues are not decided yet and that someone joined.
SELECT DISTINCT j.season FROM league_joins j
LEFT JOIN league_weeks w ON w.season = j.season
WHERE w.decided_at IS NULL ORDER BY 1;

-- name: lock_league_week
-- locks: league
-- The week's league row, made if missing, and its placer/decider lock (one
-- at a time per week, in any process).
WITH made AS (INSERT INTO league_weeks (season) VALUES (%(season)s) ON CONFLICT DO NOTHING)
SELECT pg_advisory_xact_lock(hashtextextended('laurels league ' || %(season)s, 0)) AS locked;

-- name: league_week
-- A week's league state: decided or not, and the zone pass's watermark.
SELECT season, decided_at, zone_seq FROM league_weeks WHERE season = %(season)s;

-- name: place_joins
-- Place up to `limit` joins of a week in joining order: each in its tier
-- (the learner's after their latest decided week, the lowest without one,
-- at most the highest), in the tier's next slot, cohort = slot / size, so
-- every cohort is full but the newest. A learner with a membership in an
-- earlier week not decided yet (placed, or joined before this join) is
-- pending: left for later. A join made after the learner's join of a later
-- week is superseded (two joins that raced, neither seeing the other:
-- migration 022): it is deleted, never placed. A cohort that gains members
-- is touched (the zone pass reads it again: their points predate it). One
-- statement; the caller holds the week's lock. Returns the cohorts that
-- gained members.
WITH superseded AS (
    DELETE FROM league_joins j
    WHERE j.season = %(season)s AND NOT j.placed
      AND EXISTS (SELECT 1 FROM league_joins l WHERE l.user_id = j.user_id
                    AND l.season > j.season AND l.join_seq < j.join_seq)),
todo AS (
    SELECT j.season, j.user_id, j.join_seq, least(coalesce(t.tier, 0), %(top)s) AS tier
    FROM league_joins j LEFT JOIN league_tiers t ON t.user_id = j.user_id
    WHERE j.season = %(season)s AND NOT j.placed
      AND NOT EXISTS (SELECT 1 FROM league_joins l WHERE l.user_id = j.user_id
                        AND l.season > j.season AND l.join_seq < j.join_seq)
      AND NOT EXISTS (SELECT 1 FROM league_joins e LEFT JOIN league_weeks w
                                                  ON w.season = e.season
                      WHERE e.user_id = j.user_id AND e.season < j.season
                        AND (e.placed OR e.join_seq < j.join_seq)
                        AND w.decided_at IS NULL)
    ORDER BY j.join_seq LIMIT %(limit)s),
numbered AS (
    SELECT t.*, row_number() OVER (PARTITION BY t.tier ORDER BY t.join_seq) AS r FROM todo t),
slotted AS (
    SELECT n.season, n.user_id, n.tier, (coalesce(f.members, 0) + n.r - 1)::integer AS slot
    FROM numbered n LEFT JOIN league_fill f ON f.season = n.season AND f.tier = n.tier),
placed AS (
    INSERT INTO league_members (season, user_id, tier, cohort, slot)
    SELECT s.season, s.user_id, s.tier, s.slot / %(size)s, s.slot FROM slotted s
    ON CONFLICT DO NOTHING
    RETURNING season, user_id, tier, cohort),
marked AS (
    UPDATE league_joins j SET placed = true FROM todo t
    WHERE j.season = t.season AND j.user_id = t.user_id),
filled AS (
    INSERT INTO league_fill AS f (season, tier, members)
    SELECT s.season, s.tier, max(s.slot) + 1 FROM slotted s GROUP BY 1, 2
    ON CONFLICT (season, tier) DO UPDATE SET members = EXCLUDED.members),
touched AS (
    INSERT INTO league_touches (season, tier, cohort)
    SELECT DISTINCT p.season, p.tier, p.cohort FROM placed p)
SELECT p.tier, p.cohort, count(*) AS joined FROM placed p GROUP BY 1, 2 ORDER BY 1, 2;

-- name: league_membership
-- A learner's membership of a week (or their join, not yet placed), and
-- the latest earlier week of theirs that is undecided (as place_joins
-- decides; null when none: not pending). A superseded join is none.
SELECT j.user_id, m.tier, m.cohort, m.zone, (m.user_id IS NOT NULL) AS placed,
       coalesce(t.tier, 0) AS tier_now,
       (SELECT max(e.season) FROM league_joins e LEFT JOIN league_weeks w
                                                ON w.season = e.season
        WHERE e.user_id = j.user_id AND e.season < j.season
          AND (e.placed OR e.join_seq < j.join_seq)
          AND w.decided_at IS NULL) AS waiting_for
FROM league_joins j
LEFT JOIN league_members m ON m.season = j.season AND m.user_id = j.user_id
LEFT JOIN league_tiers t ON t.user_id = j.user_id
WHERE j.season = %(season)s AND j.user_id = %(user_id)s
  AND (j.placed OR NOT EXISTS (SELECT 1 FROM league_joins l WHERE l.user_id = j.user_id
                                 AND l.season > j.season AND l.join_seq < j.join_seq));

-- name: league_standing_of
-- A learner in no league of a week: their tier after their latest decided
-- week (none: the lowest) and why they may not have joined (hidden,
-- suspended). No row: a learner never seen.
SELECT coalesce(t.tier, 0) AS tier, u.visibility, u.suspended_at IS NOT NULL AS suspended
FROM (SELECT %(user_id)s::bigint AS user_id) k
LEFT JOIN league_tiers t ON t.user_id = k.user_id
LEFT JOIN users u ON u.user_id = k.user_id;

-- name: cohort_members
-- A cohort's members and the zone each was last told of.
SELECT user_id, zone FROM league_members
WHERE season = %(season)s AND tier = %(tier)s AND cohort = %(cohort)s ORDER BY user_id;

-- name: cohort_results
-- A decided cohort's board as decided: each member ranked then, with their
-- rank, score and outcome, and their profile as PostgreSQL has it now (the
-- reader applies privacy as it reads).
SELECT r.user_id, r.rank, r.score, r.outcome, u.display_name,
       coalesce(u.visibility, 'public') AS visibility
FROM league_results r LEFT JOIN users u ON u.user_id = r.user_id
WHERE r.season = %(season)s AND r.tier = %(tier)s AND r.cohort = %(cohort)s
  AND r.rank IS NOT NULL
ORDER BY r.rank, r.user_id;

-- name: league_result_of
-- A learner's result of a decided week.
SELECT tier, cohort, rank, outcome, new_tier FROM league_results
WHERE season = %(season)s AND user_id = %(user_id)s;

-- name: league_history
-- A learner's decided weeks, newest first, after a week (a page's last).
SELECT season, tier, cohort, rank, outcome, new_tier FROM league_results
WHERE user_id = %(user_id)s AND (%(after)s::text IS NULL OR season < %(after)s)
ORDER BY season DESC LIMIT %(limit)s;

-- name: league_summary
-- A week's tiers: cohorts, members, and (once decided) who went up and down.
SELECT m.tier, count(DISTINCT m.cohort) AS cohorts, count(*) AS members,
       count(*) FILTER (WHERE r.outcome = 'promoted') AS promoted,
       count(*) FILTER (WHERE r.outcome = 'demoted') AS demoted
FROM league_members m
LEFT JOIN league_results r ON r.season = m.season AND r.user_id = m.user_id
WHERE m.season = %(season)s GROUP BY m.tier ORDER BY m.tier;

-- name: league_cohorts
-- A week's cohorts (of one tier, or all), by tier then cohort, after a
-- (tier, cohort) position: their members.
SELECT m.tier, m.cohort, count(*) AS members FROM league_members m
WHERE m.season = %(season)s AND (%(tier)s::smallint IS NULL OR m.tier = %(tier)s)
  AND (m.tier, m.cohort) > (%(after_tier)s::smallint, %(after_cohort)s::integer)
GROUP BY 1, 2 ORDER BY 1, 2 LIMIT %(limit)s;

-- name: decide_league_week
-- The week's decision, set-based, from the completions that count now: each
-- cohort ranked by the tie policy among its members who are not hidden (nor
-- suspended) and have points; each member's outcome by the zone of their
-- final rank among the `n` ranked (the cutoffs table: leagues/rules.py
-- `cutoffs` for every tier and `n`, the one rule; the others stay, rank
-- null); the tiers that change; a league_result notification each. The
-- caller holds the week's lock and the season row.
-- Its notifications fire `notification_webhook`
-- (laurels_notifications_webhook_v1, once for the statement, the webhooks'
-- work): while the settings want `league_result`, a delivery for each, in
-- the decision's transaction. No lock.
WITH scores AS (
    SELECT m.user_id, sum(c.points) AS score, max(c.completed_at) AS last_at
    FROM league_members m
    JOIN completions c ON c.season = m.season AND c.user_id = m.user_id
                      AND c.voided_at IS NULL
    WHERE m.season = %(season)s GROUP BY m.user_id),
eligible AS (
    SELECT m.user_id, m.tier, m.cohort, s.score, s.last_at
    FROM league_members m JOIN scores s ON s.user_id = m.user_id
    JOIN users u ON u.user_id = m.user_id
    WHERE m.season = %(season)s AND u.visibility <> 'hidden' AND u.erased_at IS NULL
      AND s.score > 0),
ranked AS (
    SELECT e.user_id, e.score,
           CASE WHEN %(policy)s = 'first'
                THEN row_number() OVER (PARTITION BY e.tier, e.cohort
                                        ORDER BY e.score DESC, e.last_at, e.user_id)
                ELSE rank() OVER (PARTITION BY e.tier, e.cohort ORDER BY e.score DESC)
           END AS rank,
           count(*) OVER (PARTITION BY e.tier, e.cohort) AS n
    FROM eligible e),
cutoffs AS (
    SELECT * FROM unnest(%(cut_tiers)s::int[], %(cut_sizes)s::int[], %(cut_promote)s::int[],
                         %(cut_demote)s::int[]) AS c(tier, n, promote_through, demote_after)),
outcomes AS (
    SELECT m.user_id, m.tier, m.cohort, r.rank, r.score,
           CASE WHEN r.rank IS NULL THEN 'stayed'
                WHEN r.rank <= c.promote_through THEN 'promoted'
                WHEN r.rank > c.demote_after THEN 'demoted'
                ELSE 'stayed' END AS outcome
    FROM league_members m LEFT JOIN ranked r ON r.user_id = m.user_id
    LEFT JOIN cutoffs c ON c.tier = m.tier AND c.n = r.n
    WHERE m.season = %(season)s),
results AS (
    INSERT INTO league_results (season, user_id, tier, cohort, rank, score, outcome, new_tier)
    SELECT %(season)s, o.user_id, o.tier, o.cohort, o.rank, o.score, o.outcome,
           o.tier + CASE o.outcome WHEN 'promoted' THEN 1 WHEN 'demoted' THEN -1 ELSE 0 END
    FROM outcomes o ORDER BY o.user_id  -- in key order: each index is written page by page
    ON CONFLICT DO NOTHING
    RETURNING user_id, tier, cohort, rank, outcome, new_tier),
tiers AS (  -- only the tiers that change: who stays keeps their row (or none: 0)
    INSERT INTO league_tiers AS t (user_id, tier, season)
    SELECT r.user_id, r.new_tier, %(season)s FROM results r WHERE r.new_tier <> r.tier
    ORDER BY r.user_id
    ON CONFLICT (user_id) DO UPDATE SET tier = EXCLUDED.tier, season = EXCLUDED.season
    WHERE t.season < EXCLUDED.season),
notified AS (
    INSERT INTO notifications (user_id, kind, season, data, dedup_key)
    SELECT r.user_id, 'league_result', %(season)s, jsonb_build_object(
               'tier', (%(names)s::text[])[r.tier + 1],
               'cohort_id', %(season)s || '.' || r.tier || '.' || r.cohort,
               'rank', r.rank, 'outcome', r.outcome,
               'new_tier', (%(names)s::text[])[r.new_tier + 1]),
           'league_result:' || %(season)s
    FROM results r ORDER BY r.user_id
    ON CONFLICT DO NOTHING
    RETURNING user_id, id),
decided AS (
    UPDATE league_weeks SET decided_at = now() WHERE season = %(season)s),
untouched AS (  -- nothing is read again in a decided week
    DELETE FROM league_touches WHERE season = %(season)s)
SELECT (SELECT count(*) FROM results) AS members, (SELECT count(*) FROM notified) AS notified;

-- name: league_touched_cohorts
-- The cohorts of a week whose members completed something after `since`
-- (a seq), and the newest seq seen: the zone pass looks at those.
-- Only completions every board has applied (below the oldest outbox row):
-- their cohort's board, read now, shows them.
SELECT m.tier, m.cohort, max(c.seq) AS last_seq
FROM completions c JOIN league_members m ON m.season = c.season AND m.user_id = c.user_id
WHERE c.season = %(season)s AND c.seq > %(since)s
  AND c.seq < coalesce((SELECT min(o.seq) FROM outbox o), 9223372036854775807)
GROUP BY 1, 2;

-- name: league_ready_touches
-- The touches of a week whose change every board has applied (no touch of a
-- correction whose outbox row is still there), oldest first.
SELECT t.id, t.tier, t.cohort FROM league_touches t
WHERE t.season = %(season)s
  AND (t.seq IS NULL OR NOT EXISTS (SELECT 1 FROM outbox o WHERE o.seq = t.seq))
ORDER BY t.id;

-- name: delete_league_touches
-- The touches a zone pass has read.
DELETE FROM league_touches WHERE id = ANY(%(ids)s::bigint[]);

-- name: set_zone_seq
-- The zone pass's watermark: completions up to this seq are read.
UPDATE league_weeks SET zone_seq = greatest(zone_seq, %(seq)s) WHERE season = %(season)s;

-- name: lock_touched_members
-- locks: members
-- The members of the zone pass's cohorts (by tier and cohort number), their
-- rows locked in learner order, with their visibility as PostgreSQL has it
-- now (hidden also while suspended): a touch is read with the change that
-- wrote it, whether or not Redis has the profile yet.
SELECT m.tier, m.cohort, m.user_id, m.zone, coalesce(u.visibility, 'public') AS visibility
FROM league_members m
JOIN unnest(%(tiers)s::smallint[], %(cohorts)s::integer[]) AS t(tier, cohort)
  ON m.tier = t.tier AND m.cohort = t.cohort
LEFT JOIN users u ON u.user_id = m.user_id
WHERE m.season = %(season)s
ORDER BY m.user_id FOR UPDATE OF m;

-- name: set_zones
-- The zone each member of the pass's cohorts is in now.
UPDATE league_members m SET zone = z.zone
FROM unnest(%(user_ids)s::bigint[], %(zones)s::text[]) AS z(user_id, zone)
WHERE m.season = %(season)s AND m.user_id = z.user_id;

-- name: notify_league_zones
-- locks: deliveries
-- One league_zone per learner given: at most one unread per learner and week,
-- so an unread one is refreshed (its new dedup_key sends it to webhooks
-- again), else one is created. Returns each learner's notification id.
-- Triggers (the webhooks' work, in the zone pass's transaction): each row
-- refreshed fires `notification_refreshed_webhook`
-- (laurels_notification_webhook_v1: a delivery still waiting for its first
-- attempt is locked FOR SHARE until commit and carries the new state, else
-- a new one is queued after the coalescing window, as refresh_overtaken);
-- the insert fires `notification_webhook` (laurels_notifications_webhook_v1,
-- once for the statement: a delivery for each notification inserted). Both
-- only while the webhook settings want `league_zone`.
WITH z AS (
    SELECT * FROM unnest(%(user_ids)s::bigint[], %(data)s::text[], %(dedup_keys)s::text[])
        AS z(user_id, data, dedup_key)),
refreshed AS (
    UPDATE notifications n SET data = z.data::jsonb, updated_at = now(),
                               dedup_key = z.dedup_key
    FROM z
    WHERE n.user_id = z.user_id AND n.season = %(season)s AND n.kind = 'league_zone'
      AND NOT n.read
    RETURNING n.id, n.user_id),
inserted AS (
    INSERT INTO notifications (user_id, kind, season, data, dedup_key)
    SELECT z.user_id, 'league_zone', %(season)s, z.data::jsonb, z.dedup_key FROM z
    WHERE NOT EXISTS (SELECT 1 FROM refreshed r WHERE r.user_id = z.user_id)
    ORDER BY z.user_id
    ON CONFLICT DO NOTHING
    RETURNING id, user_id)
SELECT id, user_id FROM refreshed
UNION ALL
SELECT id, user_id FROM inserted;
