-- Voids and restores (ingest/corrections.py): the completion's state, the archive's
-- standing, the outbox row.

-- name: insert_outbox
-- A correction's new outbox row (the projector applies it if the fast path
-- does not). Fires `outbox_notify` (laurels_outbox_notify_v1): NOTIFY
-- laurels_outbox at commit, the projector's wake-up (PostgreSQL's lock for
-- queueing notifications, at commit, as ingest_batch says).
INSERT INTO outbox (seq) SELECT unnest(%(seqs)s::bigint[]);

-- name: get_user
-- A learner's profile as stored (the correction's fast path carries it).
SELECT user_id, display_name, visibility, profile_version, erased_at IS NOT NULL AS erased
FROM users WHERE user_id = %(user_id)s;

-- name: lock_seasons
-- locks: seasons
-- Share-lock the seasons an ingest writes to: finalizing takes FOR UPDATE, so
-- it waits for these ingests and no completion slips in after the archive.
SELECT season, finalized_at IS NOT NULL AS finalized
FROM seasons WHERE season = ANY(%(seasons)s) ORDER BY season FOR SHARE;

-- name: lock_completion
-- locks: completion
-- A correction's completion, locked (after its learner and seasons: the lock
-- order of docs/concurrency.md), with its state.
SELECT c.seq, c.completion_id, c.user_id, c.points, c.completed_at, c.season,
       c.voided_at IS NULL AS counted, c.correction, c.tags
FROM completion_ids k JOIN completions c ON c.seq = k.seq AND c.completed_at = k.completed_at
WHERE k.completion_id = %(completion_id)s FOR UPDATE OF c;

-- name: find_completion
-- A completion by its id, through completion_ids (migration 017: its key is
-- the row's).
SELECT c.seq, c.user_id, c.completed_at, c.tags
FROM completion_ids k JOIN completions c ON c.seq = k.seq AND c.completed_at = k.completed_at
WHERE k.completion_id = %(completion_id)s;

-- name: set_voided
-- Void (voided = true) or restore a completion: its correction number goes
-- up. The caller then replaces its outbox row (delete_outbox, which waits for
-- a projector that holds the old one, then insert_outbox), so the new state
-- is projected and never lost.
-- Fires `league_join_on_restore` (laurels_league_join_v1, once for the
-- statement, the leagues' work): a restore joins its learner to the week's
-- leagues as an ingest does (league_join, ingest_batch); a void joins
-- nobody. No lock of LOCK_ORDER's; a join waits for another transaction
-- joining the same learner to the same week.
UPDATE completions SET voided_at = CASE WHEN %(voided)s THEN now() END,
                       correction = correction + 1
WHERE seq = %(seq)s RETURNING correction;

-- name: delete_standing
-- A corrected learner's archived standing, before insert_standing writes it
-- anew.
DELETE FROM season_standings WHERE season = %(season)s AND user_id = %(user_id)s;

-- name: insert_standing
-- A finalized season's standing of one learner, from the completions that
-- count (none: no standing), after delete_standing; the caller re-ranks.
INSERT INTO season_standings (season, user_id, score, last_completed_at)
SELECT %(season)s, %(user_id)s, METRIC(SCORE(completions)), TIE_AT(SCORE(completions), completed_at) FROM completions
WHERE SEASON_FILTER() AND user_id = %(user_id)s AND voided_at IS NULL
HAVING count(*) > 0;

-- name: archived_rank
-- A learner's rank in a finalized season's archive (the audit keeps it before
-- and after).
SELECT rank FROM season_standings WHERE season = %(season)s AND user_id = %(user_id)s;

-- name: audit_page
-- The audit log, newest first, a page after an entry id.
SELECT id, at, action, target, reason, details FROM audit
WHERE %(after_id)s::bigint IS NULL OR id < %(after_id)s
ORDER BY id DESC LIMIT %(limit)s;

-- name: learner_completions
-- A learner's completions in a range that count (`counted`) or not, on a
-- board (`tag`; NULL: the whole board): what a bulk correction changes,
-- found before it locks their seasons.
SELECT c.seq, c.completed_at, c.tags FROM completions c
WHERE c.user_id = %(user_id)s AND c.completed_at >= %(starts_at)s
  AND c.completed_at < %(ends_at)s AND (c.voided_at IS NULL) = %(counted)s
  AND (%(tag)s::text IS NULL OR c.tags @> ARRAY[%(tag)s::text])
ORDER BY c.seq;

-- name: lock_learner_completions
-- locks: completion
-- A bulk correction's completions, locked in seq order (after the learner
-- and their seasons: the lock order of docs/concurrency.md), with their ids
-- and state: those still in the state the correction changes.
SELECT c.seq, k.completion_id, c.user_id, c.points, c.completed_at, c.season, c.tags,
       c.correction
FROM completions c JOIN completion_ids k ON k.seq = c.seq AND k.completed_at = c.completed_at
WHERE c.user_id = %(user_id)s AND c.completed_at >= %(starts_at)s
  AND c.completed_at < %(ends_at)s AND (c.voided_at IS NULL) = %(counted)s
  AND (%(tag)s::text IS NULL OR c.tags @> ARRAY[%(tag)s::text])
ORDER BY c.seq FOR UPDATE OF c;

-- name: set_voided_many
-- A bulk correction's completions voided (voided = true) or restored, each
-- correction number up by one, in one statement (as set_voided). Fires
-- `league_join_on_restore` once, as set_voided: a restore joins the learner
-- to the leagues of each week they count in again.
UPDATE completions SET voided_at = CASE WHEN %(voided)s THEN now() END,
                       correction = correction + 1
WHERE seq = ANY(%(seqs)s::bigint[]) AND completed_at = ANY(%(ats)s::timestamptz[])
RETURNING seq, correction;

-- name: touch_corrected_cohorts
-- A bulk correction's learner's cohorts of the completions' weeks not
-- decided yet, each touch waiting for its completion's outbox row (as
-- touch_learner_cohorts, one statement for all of them).
INSERT INTO league_touches (season, tier, cohort, seq)
SELECT m.season, m.tier, m.cohort, c.seq
FROM unnest(%(seqs)s::bigint[], %(seasons)s::text[]) AS c(seq, season)
JOIN league_members m ON m.user_id = %(user_id)s AND m.season = c.season
LEFT JOIN league_weeks w ON w.season = m.season
WHERE w.decided_at IS NULL;

-- name: enqueue_correction_webhooks
-- A bulk correction's events for the webhook, one a completion (as
-- enqueue_webhook), naming the learner for erasure.
SELECT count(laurels_enqueue_webhook_v1(%(type)s, %(user_id)s, d)) AS n
FROM unnest(%(data)s::jsonb[]) AS d;
