-- Filling a board's new version from a snapshot (projection/filling.py): its bits,
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

-- name: rebuild_for_every_row
-- Many boards' statements (fill_many) planned for every row they give (a
-- build reads them all): planned for a cursor's first tenth, the boards'
-- seqs were found board by board, each an index scan of every completion in
-- its range (100 boards: 100 scans of the table).
SET LOCAL cursor_tuple_fraction = 1;

-- name: completions_seq_span
-- The lowest and highest seq of every completion kept (fill_many: whether
-- its boards' seqs fit one window).
SELECT min(seq) AS first, max(seq) AS last FROM completions;

-- name: boards_seqs
-- The idempotency bits of many boards of kinds of one metric, of any periods
-- and zones (projection/rebuild.py `run_many`): the completions of each, read in one
-- scan (a completion dealt to every board it counts on: its tag's week and
-- all time at once), one row a board, its seqs unordered (Python sorts each
-- board's: nearly sorted already, the table's order). `boards`, `starts` and
-- `ends` give each board (numbered from 1 in that order: `i`) its tag and the
-- range of its season; `boards_from` and `boards_until` span them all
-- (ON_BOARDS, IN_BOARDS: db/variants.py).
-- PostgreSQL holds every array at once: projection/filling.py reads it only while the
-- completions' seqs span at most SEQ_WINDOW, else boards_seq_pairs. (Sorting
-- every (board, seq) pair here cost PostgreSQL twice the scan; ordered within
-- array_agg, ten times.)
SELECT b.i, array_agg(c.seq) AS seqs
FROM completions c
ON_BOARDS(c)
WHERE IN_BOARDS(c)
GROUP BY b.i
ORDER BY b.i;

-- name: boards_seq_pairs
-- boards_seqs as (board, seq) pairs in that order, streamed: what PostgreSQL
-- holds at once is bounded whatever the boards hold. (Ordered by seq alone,
-- PostgreSQL 15 walked the primary key: 7.5 s of its CPU where the sort took
-- 4.2.)
SELECT b.i, c.seq
FROM completions c
ON_BOARDS(c)
WHERE IN_BOARDS(c)
ORDER BY b.i, c.seq;

-- name: boards_aggregates
-- season_aggregates of many boards at once (as boards_seqs), in board order:
-- each (board, learner) aggregated first, its profile joined after (sorting
-- the completions with their profiles' text cost twice as much); the tie
-- time as microseconds since the board's season began (what the board
-- stores: Season.pad_ts, exact: an interval's epoch is numeric).
SELECT a.i, a.user_id, a.score,
       (extract(epoch FROM a.last_at - a.starts) * 1000000)::bigint AS tie_us,
       coalesce(u.profile_version, 0) AS profile_version,
       coalesce(u.visibility, 'public') AS visibility,
       coalesce(u.display_name, '') AS display_name
FROM (SELECT b.i, b.starts, c.user_id, METRIC(SCORE(c))::bigint AS score,
             TIE_AT(SCORE(c), c.completed_at) AS last_at
      FROM completions c
      ON_BOARDS(c)
      WHERE IN_BOARDS(c) AND c.voided_at IS NULL
      GROUP BY b.i, b.starts, c.user_id) a
LEFT JOIN users u ON u.user_id = a.user_id
ORDER BY a.i;

-- name: boards_corrections
-- season_corrections of many boards at once (as boards_seqs).
SELECT b.i, c.seq, c.correction, c.voided_at IS NULL AS counted
FROM completions c
ON_BOARDS(c)
WHERE IN_BOARDS(c) AND c.correction > 0;

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
