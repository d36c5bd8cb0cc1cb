-- The tags' index with a short pending list (issue 42). Without one
-- (migration 028) each tagged completion went into the GIN index at once:
-- a descent of its entry tree for each of its tags, about 4.5 us of
-- PostgreSQL's 35-36 a tagged completion at batch ingest (bench/tags.py).
-- A pending list takes new entries in an append and merges them into the
-- tree in bulk once it fills; the reason 028 turned it off was its size,
-- not the list: every search reads the whole list, and at the default 4 MB
-- that was 352 pages for a board's 47 rows. gin_pending_list_limit = 64
-- (kB, the least PostgreSQL takes) keeps it to 8 pages: a board's search
-- reads those and its own entries (docs/performance.md, "A short pending
-- list"). Storage parameters of a partitioned index cannot be altered: the
-- index is made again. On a large live database build each partition's by
-- hand first (docs/operations.md, "Upgrading to the boards of kinds'
-- index").
DROP INDEX completions_tags;
CREATE INDEX completions_tags ON completions USING gin (tags)
    WITH (fastupdate = on, gin_pending_list_limit = 64) WHERE tags IS NOT NULL;
