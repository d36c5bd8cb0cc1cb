-- Completions are found by id through completion_ids (its primary key gives
-- the row's (seq, completed_at), the partitioned table's key), so the
-- partitions' own index on completion_id was a second random-order index
-- written by every ingest: a text B-tree per month that a batch of new ids
-- touches at 1,000 random leaves (at 20,000,000 completions of history,
-- 0.65 blocks read per completion; docs/performance.md, "A year of
-- history"). Dropping it on the parent drops it on every partition.
DROP INDEX IF EXISTS completions_by_id;
