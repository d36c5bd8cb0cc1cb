-- Statements several services run (each says which): the locks every writer
-- shares, the audit log, webhooks' events, league touches.

-- name: delete_outbox
-- locks: outbox
-- Outbox rows of applied completions (the projector's, the fast path's in
-- bulk; a correction's old one).
DELETE FROM outbox WHERE seq = ANY(%(seqs)s);

-- name: season_corrections
-- A rebuild's record of corrected completions (their state and correction
-- number), so an older correction projected later changes nothing.
SELECT seq, correction, voided_at IS NULL AS counted FROM completions
WHERE SEASON_FILTER() AND correction > 0;

-- name: lock_user_seasons
-- locks: seasons
-- The seasons a learner has completions or standings in, share-locked (after
-- the learner's own row: users, then seasons, is every writer's lock order).
-- Finalizing takes FOR UPDATE on its season, so a profile change or an
-- erasure either commits before the archive is built (which then sees it) or
-- waits for the archive to commit (and then re-ranks or deletes it).
-- Every period's seasons: the week in `season`, the day, the month, `all`
-- and the windows from `completed_at`, in the deployment's time zone (`zone`, which the
-- database adds itself); a period that is not configured has no rows here;
-- and the seasons of the boards of kinds their tags name.
SELECT season, finalized_at IS NOT NULL AS finalized FROM seasons
WHERE season IN (SELECT season FROM completions WHERE user_id = %(user_id)s
                 UNION SELECT to_char(completed_at AT TIME ZONE %(zone)s, 'YYYY-MM-DD')
                       FROM completions WHERE user_id = %(user_id)s
                 UNION SELECT to_char(completed_at AT TIME ZONE %(zone)s, 'YYYY-MM')
                       FROM completions WHERE user_id = %(user_id)s
                 UNION SELECT 'all' FROM completions WHERE user_id = %(user_id)s
                 -- the rolling windows (their one season each: migration 040)
                 UNION SELECT w FROM unnest(ARRAY['last-7d', 'last-30d']) AS w
                       WHERE EXISTS (SELECT 1 FROM completions WHERE user_id = %(user_id)s)
                 UNION SELECT season FROM season_standings WHERE user_id = %(user_id)s
                 -- the all-time board of a learner whose completions were all
                 -- retired holds their archived weeks (it never closes)
                 UNION SELECT 'all' FROM season_standings WHERE user_id = %(user_id)s
                 -- the boards of kinds their tags name (migration 026)
                 UNION SELECT laurels_board_seasons_v2(%(user_id)s))
ORDER BY season FOR SHARE;

-- name: lock_season_for_finalize
-- locks: seasons
-- A season's row locked by finalize (ingests of the season hold it FOR SHARE)
-- and by a league decision.
SELECT finalized_at IS NOT NULL AS finalized FROM seasons WHERE season = %(season)s FOR UPDATE;

-- name: erased_since
-- Learners erased at or after a time (every one when it is null): the
-- tombstones a rebuild puts back (projection/rebuild.py). Indexed by migration 009.
SELECT user_id FROM users
WHERE erased_at >= coalesce(%(since)s::timestamptz, '-infinity'::timestamptz)
ORDER BY user_id;

-- name: ensure_users
-- locks: users
-- Learners a group is about to hold: a row each (the default profile), so
-- they can be share-locked like an ingest's.
INSERT INTO users (user_id) SELECT u FROM unnest(%(user_ids)s::bigint[]) AS u ORDER BY u
ON CONFLICT DO NOTHING;

-- name: share_lock_users
-- locks: users
-- Share-lock learners in ascending order (an erasure waits, docs/concurrency.md).
SELECT user_id, erased_at IS NOT NULL AS erased FROM users
WHERE user_id = ANY(%(user_ids)s) ORDER BY user_id FOR SHARE;

-- name: insert_audit
-- An audit entry (void, restore, suspend, unsuspend, erase, rebuild,
-- group_delete, kind_define, kind_delete, challenge_*, team_*). An insert fires no trigger; the
-- audit's `audit_append_only` and `audit_no_truncate` refuse any UPDATE,
-- DELETE or TRUNCATE of it (no query runs one).
INSERT INTO audit (action, target, reason, details)
VALUES (%(action)s, %(target)s, %(reason)s, %(details)s) RETURNING id;

-- name: enqueue_webhook
-- An event for the webhook (migrations 008, 011), in the caller's
-- transaction; nothing unless the deployment's webhook settings want it.
SELECT laurels_enqueue_webhook_v1(%(type)s, %(user_id)s, %(data)s);

-- name: touch_learner_cohorts
-- Something moved a learner (a void or restore: `seq` is its completion's,
-- a visibility change, a suspension, an erasure): each cohort of theirs in a
-- week not decided yet (of `season`, or of any week) is read again by the
-- zone pass. A touch names a cohort, never the learner.
INSERT INTO league_touches (season, tier, cohort, seq)
SELECT m.season, m.tier, m.cohort, %(seq)s::bigint
FROM league_members m LEFT JOIN league_weeks w ON w.season = m.season
WHERE m.user_id = %(user_id)s AND (%(season)s::text IS NULL OR m.season = %(season)s)
  AND w.decided_at IS NULL;

-- name: long_sums_for
-- Some learners' sums on a long board, from its archived parts and its
-- completions from the cutoff on (verify, reads).
WITH history AS (
    SELECT st.user_id, st.score, st.last_completed_at AS last_at
    FROM season_standings st
    WHERE st.season = ANY(%(parts)s) AND st.user_id = ANY(%(user_ids)s)
    UNION ALL
    SELECT c.user_id, SCORE(c), c.completed_at FROM completions c
    WHERE SEASON_FILTER(c) AND c.completed_at >= %(cutoff)s AND c.voided_at IS NULL
      AND c.user_id = ANY(%(user_ids)s))
SELECT h.user_id, METRIC(h.score)::bigint AS score,
       min(coalesce(u.visibility, 'public')) AS visibility,
       min(coalesce(u.display_name, '')) AS display_name, TIE_AT(h.score, h.last_at) AS last_at
FROM history h LEFT JOIN users u ON u.user_id = h.user_id
GROUP BY h.user_id;

-- name: time_zone_known
-- Whether PostgreSQL's time zone data knows a zone (the local dates SQL
-- computes for LAURELS_TIME_ZONE and a board kind's zone use it; Python's tzdata may be newer).
SELECT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = %(zone)s) AS known;

-- name: share_board_kinds
-- locks: kinds
-- The board kinds' lock, shared: an erasure or a profile change reads the
-- kinds its learner counts on, and no kind is defined or deleted until it
-- commits (a board built later snapshots after it: lifecycle/board_kinds.py).
SELECT pg_advisory_xact_lock_shared(hashtext('laurels board kinds')) AS locked;

-- name: ensure_seasons
-- Season rows for boards of other periods built the first time (projection/rebuild.py),
-- and for the seasons of boards of kinds archived before their completions
-- are retired (lifecycle.archive_boards_of).
INSERT INTO seasons (season) SELECT unnest(%(seasons)s::text[]) ORDER BY 1
ON CONFLICT (season) DO NOTHING;

-- name: board_kinds
-- Every kind, by name (lifecycle/board_kinds.py; lifecycle.archive_boards_of).
SELECT kind, title, metric, periods, time_zone, notify, created_at
FROM board_kinds ORDER BY kind;

-- name: insert_notification
-- A notification, once (its dedup key refuses a second). Fires
-- `notification_webhook` (laurels_notifications_webhook_v1, once for the
-- statement, the webhooks' work): while the webhook settings want the
-- kind, a `notification.created` delivery in webhook_deliveries for the
-- row inserted (none for a duplicate). No lock.
INSERT INTO notifications (user_id, kind, season, data, dedup_key)
VALUES (%(user_id)s, %(kind)s, %(season)s, %(data)s, %(dedup_key)s)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: refresh_overtaken
-- locks: deliveries
-- At most one unread "overtaken" per learner and season: refresh it instead.
-- Not with an event whose notice exists (a replay: handled, then delivered
-- again after a crash before its acknowledgement), which changes nothing and
-- never takes a key another row holds.
-- Fires `notification_refreshed_webhook` (laurels_notification_webhook_v1,
-- for the row refreshed: its data and dedup key change; the webhooks'
-- work): while the settings want the kind, a delivery of the notification
-- still waiting for its first attempt is locked FOR SHARE until commit and
-- carries the new state (a sender's claim of it in flight is waited for,
-- and a sender claims it only after the commit: migration 036); otherwise
-- a new delivery is queued, due after the kind's coalescing window.
UPDATE notifications n SET data = %(data)s, updated_at = now(), dedup_key = %(dedup_key)s
WHERE n.user_id = %(user_id)s AND n.season = %(season)s AND n.kind = 'overtaken' AND NOT n.read
  AND NOT EXISTS (SELECT 1 FROM notifications d
                  WHERE d.user_id = %(user_id)s AND d.dedup_key = %(dedup_key)s)
RETURNING n.id;

-- name: lock_challenge
-- locks: challenge
-- One writer of a challenge at a time (a definition, a join, its decision,
-- its deletion): its row, or no row.
SELECT challenge_id, title, board, metric, starts_at, ends_at, join_rule, max_size,
       joined, rewards, notify, grace_seconds, created_at, decided_at, participants
FROM challenges WHERE challenge_id = %(challenge_id)s FOR UPDATE;

-- name: challenge_row
-- One challenge, or no row (no lock: a read).
SELECT challenge_id, title, board, metric, starts_at, ends_at, join_rule, max_size,
       joined, rewards, notify, grace_seconds, created_at, decided_at, participants
FROM challenges WHERE challenge_id = %(challenge_id)s;

-- name: team_kind
-- One team kind (lifecycle/teams.py; a group's PUT checks the one it names).
SELECT team, title, aggregate, top, members_version, created_at FROM team_kinds
WHERE team = %(team)s;
