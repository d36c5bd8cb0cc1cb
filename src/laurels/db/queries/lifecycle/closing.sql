-- Finalizing and archiving seasons, re-ranking archives (lifecycle/closing.py).

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

-- name: season_policies
-- The finalized ones among some seasons, with the tie policy of each archive.
SELECT season, coalesce(tie_policy, %(tie_policy)s) AS tie_policy FROM seasons
WHERE season = ANY(%(seasons)s) AND finalized_at IS NOT NULL;

-- name: weeks_finalized
-- The whole board's weeks among `seasons` that PostgreSQL holds, and
-- whether each is finalized (a board of a kind's season waits for them).
SELECT season, finalized_at IS NOT NULL AS finalized FROM seasons
WHERE season = ANY(%(seasons)s);
