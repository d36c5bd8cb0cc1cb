-- laurels_ingest planned its batch statement once for all (PL/pgSQL caches a
-- generic plan after five calls), and a generic plan cannot see how long the
-- arrays are: it guessed ten items and joined the batch's CTEs in nested
-- loops, 1,000 x 1,000 comparisons a join (0.4-1.9 s a batch of 1,000
-- instead of 0.2 s; docs/performance.md, "Batch ingest: where the time
-- goes"). Planned for the arrays it is given, every call (a replacement of
-- the function must keep this clause: CREATE OR REPLACE resets it).
ALTER FUNCTION laurels_ingest(text[], bigint[], integer[], timestamptz[], timestamptz, text[],
                              boolean[], text[])
    SET plan_cache_mode = force_custom_plan;
