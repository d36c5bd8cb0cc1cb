-- The erasure's queries (learners/erasure.py): a learner's rows deleted in one
-- transaction, the erasure job recorded, resumed and closed.

-- name: erase_user
-- locks: users
-- An erasure's tombstone: the learner's row, erased, without a name (the row
-- lock every writer of the learner takes first); `again` when an earlier
-- erasure committed (its erased_at is kept, older than this transaction's
-- now(): an erasure waiting on another sees it once that one commits).
INSERT INTO users AS u (user_id, erased_at, profile_version) VALUES (%(user_id)s, now(), 1)
ON CONFLICT (user_id) DO UPDATE SET erased_at = coalesce(u.erased_at, now()),
    display_name = NULL, visibility = 'public', profile_version = u.profile_version + 1,
    updated_at = now(), change_xid = pg_current_xact_id()
RETURNING u.erased_at < now() AS again;

-- name: delete_user_completions
-- locks: outbox
-- An erasure: the learner's completions, their ids and their outbox rows
-- (waiting for a projector that holds them: docs/concurrency.md).
WITH gone AS (DELETE FROM completions WHERE user_id = %(user_id)s RETURNING seq, season,
                                                                          completion_id),
     ids AS (DELETE FROM completion_ids k USING gone g WHERE k.completion_id = g.completion_id),
     queued AS (DELETE FROM outbox o USING gone g WHERE o.seq = g.seq)
SELECT season FROM gone;

-- name: user_board_seasons
-- An erasure: the seasons of the boards of kinds the learner's completions
-- count on, built or not (each gets a tombstone), before they are deleted;
-- those with no `seasons` row (never built) recorded in board_tombstones, so
-- that their kind's deletion drops their keys (delete_kind_seasons), in name
-- order (two erasures wait on each other's rows in one order: no deadlock).
WITH boards AS (SELECT laurels_board_seasons_v2(%(user_id)s) AS season),
     unbuilt AS (INSERT INTO board_tombstones (season)
                 SELECT b.season FROM boards b
                 WHERE NOT EXISTS (SELECT 1 FROM seasons s WHERE s.season = b.season)
                 ORDER BY b.season
                 ON CONFLICT (season) DO NOTHING)
SELECT season FROM boards;

-- name: delete_user_standings
-- An erasure: the learner's archived standings (the archives are re-ranked
-- after).
DELETE FROM season_standings WHERE user_id = %(user_id)s RETURNING season;

-- name: record_erasure
-- The erasure's job: done once every board in Redis has forgotten the learner.
INSERT INTO erasures AS e (user_id, seasons) VALUES (%(user_id)s, %(seasons)s)
ON CONFLICT (user_id) DO UPDATE SET
    seasons = ARRAY(SELECT DISTINCT unnest(e.seasons || EXCLUDED.seasons));

-- name: pending_erasures
-- Erasure jobs not done after a while (a Redis error, a crash): done again.
SELECT user_id, seasons FROM erasures
WHERE created_at <= now() - make_interval(secs => %(min_age_seconds)s);

-- name: finish_erasure
-- An erasure job done (every board listed has forgotten the learner).
DELETE FROM erasures WHERE user_id = %(user_id)s AND seasons <@ %(seasons)s;

-- name: last_erasure
-- When the latest erasure committed (null: none ever).
SELECT max(erased_at) AS at FROM users;

-- name: seal_lock_shared
-- locks: seal
-- Held by a writer deleting ids (erasure): a seal's move never runs meanwhile.
SELECT pg_advisory_xact_lock_shared(hashtext('laurels completion ids seal'));

