-- name: lock_users
-- Share-lock the learners of an ingest so a concurrent profile change either
-- commits first (we read it) or waits for us (it then sees our seasons).
SELECT user_id, display_name, visibility, profile_version, erased_at IS NOT NULL AS erased
FROM users WHERE user_id = ANY(%(user_ids)s) ORDER BY user_id FOR SHARE;

-- name: find_completions
-- By id through completion_ids (migration 017): its key is the row's.
SELECT c.completion_id, c.seq, c.user_id, c.points, c.completed_at, c.received_at, c.season
FROM completion_ids k JOIN completions c ON c.seq = k.seq AND c.completed_at = k.completed_at
WHERE k.completion_id = ANY(%(completion_ids)s);

-- name: ingest_batch
-- One round trip for a whole batch (migrations/004_ingest_function.sql, as
-- changed by 006_periods.sql).
SELECT * FROM laurels_ingest(%(completion_ids)s::text[], %(user_ids)s::bigint[],
                             %(points)s::int[], %(completed_ats)s::timestamptz[],
                             %(received_at)s, %(seasons)s::text[], %(closed)s::boolean[],
                             %(others)s::text[]);

-- name: insert_outbox
INSERT INTO outbox (seq) SELECT unnest(%(seqs)s::bigint[]);

-- name: delete_outbox
DELETE FROM outbox WHERE seq = ANY(%(seqs)s);

-- name: claim_outbox
-- The projector's batch: rows old enough that the fast path has given up on
-- them. Locked until applied and deleted, so an erasure (whose cascade
-- deletes these rows) waits for the apply, and a re-apply never reads a
-- completion or profile that is already gone.
-- A completion's row says its state now (counted or voided, and how many
-- corrections it has had): the board converges to it (apply.lua).
SELECT c.seq, c.user_id, c.points, c.completed_at, c.season, c.correction,
       c.voided_at IS NULL AS counted,
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
SELECT count(*) AS depth, coalesce(extract(epoch FROM now() - min(created_at)), 0) AS oldest_seconds
FROM outbox;

-- name: season_has_completions
SELECT EXISTS (SELECT 1 FROM completions WHERE SEASON_FILTER()) AS present;

-- name: season_seqs
-- A rebuild's idempotency bits: every completion of the season, in seq order.
SELECT seq FROM completions WHERE SEASON_FILTER() ORDER BY seq;

-- name: season_aggregates
-- A rebuild's board: one row per learner (the sum, the latest completion and
-- the profile), so a lost board is back in seconds per million completions.
-- Voided completions count nowhere.
SELECT c.user_id, sum(c.points)::bigint AS score, max(c.completed_at) AS last_at,
       coalesce(u.profile_version, 0) AS profile_version,
       coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name
FROM completions c LEFT JOIN users u ON u.user_id = c.user_id
WHERE SEASON_FILTER(c) AND c.voided_at IS NULL
GROUP BY c.user_id, u.profile_version, u.visibility, u.display_name;

-- name: completions_by_seq
SELECT seq, user_id, points, voided_at IS NULL AS counted
FROM completions WHERE seq = ANY(%(seqs)s);

-- name: season_corrections
-- A rebuild's record of corrected completions (their state and correction
-- number), so an older correction projected later changes nothing.
SELECT seq, correction, voided_at IS NULL AS counted FROM completions
WHERE SEASON_FILTER() AND correction > 0;

-- name: season_event_count
SELECT count(*) AS n FROM completions WHERE SEASON_FILTER();

-- name: season_sums
SELECT c.user_id, sum(c.points)::bigint AS score,
       min(coalesce(u.visibility, 'public')) AS visibility,
       min(coalesce(u.display_name, '')) AS display_name, max(c.completed_at) AS last_at
FROM completions c LEFT JOIN users u ON u.user_id = c.user_id
WHERE SEASON_FILTER(c) AND c.voided_at IS NULL
GROUP BY c.user_id ORDER BY c.user_id;

-- name: get_user
SELECT user_id, display_name, visibility, profile_version, erased_at IS NOT NULL AS erased
FROM users WHERE user_id = %(user_id)s;

-- name: upsert_user
-- While a learner is suspended their own choice of visibility is kept aside
-- (own_visibility) and they stay hidden: the platform cannot undo a suspension.
INSERT INTO users AS u (user_id, display_name, visibility, profile_version)
VALUES (%(user_id)s, %(display_name)s, coalesce(%(visibility)s, 'public'), 1)
ON CONFLICT (user_id) DO UPDATE SET
    display_name = coalesce(%(display_name)s, u.display_name),
    visibility = CASE WHEN u.suspended_at IS NULL THEN coalesce(%(visibility)s, u.visibility)
                      ELSE 'hidden' END,
    own_visibility = CASE WHEN u.suspended_at IS NULL THEN NULL
                          ELSE coalesce(%(visibility)s, u.own_visibility) END,
    profile_version = u.profile_version + 1,
    updated_at = now(), change_xid = pg_current_xact_id()
WHERE u.erased_at IS NULL
RETURNING user_id, display_name, visibility, profile_version, erased_at IS NOT NULL AS erased,
          coalesce(own_visibility, visibility) AS own_visibility;

-- name: lock_user_seasons
-- The seasons a learner has completions or standings in, share-locked (after
-- the learner's own row: users, then seasons, is every writer's lock order).
-- Finalizing takes FOR UPDATE on its season, so a profile change or an
-- erasure either commits before the archive is built (which then sees it) or
-- waits for the archive to commit (and then re-ranks or deletes it).
-- Every period's seasons: the week in `season`, the day, the month and `all`
-- from `completed_at` (a period that is not configured has no rows here).
SELECT season, finalized_at IS NOT NULL AS finalized FROM seasons
WHERE season IN (SELECT season FROM completions WHERE user_id = %(user_id)s
                 UNION SELECT to_char(completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')
                       FROM completions WHERE user_id = %(user_id)s
                 UNION SELECT to_char(completed_at AT TIME ZONE 'UTC', 'YYYY-MM')
                       FROM completions WHERE user_id = %(user_id)s
                 UNION SELECT 'all' FROM completions WHERE user_id = %(user_id)s
                 UNION SELECT season FROM season_standings WHERE user_id = %(user_id)s)
ORDER BY season FOR SHARE;

-- name: insert_rebuild
INSERT INTO rebuilds (rebuild_id, season, tie_policy, status)
VALUES (%(rebuild_id)s, %(season)s, %(tie_policy)s, 'running');

-- name: update_rebuild
UPDATE rebuilds SET status = %(status)s, events = %(events)s, error = %(error)s,
    finished_at = CASE WHEN %(status)s = 'running' THEN NULL ELSE now() END
WHERE rebuild_id = %(rebuild_id)s;

-- name: get_rebuild
SELECT rebuild_id, season, status, events, error FROM rebuilds WHERE rebuild_id = %(rebuild_id)s;

-- name: season_sums_for
SELECT c.user_id, sum(c.points)::bigint AS score,
       min(coalesce(u.visibility, 'public')) AS visibility,
       min(coalesce(u.display_name, '')) AS display_name, max(c.completed_at) AS last_at
FROM completions c LEFT JOIN users u ON u.user_id = c.user_id
WHERE SEASON_FILTER(c) AND c.voided_at IS NULL AND c.user_id = ANY(%(user_ids)s)
GROUP BY c.user_id;

-- name: ensure_seasons
INSERT INTO seasons (season) SELECT unnest(%(seasons)s::text[]) ORDER BY 1
ON CONFLICT (season) DO NOTHING;

-- name: lock_seasons
-- Share-lock the seasons an ingest writes to: finalizing takes FOR UPDATE, so
-- it waits for these ingests and no completion slips in after the archive.
SELECT season, finalized_at IS NOT NULL AS finalized
FROM seasons WHERE season = ANY(%(seasons)s) ORDER BY season FOR SHARE;

-- name: unfinalized_seasons
SELECT season FROM seasons WHERE finalized_at IS NULL ORDER BY season;

-- name: lock_season_for_finalize
SELECT finalized_at IS NOT NULL AS finalized FROM seasons WHERE season = %(season)s FOR UPDATE;

-- name: archive_standings
INSERT INTO season_standings (season, user_id, score, last_completed_at)
SELECT %(season)s, user_id, sum(points), max(completed_at)
FROM completions WHERE SEASON_FILTER() AND voided_at IS NULL GROUP BY user_id;

-- name: mark_finalized
UPDATE seasons SET finalized_at = now(), tie_policy = %(tie_policy)s WHERE season = %(season)s;

-- name: lock_archive
-- Re-ranking rewrites every standing of a season: one re-ranker at a time
-- (profile changes and erasures of different learners may meet here).
SELECT pg_advisory_xact_lock(hashtextextended('laurels:archive:' || %(season)s, 0));

-- name: clear_archive_ranks
UPDATE season_standings SET rank = NULL, pos = NULL WHERE season = %(season)s;

-- name: rerank_archive
-- Ranks of the public order (hidden learners take none), by the season's policy.
UPDATE season_standings st SET
    rank = CASE WHEN %(tie_policy)s = 'first' THEN p.first_pos + 1 ELSE p.shared_rank END,
    pos = CASE WHEN %(tie_policy)s = 'first' THEN p.first_pos ELSE p.shared_pos END
FROM (
    SELECT s.user_id,
           rank() OVER (ORDER BY s.score DESC) AS shared_rank,
           row_number() OVER (ORDER BY s.score DESC, s.user_id) - 1 AS shared_pos,
           row_number() OVER (ORDER BY s.score DESC, s.last_completed_at, s.user_id) - 1
               AS first_pos
    FROM season_standings s LEFT JOIN users u ON u.user_id = s.user_id
    WHERE s.season = %(season)s AND coalesce(u.visibility, 'public') <> 'hidden'
) p
WHERE st.season = %(season)s AND st.user_id = p.user_id;

-- name: archive_top
-- The archived board from the top, or after a position (after_score: a total;
-- then the tie: the latest completion under `first`, the user id).
SELECT st.user_id, st.score, st.rank, st.last_completed_at,
       coalesce(u.display_name, '') AS display_name,
       coalesce(u.visibility, 'public') AS visibility
FROM season_standings st LEFT JOIN users u ON u.user_id = st.user_id
WHERE st.season = %(season)s
  AND coalesce(u.visibility, 'public') <> 'hidden' AND u.erased_at IS NULL AND st.pos IS NOT NULL
  AND (%(after_score)s::bigint IS NULL OR st.score < %(after_score)s
       OR (st.score = %(after_score)s AND CASE WHEN %(tie_policy)s = 'first'
           THEN (st.last_completed_at, st.user_id) > (%(after_at)s::timestamptz, %(after_user)s::bigint)
           ELSE st.user_id > %(after_user)s::bigint END))
ORDER BY st.pos LIMIT %(limit)s;

-- name: archive_total
SELECT count(*) AS total FROM season_standings WHERE season = %(season)s AND pos IS NOT NULL;

-- name: archive_user
SELECT st.user_id, st.score, st.rank, st.pos, st.last_completed_at,
       coalesce(u.display_name, '') AS display_name,
       coalesce(u.visibility, 'public') AS visibility
FROM season_standings st LEFT JOIN users u ON u.user_id = st.user_id
WHERE st.season = %(season)s AND st.user_id = %(user_id)s;

-- name: archive_would_be
-- Where a hidden learner would stand: public learners ordered before them.
SELECT count(*) FILTER (WHERE st.score > %(score)s) AS better,
       count(*) FILTER (WHERE st.score > %(score)s OR (st.score = %(score)s AND (
           CASE WHEN %(tie_policy)s = 'first'
                THEN (st.last_completed_at, st.user_id) < (%(last)s, %(user_id)s)
                ELSE st.user_id < %(user_id)s END))) AS before
FROM season_standings st
WHERE st.season = %(season)s AND st.pos IS NOT NULL;

-- name: archive_slice
SELECT st.user_id, st.score, st.rank, coalesce(u.display_name, '') AS display_name,
       coalesce(u.visibility, 'public') AS visibility
FROM season_standings st LEFT JOIN users u ON u.user_id = st.user_id
WHERE st.season = %(season)s
  AND coalesce(u.visibility, 'public') <> 'hidden' AND u.erased_at IS NULL AND st.pos BETWEEN %(first)s AND %(last)s
ORDER BY st.pos;

-- name: erase_user
INSERT INTO users AS u (user_id, erased_at, profile_version) VALUES (%(user_id)s, now(), 1)
ON CONFLICT (user_id) DO UPDATE SET erased_at = coalesce(u.erased_at, now()),
    display_name = NULL, visibility = 'public', profile_version = u.profile_version + 1,
    updated_at = now(), change_xid = pg_current_xact_id();

-- name: delete_user_completions
-- An erasure: the learner's completions, their ids and their outbox rows
-- (waiting for a projector that holds them: docs/concurrency.md).
WITH gone AS (DELETE FROM completions WHERE user_id = %(user_id)s RETURNING seq, season,
                                                                          completion_id),
     ids AS (DELETE FROM completion_ids k USING gone g WHERE k.completion_id = g.completion_id),
     queued AS (DELETE FROM outbox o USING gone g WHERE o.seq = g.seq)
SELECT season FROM gone;

-- name: delete_user_standings
DELETE FROM season_standings WHERE user_id = %(user_id)s RETURNING season;

-- name: delete_user_notifications
DELETE FROM notifications WHERE user_id = %(user_id)s;

-- name: scrub_notifications_about
UPDATE notifications SET data = data - 'by_user_id' - 'by_display_name'
WHERE data ->> 'by_user_id' = %(user_id)s::text;

-- name: record_erasure
INSERT INTO erasures AS e (user_id, seasons) VALUES (%(user_id)s, %(seasons)s)
ON CONFLICT (user_id) DO UPDATE SET
    seasons = ARRAY(SELECT DISTINCT unnest(e.seasons || EXCLUDED.seasons));

-- name: pending_erasures
SELECT user_id, seasons FROM erasures
WHERE created_at <= now() - make_interval(secs => %(min_age_seconds)s);

-- name: finish_erasure
DELETE FROM erasures WHERE user_id = %(user_id)s AND seasons <@ %(seasons)s;

-- name: erased_since
-- Learners erased at or after a time (every one when it is null): the
-- tombstones a rebuild puts back (rebuild.py). Indexed by migration 009.
SELECT user_id FROM users
WHERE erased_at >= coalesce(%(since)s::timestamptz, '-infinity'::timestamptz)
ORDER BY user_id;

-- name: season_policies
SELECT season, coalesce(tie_policy, %(tie_policy)s) AS tie_policy FROM seasons
WHERE season = ANY(%(seasons)s) AND finalized_at IS NOT NULL;

-- name: open_seasons
SELECT season FROM seasons WHERE finalized_at IS NULL;

-- name: insert_notification
INSERT INTO notifications (user_id, kind, season, data, dedup_key)
VALUES (%(user_id)s, %(kind)s, %(season)s, %(data)s, %(dedup_key)s)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: refresh_overtaken
-- At most one unread "overtaken" per learner and season: refresh it instead.
UPDATE notifications SET data = %(data)s, created_at = now(), dedup_key = %(dedup_key)s
WHERE user_id = %(user_id)s AND season = %(season)s AND kind = 'overtaken' AND NOT read
RETURNING id;

-- name: notify_season_final
INSERT INTO notifications (user_id, kind, season, data, dedup_key)
SELECT user_id, 'season_final', season,
       jsonb_build_object('rank', rank, 'score', score), 'season_final:' || season
FROM season_standings WHERE season = %(season)s
ON CONFLICT DO NOTHING;

-- name: list_notifications
SELECT id, kind, season, data, created_at, read FROM notifications
WHERE user_id = %(user_id)s ORDER BY id DESC LIMIT %(limit)s;

-- name: naming_states
-- What a notification may say of the learners it names (notifications.py).
SELECT user_id, visibility, display_name, erased_at IS NOT NULL AS erased
FROM users WHERE user_id = ANY(%(user_ids)s);

-- name: get_notifications
SELECT id, kind, season, data, created_at, read FROM notifications
WHERE user_id = %(user_id)s AND id = ANY(%(ids)s) ORDER BY id;

-- name: season_final_of
-- A learner's notification of a kind written for everyone at once (a
-- season's final ranks, a week's league results), told to live streams by
-- one message per season rather than one per learner.
SELECT id, kind, season, data, created_at, read FROM notifications
WHERE user_id = %(user_id)s AND kind = %(kind)s AND season = %(season)s;

-- name: mark_read
UPDATE notifications SET read = true
WHERE user_id = %(user_id)s AND id = ANY(%(ids)s) AND NOT read
RETURNING id;

-- name: archived_states
SELECT st.user_id, st.score, coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name, st.last_completed_at AS last_at
FROM season_standings st LEFT JOIN users u ON u.user_id = st.user_id
WHERE st.season = %(season)s AND st.user_id = ANY(%(user_ids)s);

-- name: running_rebuild
SELECT rebuild_id FROM rebuilds
WHERE season = %(season)s AND tie_policy = %(tie_policy)s AND status = 'running'
ORDER BY started_at DESC LIMIT 1;

-- name: lock_redis_epoch
-- One process repairs after Redis changed; the others skip while it holds this.
SELECT fingerprint FROM redis_epochs WHERE key_prefix = %(key_prefix)s
FOR UPDATE SKIP LOCKED;

-- name: ensure_redis_epoch
INSERT INTO redis_epochs (key_prefix, fingerprint) VALUES (%(key_prefix)s, '')
ON CONFLICT (key_prefix) DO NOTHING;

-- name: set_redis_epoch
UPDATE redis_epochs SET fingerprint = %(fingerprint)s, repaired_at = now()
WHERE key_prefix = %(key_prefix)s;

-- name: all_seasons
SELECT season, finalized_at IS NOT NULL AS finalized FROM seasons ORDER BY season;

-- name: private_learners
-- Learners whose row a transaction changed at or after a horizon (every one
-- from the start): the privacy filter of the read path keeps the ones that
-- are not public. `horizon` is the oldest transaction still running now:
-- the next refresh starts from it, so a change that commits after this
-- read, however long after it began, is read then.
-- The first load reads only the learners who are not public; later loads
-- also those whose profile was ever set (one may have become public again).
-- Learners an ingest created (public, profile version 0) never qualify: a
-- burst of new learners costs the refresh nothing.
SELECT u.user_id, u.visibility, u.erased_at IS NOT NULL AS erased, h.horizon::text AS horizon
FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS horizon) h
LEFT JOIN users u ON u.change_xid >= %(since)s::xid8
  AND (u.visibility <> 'public' OR u.erased_at IS NOT NULL
       OR (NOT %(only_private)s AND u.profile_version > 0));

-- name: try_session_lock
SELECT pg_try_advisory_lock(%(key)s) AS ok;

-- name: session_unlock
SELECT pg_advisory_unlock(%(key)s) AS ok;

-- name: snapshot_isolation
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY;

-- name: listen_outbox
LISTEN laurels_outbox;

-- name: database_exists
SELECT 1 FROM pg_database WHERE datname = %(name)s;

-- name: put_group
-- Create a group, or change the name and access given (NULL keeps them).
INSERT INTO groups AS g (group_id, name, access)
VALUES (%(group_id)s, coalesce(%(group_name)s, %(group_id)s), coalesce(%(access)s, 'members'))
ON CONFLICT (group_id) DO UPDATE
SET name = coalesce(%(group_name)s, g.name), access = coalesce(%(access)s, g.access)
RETURNING group_id, name, access;

-- name: get_group
SELECT g.group_id, g.name, g.access,
       (SELECT count(*) FROM group_members m WHERE m.group_id = g.group_id) AS members
FROM groups g WHERE g.group_id = %(group_id)s;

-- name: lock_group
SELECT group_id FROM groups WHERE group_id = %(group_id)s FOR UPDATE;

-- name: delete_group
DELETE FROM groups WHERE group_id = %(group_id)s RETURNING group_id;

-- name: add_members
INSERT INTO group_members (group_id, user_id)
SELECT %(group_id)s, u FROM unnest(%(user_ids)s::bigint[]) AS u
ON CONFLICT DO NOTHING;

-- name: remove_members
DELETE FROM group_members WHERE group_id = %(group_id)s AND user_id = ANY(%(user_ids)s);

-- name: count_members
SELECT count(*) AS members FROM group_members WHERE group_id = %(group_id)s;

-- name: group_member_ids
-- The group's members in one read: no row for an unknown group, one row with
-- a NULL user_id for a group without members.
SELECT g.name, m.user_id FROM groups g LEFT JOIN group_members m ON m.group_id = g.group_id
WHERE g.group_id = %(group_id)s;

-- name: user_groups
SELECT g.group_id, g.name, g.access
FROM group_members m JOIN groups g ON g.group_id = m.group_id
WHERE m.user_id = %(user_id)s ORDER BY g.group_id;

-- name: delete_user_memberships
DELETE FROM group_members WHERE user_id = %(user_id)s RETURNING group_id;

-- name: archive_of_users
-- The archived standings of some learners in a finalized season, with their
-- profile now (privacy applies as of the read).
SELECT st.user_id, st.score, st.last_completed_at, st.rank,
       coalesce(u.display_name, '') AS display_name,
       coalesce(u.visibility, 'public') AS visibility
FROM season_standings st LEFT JOIN users u ON u.user_id = st.user_id
WHERE st.season = %(season)s AND st.user_id = ANY(%(user_ids)s) AND u.erased_at IS NULL;

-- name: ensure_users
-- Learners a group is about to hold: a row each (the default profile), so
-- they can be share-locked like an ingest's.
INSERT INTO users (user_id) SELECT u FROM unnest(%(user_ids)s::bigint[]) AS u ORDER BY u
ON CONFLICT DO NOTHING;

-- name: share_lock_users
-- Share-lock learners in ascending order (an erasure waits, docs/concurrency.md).
SELECT user_id, erased_at IS NOT NULL AS erased FROM users
WHERE user_id = ANY(%(user_ids)s) ORDER BY user_id FOR SHARE;

-- name: lock_completion
-- A correction's completion, locked (after its learner and seasons: the lock
-- order of docs/concurrency.md), with its state.
SELECT c.seq, c.completion_id, c.user_id, c.points, c.completed_at, c.season,
       c.voided_at IS NULL AS counted, c.correction
FROM completion_ids k JOIN completions c ON c.seq = k.seq AND c.completed_at = k.completed_at
WHERE k.completion_id = %(completion_id)s FOR UPDATE OF c;

-- name: find_completion
SELECT c.seq, c.user_id, c.completed_at
FROM completion_ids k JOIN completions c ON c.seq = k.seq AND c.completed_at = k.completed_at
WHERE k.completion_id = %(completion_id)s;

-- name: set_voided
-- Void (voided = true) or restore a completion: its correction number goes
-- up. The caller then replaces its outbox row (delete_outbox, which waits for
-- a projector that holds the old one, then insert_outbox), so the new state
-- is projected and never lost.
UPDATE completions SET voided_at = CASE WHEN %(voided)s THEN now() END,
                       correction = correction + 1
WHERE seq = %(seq)s RETURNING correction;

-- name: latest_counted
-- A learner's latest counted completion in a season (the `first` policy's
-- tie time after a void); NULL when none counts.
SELECT max(completed_at) AS last_at FROM completions
WHERE SEASON_FILTER() AND user_id = %(user_id)s AND voided_at IS NULL;

-- name: delete_standing
DELETE FROM season_standings WHERE season = %(season)s AND user_id = %(user_id)s;

-- name: insert_standing
-- A finalized season's standing of one learner, from the completions that
-- count (none: no standing), after delete_standing; the caller re-ranks.
INSERT INTO season_standings (season, user_id, score, last_completed_at)
SELECT %(season)s, %(user_id)s, sum(points), max(completed_at) FROM completions
WHERE SEASON_FILTER() AND user_id = %(user_id)s AND voided_at IS NULL
HAVING count(*) > 0;

-- name: archived_rank
SELECT rank FROM season_standings WHERE season = %(season)s AND user_id = %(user_id)s;

-- name: user_completions
-- "Why is my score X": a learner's completions in a season, newest first,
-- after the position (completed_at, seq) of the previous page's last one.
SELECT seq, completion_id, points, completed_at, voided_at IS NULL AS counted
FROM completions
WHERE SEASON_FILTER() AND user_id = %(user_id)s
  AND (%(after_at)s::timestamptz IS NULL OR (completed_at, seq) < (%(after_at)s, %(after_seq)s))
ORDER BY completed_at DESC, seq DESC
LIMIT %(limit)s;

-- name: user_season_score
SELECT coalesce(sum(points), 0)::bigint AS score, count(*) AS completions FROM completions
WHERE SEASON_FILTER() AND user_id = %(user_id)s AND voided_at IS NULL;

-- name: suspend_user
-- Suspend (hidden whatever they chose, their choice kept aside) or unsuspend
-- (their choice back); a new profile version projects it on every board.
UPDATE users AS u SET
    suspended_at = CASE WHEN %(suspended)s THEN coalesce(u.suspended_at, now()) END,
    own_visibility = CASE WHEN %(suspended)s THEN coalesce(u.own_visibility, u.visibility) END,
    visibility = CASE WHEN %(suspended)s THEN 'hidden'
                      ELSE coalesce(u.own_visibility, u.visibility) END,
    profile_version = u.profile_version + 1,
    updated_at = now(), change_xid = pg_current_xact_id()
WHERE u.user_id = %(user_id)s AND u.erased_at IS NULL
RETURNING user_id, display_name, visibility, profile_version, suspended_at IS NOT NULL AS suspended;

-- name: insert_audit
INSERT INTO audit (action, target, reason, details)
VALUES (%(action)s, %(target)s, %(reason)s, %(details)s) RETURNING id;

-- name: audit_page
SELECT id, at, action, target, reason, details FROM audit
WHERE %(after_id)s::bigint IS NULL OR id < %(after_id)s
ORDER BY id DESC LIMIT %(limit)s;

-- name: enqueue_webhook
-- An event for the webhook (migrations 008, 011), in the caller's
-- transaction; nothing unless the deployment's webhook settings want it.
SELECT laurels_enqueue_webhook(%(type)s, %(user_id)s, %(data)s);

-- name: claim_deliveries
-- Due deliveries, leased for `lease_seconds` (a process that dies while
-- sending leaves them to be sent again once the lease runs out: at least
-- once), their attempt counted.
UPDATE webhook_deliveries d
SET next_attempt_at = now() + make_interval(secs => %(lease_seconds)s),
    attempts = d.attempts + 1
WHERE d.id IN (SELECT id FROM webhook_deliveries
               WHERE status = 'pending' AND next_attempt_at <= now()
               ORDER BY next_attempt_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
RETURNING d.id, d.type, d.user_id, d.notification_id, d.body, d.attempts, d.give_up_at;

-- name: share_erasure_locks
-- The shared side of some learners' erasure locks (a delivery in flight that
-- concerns them; erase_lock takes the other side), in ascending order.
SELECT pg_advisory_xact_lock_shared(hashtextextended('laurels erasure ' || u, 0))
FROM unnest(%(user_ids)s::bigint[]) AS u ORDER BY u;

-- name: erase_lock
-- An erasure waits for the deliveries in flight that concern the learner.
SELECT pg_advisory_xact_lock(hashtextextended('laurels erasure ' || %(user_id)s, 0));

-- name: leased_deliveries
-- Leased deliveries as they are now (an erasure may have deleted or
-- scrubbed them since the lease), still due to be sent.
SELECT id, type, user_id, notification_id, body, attempts FROM webhook_deliveries
WHERE id = ANY(%(ids)s) AND status = 'pending' ORDER BY created_at, id;

-- name: delivery_done
-- Delivered; the errors of the attempts before stay (last_error among them).
UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now()
WHERE id = %(id)s AND status = 'pending';

-- name: delivery_failed_attempt
-- Another attempt later, or `failed` once the next would come after give_up_at.
-- Every attempt's error is kept, in order.
UPDATE webhook_deliveries
SET last_error = %(error)s,
    errors = errors || jsonb_build_array(jsonb_build_object(
        'attempt', attempts, 'at', laurels_utc(now()), 'error', %(error)s::text)),
    status = CASE WHEN now() + make_interval(secs => %(delay)s) > give_up_at
                  THEN 'failed' ELSE 'pending' END,
    next_attempt_at = now() + make_interval(secs => %(delay)s)
WHERE id = %(id)s AND status = 'pending'
RETURNING status;

-- name: delivery_dropped
-- Nothing left to send: the notification it announced is gone.
UPDATE webhook_deliveries SET status = 'failed', last_error = %(error)s
WHERE id = %(id)s AND status = 'pending';

-- name: store_webhook_settings
-- The deployment's webhook settings, stored by the serving process (every
-- writer's transaction reads them: migration 011).
INSERT INTO webhook_settings AS w (id, enabled, events, coalesce_seconds)
VALUES (true, %(enabled)s, %(events)s, %(coalesce_seconds)s)
ON CONFLICT (id) DO UPDATE SET enabled = EXCLUDED.enabled, events = EXCLUDED.events,
    coalesce_seconds = EXCLUDED.coalesce_seconds, updated_at = now();

-- name: notifications_by_id
-- The notifications some deliveries announce, as they are now.
SELECT id, user_id, kind, season, data, created_at, read FROM notifications
WHERE id = ANY(%(ids)s);

-- name: retry_delivery
-- An operator's retry: pending again, at once, for another 24 hours.
UPDATE webhook_deliveries
SET status = 'pending', next_attempt_at = now(), give_up_at = now() + interval '24 hours'
WHERE id = %(id)s RETURNING id;

-- name: list_deliveries
SELECT id, type, status, attempts, last_error, errors, next_attempt_at, created_at
FROM webhook_deliveries
WHERE (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(after_at)s::timestamptz IS NULL
       OR (created_at, id) < (%(after_at)s, %(after_id)s::uuid))
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: delivery_counts
SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status;

-- name: delete_deliveries_of
-- An erasure: the learner's events go, sent or not (PostgreSQL keeps
-- nothing of theirs).
DELETE FROM webhook_deliveries WHERE user_id = %(user_id)s;

-- name: scrub_deliveries_about
-- An erasure: others' notifications, sent or not, name them no more.
UPDATE webhook_deliveries
SET body = jsonb_set(body, '{data,data}',
                     (body #> '{data,data}') - 'by_user_id' - 'by_display_name')
WHERE type = 'notification.created'
  AND body #>> '{data,data,by_user_id}' = %(user_id)s::text;

-- name: group_read_access
-- Who may read a group (api/group_routes.py), in one read whatever the
-- answer, so a caller who may not read it cannot tell it from no group by
-- the time taken either: no row for an unknown group, else its access and
-- whether the learner (NULL: no learner) is a member.
SELECT g.access, EXISTS (SELECT 1 FROM group_members m
                         WHERE m.group_id = g.group_id AND m.user_id = %(user_id)s) AS member
FROM groups g WHERE g.group_id = %(group_id)s;

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
-- The week's league row, made if missing, and its placer/decider lock (one
-- at a time per week, in any process).
WITH made AS (INSERT INTO league_weeks (season) VALUES (%(season)s) ON CONFLICT DO NOTHING)
SELECT pg_advisory_xact_lock(hashtextextended('laurels league ' || %(season)s, 0)) AS locked;

-- name: league_week
SELECT season, decided_at, zone_seq FROM league_weeks WHERE season = %(season)s;

-- name: place_joins
-- Place up to `limit` joins of a week in joining order: each in its tier
-- (the learner's after their latest decided week, the lowest without one,
-- at most the highest), in the tier's next slot, cohort = slot / size, so
-- every cohort is full but the newest. A learner with a membership in an
-- earlier week not decided yet is pending: left for later. One statement;
-- the caller holds the week's lock. Returns the cohorts that gained members.
WITH todo AS (
    SELECT j.season, j.user_id, j.join_seq, least(coalesce(t.tier, 0), %(top)s) AS tier
    FROM league_joins j LEFT JOIN league_tiers t ON t.user_id = j.user_id
    WHERE j.season = %(season)s AND NOT j.placed
      AND NOT EXISTS (SELECT 1 FROM league_joins e LEFT JOIN league_weeks w
                                                  ON w.season = e.season
                      WHERE e.user_id = j.user_id AND e.season < j.season
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
    ON CONFLICT (season, tier) DO UPDATE SET members = EXCLUDED.members)
SELECT p.tier, p.cohort, count(*) AS joined FROM placed p GROUP BY 1, 2 ORDER BY 1, 2;

-- name: league_membership
-- A learner's membership of a week (or their join, not yet placed), and
-- whether an earlier week of theirs is undecided.
SELECT j.user_id, m.tier, m.cohort, m.zone, (m.user_id IS NOT NULL) AS placed,
       coalesce(t.tier, 0) AS tier_now,
       EXISTS (SELECT 1 FROM league_joins e LEFT JOIN league_weeks w ON w.season = e.season
               WHERE e.user_id = j.user_id AND e.season < j.season
                 AND w.decided_at IS NULL) AS pending
FROM league_joins j
LEFT JOIN league_members m ON m.season = j.season AND m.user_id = j.user_id
LEFT JOIN league_tiers t ON t.user_id = j.user_id
WHERE j.season = %(season)s AND j.user_id = %(user_id)s;

-- name: league_tier_of
SELECT tier, season FROM league_tiers WHERE user_id = %(user_id)s;

-- name: cohort_members
SELECT user_id, zone FROM league_members
WHERE season = %(season)s AND tier = %(tier)s AND cohort = %(cohort)s ORDER BY user_id;

-- name: league_result_of
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

-- name: decide_league_week
-- The week's decision, set-based, from the completions that count now: each
-- cohort ranked by the tie policy among its members who are not hidden (nor
-- suspended) and have points; each member's outcome by the zone of their
-- final rank (the others stay, rank null); the tiers that change; a
-- league_result notification each. The caller holds the week's lock and the season row.
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
    SELECT e.user_id,
           CASE WHEN %(policy)s = 'first'
                THEN row_number() OVER (PARTITION BY e.tier, e.cohort
                                        ORDER BY e.score DESC, e.last_at, e.user_id)
                ELSE rank() OVER (PARTITION BY e.tier, e.cohort ORDER BY e.score DESC)
           END AS rank,
           count(*) OVER (PARTITION BY e.tier, e.cohort) AS n
    FROM eligible e),
outcomes AS (
    SELECT m.user_id, m.tier, m.cohort, r.rank,
           CASE WHEN r.rank IS NULL THEN 'stayed'
                WHEN m.tier < %(top)s AND r.rank <= (%(promote)s::int[])[m.tier + 1]
                    THEN 'promoted'
                WHEN m.tier > 0 AND r.rank > greatest((%(promote)s::int[])[m.tier + 1],
                                                      r.n - (%(demote)s::int[])[m.tier + 1])
                    THEN 'demoted'
                ELSE 'stayed' END AS outcome
    FROM league_members m LEFT JOIN ranked r ON r.user_id = m.user_id
    WHERE m.season = %(season)s),
results AS (
    INSERT INTO league_results (season, user_id, tier, cohort, rank, outcome, new_tier)
    SELECT %(season)s, o.user_id, o.tier, o.cohort, o.rank, o.outcome,
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
    UPDATE league_weeks SET decided_at = now() WHERE season = %(season)s)
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

-- name: set_zone_seq
UPDATE league_weeks SET zone_seq = greatest(zone_seq, %(seq)s) WHERE season = %(season)s;

-- name: lock_touched_members
-- The members of the zone pass's cohorts (by tier and cohort number), their
-- rows locked in learner order.
SELECT m.tier, m.cohort, m.user_id, m.zone
FROM league_members m
JOIN unnest(%(tiers)s::smallint[], %(cohorts)s::integer[]) AS t(tier, cohort)
  ON m.tier = t.tier AND m.cohort = t.cohort
WHERE m.season = %(season)s
ORDER BY m.user_id FOR UPDATE OF m;

-- name: set_zones
UPDATE league_members m SET zone = z.zone
FROM unnest(%(user_ids)s::bigint[], %(zones)s::text[]) AS z(user_id, zone)
WHERE m.season = %(season)s AND m.user_id = z.user_id;

-- name: notify_league_zones
-- One league_zone per learner given: at most one unread per learner and week,
-- so an unread one is refreshed (its new dedup_key sends it to webhooks
-- again), else one is created. Returns each learner's notification id.
WITH z AS (
    SELECT * FROM unnest(%(user_ids)s::bigint[], %(data)s::text[], %(dedup_keys)s::text[])
        AS z(user_id, data, dedup_key)),
refreshed AS (
    UPDATE notifications n SET data = z.data::jsonb, created_at = now(),
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

-- name: delete_league_history
-- An erasure: the learner's joins, memberships, results and tier go (the
-- others keep their outcomes).
WITH j AS (DELETE FROM league_joins WHERE user_id = %(user_id)s),
     m AS (DELETE FROM league_members WHERE user_id = %(user_id)s),
     r AS (DELETE FROM league_results WHERE user_id = %(user_id)s)
DELETE FROM league_tiers WHERE user_id = %(user_id)s;

-- name: part_seasons
-- The seasons of a period (weeks `____-W__`, days `____-__-__`) PostgreSQL
-- knows within a range of names, and whether each is finalized (archived):
-- the parts a long board may be built from (rebuild.py, Parts).
SELECT season, finalized_at IS NOT NULL AS finalized FROM seasons
WHERE season LIKE %(pattern)s AND season >= %(first)s AND season <= %(last)s
ORDER BY season;

-- name: long_seqs
-- A long board's idempotency bits: its completions from `cutoff` on (those
-- before are counted in their parts' archives), in seq order.
SELECT seq FROM completions
WHERE SEASON_FILTER() AND completed_at >= %(cutoff)s ORDER BY seq;

-- name: long_event_count
SELECT (SELECT count(*) FROM completions WHERE SEASON_FILTER() AND completed_at >= %(cutoff)s)
     + (SELECT count(*) FROM season_standings WHERE season = ANY(%(parts)s)) AS n;

-- name: long_aggregates
-- A long board from its history: the archived standings of its closed parts
-- plus its completions from `cutoff` on, one row per learner.
WITH history AS (
    SELECT st.user_id, st.score, st.last_completed_at AS last_at
    FROM season_standings st WHERE st.season = ANY(%(parts)s)
    UNION ALL
    SELECT c.user_id, c.points, c.completed_at FROM completions c
    WHERE SEASON_FILTER(c) AND c.completed_at >= %(cutoff)s AND c.voided_at IS NULL)
SELECT h.user_id, sum(h.score)::bigint AS score, max(h.last_at) AS last_at,
       coalesce(u.profile_version, 0) AS profile_version,
       coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name
FROM history h LEFT JOIN users u ON u.user_id = h.user_id
GROUP BY h.user_id, u.profile_version, u.visibility, u.display_name;

-- name: long_sums
-- verify's PostgreSQL side of a long board: as long_aggregates, by learner.
WITH history AS (
    SELECT st.user_id, st.score, st.last_completed_at AS last_at
    FROM season_standings st WHERE st.season = ANY(%(parts)s)
    UNION ALL
    SELECT c.user_id, c.points, c.completed_at FROM completions c
    WHERE SEASON_FILTER(c) AND c.completed_at >= %(cutoff)s AND c.voided_at IS NULL)
SELECT h.user_id, sum(h.score)::bigint AS score,
       min(coalesce(u.visibility, 'public')) AS visibility,
       min(coalesce(u.display_name, '')) AS display_name, max(h.last_at) AS last_at
FROM history h LEFT JOIN users u ON u.user_id = h.user_id
GROUP BY h.user_id ORDER BY h.user_id;

-- name: long_sums_for
WITH history AS (
    SELECT st.user_id, st.score, st.last_completed_at AS last_at
    FROM season_standings st
    WHERE st.season = ANY(%(parts)s) AND st.user_id = ANY(%(user_ids)s)
    UNION ALL
    SELECT c.user_id, c.points, c.completed_at FROM completions c
    WHERE SEASON_FILTER(c) AND c.completed_at >= %(cutoff)s AND c.voided_at IS NULL
      AND c.user_id = ANY(%(user_ids)s))
SELECT h.user_id, sum(h.score)::bigint AS score,
       min(coalesce(u.visibility, 'public')) AS visibility,
       min(coalesce(u.display_name, '')) AS display_name, max(h.last_at) AS last_at
FROM history h LEFT JOIN users u ON u.user_id = h.user_id
GROUP BY h.user_id;

-- name: ensure_partition
-- The month's partition of completions (migration 013), made if missing.
SELECT laurels_completions_partition(%(month)s::date) AS name;

-- name: completion_months
-- The months completions are kept in (migration 014).
SELECT name, month FROM laurels_completion_months();

-- name: seasons_touching
-- The seasons of every period whose names a caller lists, with whether each
-- is finalized (archived); retention drops a month only once all are.
SELECT season, finalized_at IS NOT NULL AS finalized FROM seasons
WHERE season = ANY(%(seasons)s);

-- name: undecided_league_weeks
SELECT season FROM league_weeks WHERE decided_at IS NULL AND season = ANY(%(seasons)s);

-- name: seal_completion_ids
-- One step of moving finalized weeks' ids to the sealed partition (migration 020).
SELECT staged, moved FROM laurels_seal_completion_ids(%(cutoff)s, %(limit)s);

-- name: vacuum_open_ids
-- After a seal: the moved rows' space in the open partition, for new ids;
-- and the filter's, whose every block the move may have written again (a
-- new version of each row: without it the filter would grow by its size
-- with each move, where autovacuum is off).
VACUUM (ANALYZE) completion_ids_open, completion_ids_filter;

-- name: seal_lock_shared
-- Held by a writer deleting ids (erasure): a seal's move never runs meanwhile.
SELECT pg_advisory_xact_lock_shared(hashtext('laurels completion ids seal'));

-- name: retire_month
SELECT laurels_retire_month(%(month)s::date) AS retired;

-- name: retired_between
-- Whether some of a range's completions were retired (dropped with their month).
SELECT EXISTS (SELECT 1 FROM retired_months
               WHERE month < %(ends)s::date AND month + interval '1 month' > %(starts)s)
       AS retired;

-- name: archived_score
SELECT score FROM season_standings WHERE season = %(season)s AND user_id = %(user_id)s;
