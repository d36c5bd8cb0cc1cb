-- Ingest flat as history grows (issue 29; docs/performance.md, "A year of
-- history"). Three things grew with history on the write path:
--
-- 1. completion_ids' primary key: every recording inserted its id into one
--    B-tree of every id ever recorded (about 1 GB of random text at
--    20,000,000 completions), so a batch of 1,000 new ids dirtied 1,000
--    random leaves of an index larger than shared_buffers, wrote about
--    1,000 full-page images after each checkpoint, and evicted dirty pages
--    to read the next ones.
-- 2. JIT: the batch statement's cost estimate grows with the months of
--    partitions it may probe, and past jit_above_cost PostgreSQL compiled it
--    on every call (about 130 ms of a 330 ms call at 20,000,000 completions;
--    none on an empty database).
-- 3. the seasons' share locks: a scan of every season ever recorded (4 ms
--    a batch at 40 weeks of history, 0.1 ms on an empty database).
--
-- completion_ids becomes a table of two partitions, by `sealed`:
-- - completion_ids_open: the ids of the weeks still open. Every recording
--   inserts here (its primary key is the arbiter of two recordings of one
--   id), so its index holds a few weeks of ids, not all of them.
-- - completion_ids_sealed: the ids of finalized weeks, moved there by the
--   seasons loop (laurels_seal_completion_ids), sorted, in bulk. A batch
--   only reads it (one leaf per new id: clean pages, no WAL).
-- An id is in exactly one of them: a move deletes it from one and inserts
-- it into the other in one transaction, and every reader (the ingest's
-- `known`, find_completions, erasure, retention) reads the parent, so any
-- snapshot sees it once. Why no second recording of a moved id can slip in:
-- see laurels_seal_completion_ids below.
--
-- The existing table becomes the sealed partition as it is (no row moves;
-- its `sealed` column is a default, written by no rewrite): the CHECK below
-- reads the table once (0.75 s for 2,700,000 ids here), and nothing else
-- grows with it. New ids go to the open partition from then on.

ALTER TABLE completion_ids RENAME TO completion_ids_sealed;
ALTER INDEX completion_ids_pkey RENAME TO completion_ids_sealed_pkey;
ALTER INDEX completion_ids_completed_at RENAME TO completion_ids_sealed_completed_at;
-- On a large live database, run the two ALTERs of docs/operations.md
-- ("Sealed ids on a live database") first: the column and a NOT VALID
-- check, then VALIDATE (which reads the table while writes go on). This
-- migration then finds them and takes only instants.
ALTER TABLE completion_ids_sealed ADD COLUMN IF NOT EXISTS sealed boolean NOT NULL DEFAULT true;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                   WHERE conname = 'completion_ids_sealed_is_sealed') THEN
        ALTER TABLE completion_ids_sealed ADD CONSTRAINT completion_ids_sealed_is_sealed
            CHECK (sealed = true);  -- lets ATTACH skip its own scan
    ELSE
        ALTER TABLE completion_ids_sealed VALIDATE CONSTRAINT completion_ids_sealed_is_sealed;
    END IF;
END $$;

CREATE TABLE completion_ids (
    completion_id  text NOT NULL,
    seq            bigint NOT NULL,
    completed_at   timestamptz NOT NULL,
    sealed         boolean NOT NULL DEFAULT false
) PARTITION BY LIST (sealed);
CREATE TABLE completion_ids_open PARTITION OF completion_ids
    (PRIMARY KEY (completion_id)) FOR VALUES IN (false);
CREATE INDEX completion_ids_open_completed_at ON completion_ids_open (completed_at);
ALTER TABLE completion_ids ATTACH PARTITION completion_ids_sealed FOR VALUES IN (true);

-- The ids a seal will move (its first step), and the transaction that
-- staged them.
CREATE TABLE completion_ids_sealing (completion_id text NOT NULL);
CREATE TABLE completion_seal (
    only_row   boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    staged_by  xid8 NOT NULL,        -- the staging transaction's id
    staged     bigint NOT NULL,
    staged_at  timestamptz NOT NULL DEFAULT now()
);

-- A seal, in two calls of the seasons loop (each returns what it did):
-- 1. stage: copy into completion_ids_sealing the ids of the open partition
--    recorded before p_cutoff (the start of the earliest week not
--    finalized: every week before it is finalized, and takes no completion),
--    at most p_limit of them, and remember the staging's transaction id;
-- 2. move, once every transaction that had an id before it has ended (the
--    current snapshot's xmin is past it; a snapshot's xmax is no bound:
--    xids at or past it may run unlisted): delete the staged ids from the open
--    partition and insert them into the sealed one, sorted, in one
--    transaction.
-- Why a second recording of a moved id cannot slip in: a recording R2 of id
-- X would insert X into the open partition if its statement's snapshot saw
-- X nowhere and, once it waited on X's first recording R1 there, found X's
-- row gone. X was staged, so R1 committed before the staging; R2's snapshot
-- did not see R1, so R2 was running before R1 committed, and had its xid
-- (its share locks on users and seasons come first), below the staging's,
-- which was assigned after the staging's snapshot. The move waits until R2 has ended. Any later recording's snapshot
-- sees X in one partition or the other.
-- An erasure (or retention) deleting ids holds the seal lock shared; the
-- move only tries it (never waits), so it never deletes a row an erasure is
-- deleting, and neither misses the other's rows.
CREATE FUNCTION laurels_seal_completion_ids(p_cutoff timestamptz, p_limit integer)
RETURNS TABLE (staged bigint, moved bigint)
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_state completion_seal%ROWTYPE;
    v_count bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('laurels completion ids seal step')) THEN
        RETURN QUERY SELECT 0::bigint, 0::bigint;  -- another process's seal is at work
        RETURN;
    END IF;
    SELECT * INTO v_state FROM completion_seal;
    IF NOT FOUND THEN
        INSERT INTO completion_ids_sealing
        SELECT o.completion_id FROM completion_ids_open o
        WHERE o.completed_at < p_cutoff ORDER BY o.completed_at LIMIT p_limit;
        GET DIAGNOSTICS v_count = ROW_COUNT;
        IF v_count > 0 THEN
            INSERT INTO completion_seal (staged_by, staged)
            VALUES (pg_current_xact_id(), v_count);
        END IF;
        RETURN QUERY SELECT v_count, 0::bigint;
        RETURN;
    END IF;
    IF pg_snapshot_xmin(pg_current_snapshot()) <= v_state.staged_by
       OR NOT pg_try_advisory_xact_lock(hashtext('laurels completion ids seal')) THEN
        RETURN QUERY SELECT 0::bigint, 0::bigint;  -- not yet: the loop tries again
        RETURN;
    END IF;
    WITH moved AS (
        DELETE FROM completion_ids_open o USING completion_ids_sealing s
        WHERE o.completion_id = s.completion_id
        RETURNING o.completion_id, o.seq, o.completed_at)
    INSERT INTO completion_ids_sealed (completion_id, seq, completed_at, sealed)
    SELECT m.completion_id, m.seq, m.completed_at, true FROM moved m ORDER BY m.completion_id;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    TRUNCATE completion_ids_sealing;
    DELETE FROM completion_seal;
    RETURN QUERY SELECT 0::bigint, v_count;
END $$;

-- Retention deletes a month's ids holding the seal lock shared (above).
CREATE OR REPLACE FUNCTION laurels_retire_month(p_month date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_name text := 'completions_' || to_char(p_month, 'YYYY_MM');
    v_from timestamptz := (p_month::timestamp AT TIME ZONE 'UTC');
    v_to timestamptz := ((p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC');
    v_wait text := current_setting('lock_timeout');
    v_done boolean := true;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('laurels completions partitions'));
    IF to_regclass(v_name) IS NULL THEN
        RETURN false;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(hashtext('laurels completion ids seal'));
    BEGIN
        DELETE FROM outbox o USING completions c
        WHERE o.seq = c.seq AND c.completed_at >= v_from AND c.completed_at < v_to;
        DELETE FROM completion_ids WHERE completed_at >= v_from AND completed_at < v_to;
        PERFORM set_config('lock_timeout', '100ms', true);
        EXECUTE format('ALTER TABLE completions DETACH PARTITION %I', v_name);
        EXECUTE format('DROP TABLE %I', v_name);
        INSERT INTO retired_months (month) VALUES (p_month) ON CONFLICT DO NOTHING;
    EXCEPTION WHEN lock_not_available THEN
        v_done := false;  -- busy: nothing dropped, nothing deleted; the loop tries again
    END;
    PERFORM set_config('lock_timeout', v_wait, true);
    RETURN v_done;
END $$;

-- Recording: the id into the open partition, the seasons' share locks
-- through their primary key (013's function otherwise), not
-- compiled by JIT (an OLTP statement of 1,000 rows: compiling cost more
-- than it saved, every call), planned for its arrays every call (016).
CREATE OR REPLACE FUNCTION laurels_ingest(p_ids text[], p_users bigint[], p_points integer[],
                               p_at timestamptz[], p_received timestamptz,
                               p_seasons text[], p_closed boolean[], p_others text[])
RETURNS TABLE (n bigint, status text, seq bigint, user_id bigint, points integer,
               completed_at timestamptz, received_at timestamptz, season text,
               profile_version bigint, visibility text, display_name text)
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan SET jit = off AS $$
#variable_conflict use_column
DECLARE
    erased bigint[];
    finalized text[];
    names text[];
BEGIN
    -- 1. learners, in id order
    INSERT INTO users (user_id) SELECT DISTINCT u FROM unnest(p_users) AS u ORDER BY 1
    ON CONFLICT DO NOTHING;
    SELECT coalesce(array_agg(x.user_id) FILTER (WHERE x.gone), '{}') INTO erased FROM (
        SELECT u.user_id, u.erased_at IS NOT NULL AS gone FROM users u
        WHERE u.user_id = ANY(p_users) ORDER BY u.user_id FOR SHARE) x;
    -- 2. seasons of the items that may be recorded (every period's), in name order
    INSERT INTO seasons (season)
    SELECT DISTINCT x.s FROM (
        SELECT t.s, t.u, t.closed FROM unnest(p_seasons, p_users, p_closed) AS t(s, u, closed)
        UNION ALL
        SELECT o.s, t.u, t.closed FROM unnest(p_others, p_users, p_closed) AS t(os, u, closed),
             unnest(string_to_array(t.os, ',')) AS o(s)) x
    WHERE NOT x.u = ANY(erased) AND NOT x.closed ORDER BY 1
    ON CONFLICT DO NOTHING;
    -- (the names once, then by the primary key: an OR of the two arrays made
    -- a scan of every season, splitting p_others again for each row)
    names := ARRAY(SELECT DISTINCT x FROM unnest(p_seasons || string_to_array(
                       array_to_string(p_others, ','), ',')) AS x);
    SELECT coalesce(array_agg(x.season) FILTER (WHERE x.done), '{}') INTO finalized FROM (
        SELECT s.season, s.finalized_at IS NOT NULL AS done FROM seasons s
        WHERE s.season = ANY(names)
        ORDER BY s.season FOR SHARE) x;
    -- 3. insert what may be inserted; answer for every item
    RETURN QUERY
    WITH items AS (
        SELECT t.*, (t.uid = ANY(erased)) AS gone,
               (t.sea = ANY(finalized) OR string_to_array(t.others, ',') && finalized) AS done
        FROM unnest(p_ids, p_users, p_points, p_at, p_seasons, p_closed, p_others)
             WITH ORDINALITY AS t(cid, uid, pts, at, sea, closed, others, n)),
    known AS (
        SELECT k.completion_id, k.seq, k.completed_at FROM completion_ids k
        WHERE k.completion_id = ANY(p_ids)),
    stored AS (
        SELECT c.* FROM known k
        JOIN completions c ON c.seq = k.seq AND c.completed_at = k.completed_at),
    chosen AS (  -- per new completion_id, the first item that may be recorded
        SELECT DISTINCT ON (i.cid) i.* FROM items i
        WHERE NOT i.gone AND NOT i.closed AND NOT i.done
          AND NOT EXISTS (SELECT 1 FROM known k WHERE k.completion_id = i.cid)
        ORDER BY i.cid, i.n),
    claimed AS (  -- the ids this batch records (a racing one waits, then skips)
        INSERT INTO completion_ids_open AS k (completion_id, seq, completed_at)
        SELECT ch.cid, nextval('completion_seq'), ch.at FROM chosen ch ORDER BY ch.cid
        ON CONFLICT (completion_id) DO NOTHING
        RETURNING k.completion_id, k.seq),
    fresh AS (
        INSERT INTO completions AS c (seq, completion_id, user_id, points, completed_at,
                                      received_at, season)
        SELECT cl.seq, ch.cid, ch.uid, ch.pts, ch.at, p_received, ch.sea
        FROM claimed cl JOIN chosen ch ON ch.cid = cl.completion_id
        ORDER BY cl.seq
        RETURNING c.completion_id, c.seq),
    outboxed AS (  -- runs although nothing reads it (a data-modifying CTE always does)
        INSERT INTO outbox (seq) SELECT f.seq FROM fresh f),
    firsts AS (  -- what this batch recorded, as the later items compare with it
        SELECT ch.cid, ch.n, f.seq, ch.uid, ch.pts, ch.at, ch.sea
        FROM chosen ch JOIN fresh f ON f.completion_id = ch.cid)
    SELECT i.n,
           CASE WHEN i.gone THEN 'erased'
                WHEN fi.n = i.n THEN 'recorded'
                WHEN s.seq IS NOT NULL OR fi.seq IS NOT NULL THEN 'exists'
                WHEN i.closed THEN 'closed'
                WHEN i.done THEN 'finalized'
                ELSE 'raced' END,
           coalesce(s.seq, fi.seq), coalesce(s.user_id, fi.uid), coalesce(s.points, fi.pts),
           coalesce(s.completed_at, fi.at), coalesce(s.received_at, p_received),
           coalesce(s.season, fi.sea),
           u.profile_version, u.visibility, coalesce(u.display_name, '')
    FROM items i
    LEFT JOIN stored s ON s.completion_id = i.cid
    LEFT JOIN firsts fi ON fi.cid = i.cid
    LEFT JOIN users u ON u.user_id = i.uid AND fi.n = i.n
    ORDER BY i.n;
END $$;
