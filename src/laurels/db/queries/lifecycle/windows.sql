-- Rolling windows moved at local midnight (lifecycle/windows.py).

-- name: window_seasons
-- The windows with a board to move: the whole board's configured ones
-- (`names`) and every kind's window that was ever built (its `seasons` row,
-- made by its first build); a few rows, whatever the number of boards idle.
SELECT season FROM seasons
WHERE season = ANY(%(names)s) OR season LIKE '%%/last-7d' OR season LIKE '%%/last-30d'
ORDER BY season;

-- name: window_leaving
-- The completions of the days leaving a window, [since, until) (its days are
-- its board's zone's), on its board (every completion on `global`, those
-- tagged with it on a board of a kind), voided or not: the window's own
-- record says whether each counts there (apply.lua). In seq order.
SELECT seq, user_id, points, completed_at FROM completions
WHERE completed_at >= %(since)s AND completed_at < %(until)s
  AND (%(board)s::text = 'global' OR tags @> ARRAY[%(board)s]::text[])
ORDER BY seq;

-- name: window_best
-- A `best` window's learners as they stand once the days leaving it are
-- out: their highest points among the completions that count from `since`
-- on, and the earliest time that gives it (their tie time).
SELECT DISTINCT ON (user_id) user_id, points AS score, completed_at AS last_at
FROM completions
WHERE user_id = ANY(%(user_ids)s) AND completed_at >= %(since)s AND voided_at IS NULL
  AND (%(board)s::text = 'global' OR tags @> ARRAY[%(board)s]::text[])
ORDER BY user_id, points DESC, completed_at;
