-- Filling a board's new version from a snapshot (filling.py): its bits,
-- aggregates, corrections; many boards of kinds from one scan.

-- name: season_seqs
-- A rebuild's idempotency bits: every completion of the season, in seq order.
SELECT seq FROM completions WHERE SEASON_FILTER() ORDER BY seq;

-- name: season_aggregates
-- A rebuild's board: one row per learner (the sum, the latest completion and
-- the profile), so a lost board is back in seconds per million completions.
-- Voided completions count nowhere.
SELECT c.user_id, METRIC(SCORE(c))::bigint AS score, TIE_AT(SCORE(c), c.completed_at) AS last_at,
       coalesce(u.profile_version, 0) AS profile_version,
       coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name
FROM completions c LEFT JOIN users u ON u.user_id = c.user_id
WHERE SEASON_FILTER(c) AND c.voided_at IS NULL
GROUP BY c.user_id, u.profile_version, u.visibility, u.display_name;

-- name: rebuild_without_jit
-- A build's snapshot plans without JIT: its statements stream their rows
-- through a cursor once, where compiling them cost 0.5-1 s of PostgreSQL
-- each (a kind's boards of a week, 1,000,000 completions: docs/performance.md).
SET LOCAL jit = off;

-- name: boards_seqs
-- The idempotency bits of many boards of kinds of one period, metric and zone
-- (rebuild.py `run_many`): the completions of each, read in one scan, in
-- (season, seq) order. `seasons` and `boards` pair each season with its tag.
-- (Ordered by seq alone, PostgreSQL 15 walked the primary key: 7.5 s of its
-- CPU where this took 4.2.)
SELECT b.season, c.seq
FROM completions c
CROSS JOIN LATERAL unnest(c.tags) AS t(tag)
JOIN unnest(%(seasons)s::text[], %(boards)s::text[]) AS b(season, board) ON b.board = t.tag
WHERE BOARDS_FILTER(c)
ORDER BY b.season, c.seq;

-- name: boards_aggregates
-- season_aggregates of many boards at once (as boards_seqs), in season order.
SELECT b.season, c.user_id, METRIC(SCORE(c))::bigint AS score,
       TIE_AT(SCORE(c), c.completed_at) AS last_at,
       coalesce(u.profile_version, 0) AS profile_version,
       coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name
FROM completions c
CROSS JOIN LATERAL unnest(c.tags) AS t(tag)
JOIN unnest(%(seasons)s::text[], %(boards)s::text[]) AS b(season, board) ON b.board = t.tag
LEFT JOIN users u ON u.user_id = c.user_id
WHERE BOARDS_FILTER(c) AND c.voided_at IS NULL
GROUP BY b.season, c.user_id, u.profile_version, u.visibility, u.display_name
ORDER BY b.season;

-- name: boards_corrections
-- season_corrections of many boards at once (as boards_seqs).
SELECT b.season, c.seq, c.correction, c.voided_at IS NULL AS counted
FROM completions c
CROSS JOIN LATERAL unnest(c.tags) AS t(tag)
JOIN unnest(%(seasons)s::text[], %(boards)s::text[]) AS b(season, board) ON b.board = t.tag
WHERE BOARDS_FILTER(c) AND c.correction > 0;

-- name: completions_by_seq
-- Some completions by seq: those a rebuild found applied live before its
-- stream.
SELECT seq, user_id, points, voided_at IS NULL AS counted
FROM completions WHERE seq = ANY(%(seqs)s);

-- name: season_event_count
-- How many completions a season's board is built from (a rebuild's progress).
SELECT count(*) AS n FROM completions WHERE SEASON_FILTER();

-- name: long_seqs
-- A long board's idempotency bits: its completions from `cutoff` on (those
-- before are counted in their parts' archives), in seq order.
SELECT seq FROM completions
WHERE SEASON_FILTER() AND completed_at >= %(cutoff)s ORDER BY seq;

-- name: long_event_count
-- How many facts a long board is built from: its archived parts' standings and
-- its completions from the cutoff on.
SELECT (SELECT count(*) FROM completions WHERE SEASON_FILTER() AND completed_at >= %(cutoff)s)
     + (SELECT count(*) FROM season_standings WHERE season = ANY(%(parts)s)) AS n;

-- name: long_aggregates
-- A long board from its history: the archived standings of its closed parts
-- plus its completions from `cutoff` on, one row per learner.
WITH history AS (
    SELECT st.user_id, st.score, st.last_completed_at AS last_at
    FROM season_standings st WHERE st.season = ANY(%(parts)s)
    UNION ALL
    SELECT c.user_id, SCORE(c), c.completed_at FROM completions c
    WHERE SEASON_FILTER(c) AND c.completed_at >= %(cutoff)s AND c.voided_at IS NULL)
SELECT h.user_id, METRIC(h.score)::bigint AS score, TIE_AT(h.score, h.last_at) AS last_at,
       coalesce(u.profile_version, 0) AS profile_version,
       coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name
FROM history h LEFT JOIN users u ON u.user_id = h.user_id
GROUP BY h.user_id, u.profile_version, u.visibility, u.display_name;
