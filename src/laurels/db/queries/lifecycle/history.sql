-- Partitions by month, sealed ids, retention, long boards' parts (lifecycle/history.py).

-- name: part_seasons
-- The seasons of a period (weeks `____-W__`, days `____-__-__`) PostgreSQL
-- knows within a range of names, and whether each is finalized (archived):
-- the parts a long board may be built from (projection/rebuild.py, Parts).
SELECT season, finalized_at IS NOT NULL AS finalized FROM seasons
WHERE season LIKE %(pattern)s AND season >= %(first)s AND season <= %(last)s
ORDER BY season;

-- name: ensure_partition
-- locks: partitions
-- The month's partition of completions (migration 013), made if missing.
SELECT laurels_completions_partition_v1(%(month)s::date) AS name;

-- name: board_weeks
-- The weeks of a board of a kind PostgreSQL knows (`pattern`: its name's
-- head, any zone), and whether each is finalized: the parts its all-time
-- board may be built from once months were retired.
SELECT season, finalized_at IS NOT NULL AS finalized FROM seasons
WHERE season LIKE %(pattern)s ORDER BY season;

-- name: last_retired_month
-- The latest month of completions retired (null: none ever was).
SELECT max(month) AS month FROM retired_months;

-- name: completion_months
-- The months completions are kept in (migration 014).
SELECT name, month FROM laurels_completion_months_v1();

-- name: seasons_touching
-- The seasons of every period whose names a caller lists, with whether each
-- is finalized (archived); retention drops a month only once all are.
SELECT season, finalized_at IS NOT NULL AS finalized FROM seasons
WHERE season = ANY(%(seasons)s);

-- name: close_empty_weeks
-- locks: seasons
-- Weeks of a month about to be retired that no completion reached (no row),
-- closed by the clock: recorded finalized and empty, so a completion for one
-- arriving later is refused (season_closed) like any of a closed week. A row
-- an ingest is making meanwhile is waited for and left as it is (open: the
-- month stays; lifecycle/history.py `_closed`).
INSERT INTO seasons (season, finalized_at, tie_policy)
SELECT s, now(), %(tie_policy)s FROM unnest(%(seasons)s::text[]) AS s
ON CONFLICT (season) DO NOTHING;

-- name: undecided_league_weeks
-- Among `seasons`, the weeks someone joined whose leagues are not decided,
-- while the deployment's leagues are on (the stored switch, whatever the
-- caller's own settings say).
SELECT DISTINCT j.season FROM league_joins j
LEFT JOIN league_weeks w ON w.season = j.season
WHERE j.season = ANY(%(seasons)s) AND w.decided_at IS NULL AND laurels_leagues_on_v1();

-- name: seal_completion_ids
-- locks: seal
-- One step of moving finalized weeks' ids to the sealed partition (migration 020).
SELECT staged, moved FROM laurels_seal_completion_ids_v1(%(cutoff)s, %(limit)s);

-- name: vacuum_open_ids
-- After a seal: the moved rows' space in the open partition, for new ids;
-- and the filter's, whose every block the move may have written again (a
-- new version of each row: without it the filter would grow by its size
-- with each move, where autovacuum is off).
VACUUM (ANALYZE) completion_ids_open, completion_ids_filter;

-- name: retire_month
-- locks: partitions, seal, outbox
-- Drops a month of completions whose seasons are archived
-- (laurels_retire_month_v1: migration 020's, named by 038).
SELECT laurels_retire_month_v1(%(month)s::date) AS retired;

-- name: undecided_challenges_in
-- The challenges not decided yet whose window reaches into [start, end):
-- a month of completions they read stays.
SELECT challenge_id FROM challenges
WHERE decided_at IS NULL AND starts_at < %(end)s AND ends_at > %(start)s LIMIT 1;

-- name: kinds_with_windows
-- A board kind with a rolling window among its periods, if any (retention
-- keeps what a window may hold).
SELECT kind FROM board_kinds WHERE periods && ARRAY['7d', '30d'] LIMIT 1;
