-- Board kinds: their definitions (lifecycle/board_kinds.py, migration 026).

-- name: lock_board_kinds
-- locks: kinds
-- One definition or deletion at a time: the count of kinds (at most 100)
-- and a kind's immutability are read and changed under it.
SELECT pg_advisory_xact_lock(hashtext('laurels board kinds')) AS locked;

-- name: board_kinds_generation
-- Whether the kinds changed since a process read them (migration 026): how
-- many, and the highest generation.
SELECT count(*) AS n, coalesce(max(generation), 0) AS generation FROM board_kinds;

-- name: board_kind
-- One kind, or no row.
SELECT kind, title, metric, periods, time_zone, notify, created_at
FROM board_kinds WHERE kind = %(kind)s;

-- name: insert_board_kind
-- A new kind.
INSERT INTO board_kinds (kind, title, metric, periods, time_zone, notify)
VALUES (%(kind)s, %(title)s, %(metric)s, %(periods)s, %(time_zone)s, %(notify)s)
RETURNING kind, title, metric, periods, time_zone, notify, created_at;

-- name: retitle_board_kind
-- A kind's new title (the only thing of a kind that changes), under a new
-- generation: every process reads the kinds again, so the new title shows
-- everywhere (a notification names its board by it).
UPDATE board_kinds SET title = %(title)s, generation = nextval('board_kinds_generation')
WHERE kind = %(kind)s
RETURNING kind, title, metric, periods, time_zone, notify, created_at;

-- name: delete_board_kind
-- A kind is gone (its boards with it; the tags stay on the completions).
DELETE FROM board_kinds WHERE kind = %(kind)s;

-- name: delete_kind_seasons
-- A deleted kind's boards: their archives, their rebuilds' records, their
-- seasons' rows and those of its seasons never built that hold tombstones
-- (`pattern`: the kind's LIKE prefix), each season recorded in board_drops
-- until its keys are gone from Redis; the seasons they were.
WITH standings AS (DELETE FROM season_standings WHERE season LIKE %(pattern)s),
     rebuilt AS (DELETE FROM rebuilds WHERE season LIKE %(pattern)s),
     gone AS (DELETE FROM seasons WHERE season LIKE %(pattern)s RETURNING season),
     tombs AS (DELETE FROM board_tombstones WHERE season LIKE %(pattern)s
               RETURNING season),
     dropped AS (SELECT season FROM gone UNION SELECT season FROM tombs),
     pending AS (INSERT INTO board_drops (season) SELECT season FROM dropped
                 ON CONFLICT (season) DO NOTHING)
SELECT season FROM dropped;

-- name: board_drops
-- Seasons of deleted kinds whose keys are not known gone from Redis yet
-- (`pattern`: one kind's LIKE prefix, or every one), a batch at a time.
SELECT season FROM board_drops WHERE season LIKE %(pattern)s ORDER BY season
LIMIT %(limit)s;

-- name: forget_board_drops
-- Seasons whose keys Redis has dropped.
DELETE FROM board_drops WHERE season = ANY(%(seasons)s);

-- name: kind_boards
-- The boards of a kind with a counted completion in a span (a season of
-- the kind, in its zone), by name, those whose value holds `search` (NULL:
-- all), after a board's name (paging), with how many learners each: what
-- the operator console lists (GET /v1/admin/board-kinds/{kind}/boards).
SELECT t.tag AS board, count(DISTINCT c.user_id) AS learners
FROM completions c CROSS JOIN LATERAL unnest(c.tags) AS t(tag)
WHERE c.tags IS NOT NULL AND c.voided_at IS NULL
  AND c.completed_at >= %(starts)s AND c.completed_at < %(ends)s
  AND t.tag LIKE %(pattern)s AND t.tag > %(after)s
  AND (%(search)s::text IS NULL OR strpos(lower(t.tag), lower(%(search)s)) > 0)
GROUP BY t.tag ORDER BY t.tag LIMIT %(limit)s;
