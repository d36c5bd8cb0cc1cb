-- Recording completions (ingest.py): one function call a batch
-- (laurels_ingest, as it is now in db/schema.sql).

-- name: find_completions
-- By id through completion_ids (migration 017): its key is the row's.
SELECT c.completion_id, c.seq, c.user_id, c.points, c.completed_at, c.received_at, c.season,
       c.tags
FROM completion_ids k JOIN completions c ON c.seq = k.seq AND c.completed_at = k.completed_at
WHERE k.completion_id = ANY(%(completion_ids)s);

-- name: ingest_batch
-- locks: users, seasons
-- One round trip for a whole batch: laurels_ingest (db/schema.sql) records
-- the new ids and rows (with their tags, comma-joined per item), and the
-- outbox rows the projector applies.
SELECT * FROM laurels_ingest(%(completion_ids)s::text[], %(user_ids)s::bigint[],
                             %(points)s::int[], %(completed_ats)s::timestamptz[],
                             %(received_at)s, %(seasons)s::text[], %(closed)s::boolean[],
                             %(others)s::text[], %(tags)s::text[]);
