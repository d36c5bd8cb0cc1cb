-- The tags' index without its pending list (issue 42). A GIN index keeps
-- new entries in a pending list (up to gin_pending_list_limit, 4 MB) until
-- a vacuum or a later insert merges them, and every search reads that list
-- whole: a board's completions, 47 rows, took 8 ms to find (352 pages of
-- pending list), so catching 10,000 boards up after a Redis restart, and
-- building them, took minutes (bench/boards.py). Without it each insert
-- goes into the index at once and a search reads only its board's entries.
-- Storage parameters of a partitioned index cannot be altered, and a new
-- partition's index takes its parent's: the index is made again. On a
-- large live database build it by hand first, as migration 027's.
DROP INDEX completions_tags;
CREATE INDEX completions_tags ON completions USING gin (tags) WITH (fastupdate = off)
    WHERE tags IS NOT NULL;
