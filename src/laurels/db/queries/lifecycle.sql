-- Erasure, finalizing and archiving seasons, re-ranking archives
-- (lifecycle.py).

-- name: unfinalized_seasons
-- The seasons not finalized yet: finalize_due looks at each.
SELECT season FROM seasons WHERE finalized_at IS NULL ORDER BY season;

-- name: archive_standings
-- A season's standings, archived once when it is finalized (one row per
-- learner).
INSERT INTO season_standings (season, user_id, score, last_completed_at)
SELECT %(season)s, user_id, METRIC(SCORE(completions)), TIE_AT(SCORE(completions), completed_at)
FROM completions WHERE SEASON_FILTER() AND voided_at IS NULL GROUP BY user_id;

-- name: lock_boards_for_finalize
-- locks: seasons
-- Boards' seasons locked by a bulk finalize (finalize_boards), in name
-- order, as lock_season_for_finalize locks one.
SELECT season, finalized_at IS NOT NULL AS finalized FROM seasons
WHERE season = ANY(%(seasons)s) ORDER BY season FOR UPDATE;

-- name: archive_boards_standings
-- The standings of many boards' seasons of one kind's period (one range,
-- one metric: `season` names any of them), archived at once: the range's
-- completions read once, each counted on every board its tags name.
INSERT INTO season_standings (season, user_id, score, last_completed_at)
SELECT b.season, c.user_id, METRIC(SCORE(c)), TIE_AT(SCORE(c), c.completed_at)
FROM completions c
CROSS JOIN LATERAL unnest(c.tags) AS t(tag)
JOIN unnest(%(seasons)s::text[], %(boards)s::text[]) AS b(season, board) ON b.board = t.tag
WHERE c.tags IS NOT NULL AND c.voided_at IS NULL
  AND c.completed_at >= %(season_starts)s AND c.completed_at < %(season_ends)s
GROUP BY b.season, c.user_id;

-- name: month_tags
-- The tags of the completions of a range (a month about to be retired), each
-- with the first and last time a completion of the range carries it.
SELECT tag, min(c.completed_at) AS first_at, max(c.completed_at) AS last_at
FROM completions c CROSS JOIN LATERAL unnest(c.tags) AS tag
WHERE c.tags IS NOT NULL AND c.completed_at >= %(starts)s AND c.completed_at < %(ends)s
GROUP BY tag;

-- name: mark_boards_finalized
-- Marks boards' seasons finalized (finalize_boards), as mark_finalized.
UPDATE seasons SET finalized_at = now(), tie_policy = %(tie_policy)s
WHERE season = ANY(%(seasons)s);

-- name: enqueue_webhooks
-- Events of one type for the webhook, one a `data` (as enqueue_webhook).
SELECT count(laurels_enqueue_webhook_v1(%(type)s, NULL, d)) AS n
FROM unnest(%(data)s::jsonb[]) AS d;

-- name: lock_archives
-- locks: archive
-- The re-rank locks of many archives (lock_archive), in name order.
SELECT count(pg_advisory_xact_lock(hashtextextended('laurels:archive:' || s, 0))) AS n
FROM (SELECT s FROM unnest(%(seasons)s::text[]) AS s ORDER BY s) AS ordered;

-- name: rank_archives
-- The first ranks of archives just written (finalize_boards), as
-- rerank_archive ranks one, each season by itself.
UPDATE season_standings st SET
    rank = CASE WHEN %(tie_policy)s = 'first' THEN p.first_pos + 1 ELSE p.shared_rank END,
    pos = CASE WHEN %(tie_policy)s = 'first' THEN p.first_pos ELSE p.shared_pos END
FROM (
    SELECT s.season, s.user_id,
           rank() OVER (PARTITION BY s.season ORDER BY s.score DESC) AS shared_rank,
           row_number() OVER (PARTITION BY s.season ORDER BY s.score DESC, s.user_id) - 1
               AS shared_pos,
           row_number() OVER (PARTITION BY s.season
                              ORDER BY s.score DESC, s.last_completed_at, s.user_id) - 1
               AS first_pos
    FROM season_standings s LEFT JOIN users u ON u.user_id = s.user_id
    WHERE s.season = ANY(%(seasons)s) AND coalesce(u.visibility, 'public') <> 'hidden'
) p
WHERE st.season = p.season AND st.user_id = p.user_id;

-- name: mark_finalized
-- Marks a season finalized, with the tie policy its archive is ranked by.
UPDATE seasons SET finalized_at = now(), tie_policy = %(tie_policy)s WHERE season = %(season)s;

-- name: lock_archive
-- locks: archive
-- Re-ranking rewrites every standing of a season: one re-ranker at a time
-- (profile changes and erasures of different learners may meet here).
SELECT pg_advisory_xact_lock(hashtextextended('laurels:archive:' || %(season)s, 0));

-- name: clear_archive_ranks
-- An archive's ranks cleared before rerank_archive writes them again.
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
WITH boards AS (SELECT laurels_board_seasons_v1(%(user_id)s) AS season),
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

-- name: season_policies
-- The finalized ones among some seasons, with the tie policy of each archive.
SELECT season, coalesce(tie_policy, %(tie_policy)s) AS tie_policy FROM seasons
WHERE season = ANY(%(seasons)s) AND finalized_at IS NOT NULL;

-- name: seal_lock_shared
-- locks: seal
-- Held by a writer deleting ids (erasure): a seal's move never runs meanwhile.
SELECT pg_advisory_xact_lock_shared(hashtext('laurels completion ids seal'));

-- name: weeks_finalized
-- The whole board's weeks among `seasons` that PostgreSQL holds, and
-- whether each is finalized (a board of a kind's season waits for them).
SELECT season, finalized_at IS NOT NULL AS finalized FROM seasons
WHERE season = ANY(%(seasons)s);
