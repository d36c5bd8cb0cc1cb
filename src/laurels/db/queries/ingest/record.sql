-- Recording completions (ingest/record.py): one function call a batch
-- (laurels_ingest_v1, as it is now in db/schema.sql; an unversioned
-- laurels_ingest is the previous version's: migration 038).

-- name: find_completions
-- By id through completion_ids (migration 017): its key is the row's.
SELECT c.completion_id, c.seq, c.user_id, c.points, c.completed_at, c.received_at, c.season,
       c.tags
FROM completion_ids k JOIN completions c ON c.seq = k.seq AND c.completed_at = k.completed_at
WHERE k.completion_id = ANY(%(completion_ids)s);

-- name: ingest_batch
-- locks: users, seasons
-- One round trip for a whole batch: laurels_ingest_v1 (db/schema.sql) records
-- the new ids and rows (with their tags, comma-joined per item), and the
-- outbox rows the projector applies.
-- Two triggers do other concerns' work in this transaction. Its insert into
-- completions fires `league_join` (laurels_league_join_v1, once for the
-- statement): while the deployment's leagues are on, each learner of the
-- batch with a completion that counts, neither hidden nor erased, joins
-- their week's leagues (league_joins; none once the week is decided: the
-- decision waits for the seasons' rows this call share-locks). It takes no
-- lock of LOCK_ORDER's, but a join waits at its insert for another
-- transaction joining the same learner to the same week, until that one
-- ends. Its insert into outbox fires `outbox_notify`
-- (laurels_outbox_notify_v1): NOTIFY laurels_outbox, the projector's wake-up,
-- sent at commit, when PostgreSQL takes its one lock for queueing
-- notifications (held through the commit: transactions that notify commit
-- one at a time; taken last, it waits for no lock of ours).
SELECT * FROM laurels_ingest_v1(%(completion_ids)s::text[], %(user_ids)s::bigint[],
                                %(points)s::int[], %(completed_ats)s::timestamptz[],
                                %(received_at)s, %(seasons)s::text[], %(closed)s::boolean[],
                                %(others)s::text[], %(tags)s::text[]);
