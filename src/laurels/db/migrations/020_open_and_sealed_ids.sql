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

-- A filter in front of the sealed ids. A batch of 1,000 new ids reads the
-- sealed partition's index once per id, to find an id sent before for a closed
-- week (a 409, or a duplicate). That index holds every finalized week's ids
-- (about 1 GB at 20,000,000), so nearly every probe read a block from disk
-- and evicted one: 2,200 blocks read a batch, the open ids' own index
-- pushed out of shared_buffers with them, 43 ms of a 95 ms call.
--
-- completion_ids_filter is a blocked Bloom filter of the sealed ids: 16 bits
-- an id (40 MB for 20,000,000: a 25th of the index), in blocks of 64,000
-- bits (1,000 bigints, one block a page); an id sets two bits of one block,
-- chosen by hashtextextended(id, 0). A batch looks up its ids' blocks (hot
-- in shared_buffers: every batch touches them) and probes the sealed index
-- only for an id whose two bits are set: the ids really sealed, and about
-- 1.4% of the others (more as the sealed ids outgrow the filter; the seal
-- builds it again, twice as large, past twice its size).
--
-- Consistency: the seal's move sets the moved ids' bits in the transaction
-- that moves them, and a batch reads the filter, its size and the sealed ids
-- in one statement: any snapshot sees an id sealed only with its bits set.
-- Bits are never cleared (an erasure or retention leaves its ids' bits: a
-- wasted probe, never a wrong answer); a rebuild starts from the sealed
-- ids as they are. Until a filter exists (completion_ids_filter_size.blocks
-- = 0, as this migration leaves it) every id probes the sealed index; the
-- seasons loop's first seal builds it.

CREATE TABLE completion_ids_filter (
    block  integer PRIMARY KEY,
    words  bigint[] NOT NULL       -- 1,000 words: 64,000 bits
);
ALTER TABLE completion_ids_filter ALTER COLUMN words SET STORAGE PLAIN;  -- one page, in line
CREATE TABLE completion_ids_filter_size (
    only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    blocks    integer NOT NULL,    -- 0: no filter (every id probes the sealed index)
    ids       bigint NOT NULL      -- the sealed ids it was built for, plus those set since
);
INSERT INTO completion_ids_filter_size (blocks, ids) VALUES (0, 0);

-- An id's hash, its block, and its two bits (0 .. 63,999) in the block.
CREATE FUNCTION laurels_id_hash(p_id text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT hashtextextended(p_id, 0) $$;
CREATE FUNCTION laurels_id_block(p_hash bigint, p_blocks integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ((p_hash >> 32) & 2147483647)::integer % p_blocks $$;
CREATE FUNCTION laurels_id_bit(p_hash bigint, p_which integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ((p_hash >> (16 * p_which)) & 65535)::integer % 64000 $$;
-- Whether a block has both of an id's bits set.
CREATE FUNCTION laurels_id_in_block(p_words bigint[], p_hash bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (p_words[laurels_id_bit(p_hash, 0) / 64 + 1] >> (laurels_id_bit(p_hash, 0) % 64))
           & (p_words[laurels_id_bit(p_hash, 1) / 64 + 1] >> (laurels_id_bit(p_hash, 1) % 64))
           & 1 = 1 $$;

-- The filter built from the sealed ids: 16 bits an id, at least 16 blocks.
CREATE FUNCTION laurels_build_id_filter() RETURNS integer
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_ids bigint;
    v_blocks integer;
BEGIN
    SELECT count(*) INTO v_ids FROM completion_ids_sealed;
    v_blocks := greatest(16, ceil(v_ids * 16.0 / 64000)::integer);
    DELETE FROM completion_ids_filter;
    INSERT INTO completion_ids_filter (block, words)
    SELECT b.block, array_agg(coalesce(m.mask, 0) ORDER BY w.word)
    FROM generate_series(0, v_blocks - 1) AS b(block)
    CROSS JOIN generate_series(0, 999) AS w(word)
    LEFT JOIN (
        SELECT y.block, y.word, bit_or(1::bigint << y.bit) AS mask FROM (
            SELECT laurels_id_block(s.h, v_blocks) AS block, x.b / 64 AS word, x.b % 64 AS bit
            FROM (SELECT laurels_id_hash(completion_id) AS h FROM completion_ids_sealed) s,
                 LATERAL (VALUES (laurels_id_bit(s.h, 0)), (laurels_id_bit(s.h, 1))) AS x(b)) y
        GROUP BY 1, 2) m ON m.block = b.block AND m.word = w.word
    GROUP BY b.block;
    UPDATE completion_ids_filter_size SET blocks = v_blocks, ids = v_ids;
    RETURN v_blocks;
END $$;

-- The bits of some ids set (the seal's move, in its transaction).
CREATE FUNCTION laurels_set_id_bits(p_ids text[]) RETURNS void
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_blocks integer;
    r record;
    v_words bigint[];
    i integer;
BEGIN
    SELECT blocks INTO v_blocks FROM completion_ids_filter_size FOR UPDATE;
    IF v_blocks = 0 THEN
        RETURN;  -- no filter: nothing to keep
    END IF;
    FOR r IN
        SELECT y.block, array_agg(y.word ORDER BY y.word) AS words,
               array_agg(y.mask ORDER BY y.word) AS masks
        FROM (SELECT x.block, x.b / 64 AS word, bit_or(1::bigint << (x.b % 64)) AS mask
              FROM (SELECT laurels_id_block(h, v_blocks) AS block, laurels_id_bit(h, 0) AS b0,
                           laurels_id_bit(h, 1) AS b1
                    FROM (SELECT laurels_id_hash(id) AS h FROM unnest(p_ids) AS id) s) t,
                   LATERAL (VALUES (t.block, t.b0), (t.block, t.b1)) AS x(block, b)
              GROUP BY 1, 2) y
        GROUP BY y.block ORDER BY y.block
    LOOP
        SELECT f.words INTO v_words FROM completion_ids_filter f WHERE f.block = r.block FOR UPDATE;
        FOR i IN 1 .. array_length(r.words, 1) LOOP
            v_words[r.words[i] + 1] := v_words[r.words[i] + 1] | r.masks[i];
        END LOOP;
        UPDATE completion_ids_filter SET words = v_words WHERE block = r.block;
    END LOOP;
    UPDATE completion_ids_filter_size SET ids = ids + cardinality(p_ids);
END $$;

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
-- X would insert X into the open partition if its read of completion_ids
-- (a statement before its insert) saw X nowhere and its insert then found no
-- X there (it waits on a row being deleted, then goes on). X was staged, so
-- its first recording R1 committed before the staging; R2's read did not
-- see R1, so R2 was running before R1 committed, and had its xid (its share
-- locks on users and seasons come first), below the staging's, which was
-- assigned after the staging's snapshot. The move waits until R2 has ended.
-- Any later recording's read sees X in one partition or the other.
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
    IF (SELECT blocks = 0 FROM completion_ids_filter_size) THEN
        -- no filter yet (a migrated database): built here, in the background
        -- of the service, rather than in the migration's locks
        PERFORM laurels_build_id_filter();
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
    -- their bits, in this transaction; a filter outgrown twice over, built again
    PERFORM laurels_set_id_bits(ARRAY(SELECT completion_id FROM completion_ids_sealing));
    IF (SELECT ids > blocks * 8000::bigint FROM completion_ids_filter_size) THEN
        PERFORM laurels_build_id_filter();
    END IF;
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

-- Recording (013's function, rewritten): the id into the open partition;
-- the learners' profiles read with their share locks; the seasons' share
-- locks through their primary key; what is recorded already, and what may
-- be recorded, read into arrays before the writing statement, so that it is
-- planned for the rows it has; not compiled by JIT (an OLTP statement of
-- 1,000 rows: compiling cost more than it saved, every call); planned for
-- its arrays every call (016).
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
    pr_users bigint[]; pr_versions bigint[]; pr_vis text[]; pr_names text[];
    known_seqs bigint[]; known_ats timestamptz[];  -- per item: its id's row, if recorded
    ch_n bigint[];
BEGIN
    -- 1. learners, in id order: share-locked, their profiles read once
    INSERT INTO users (user_id) SELECT DISTINCT u FROM unnest(p_users) AS u ORDER BY 1
    ON CONFLICT DO NOTHING;
    SELECT coalesce(array_agg(x.user_id) FILTER (WHERE x.gone), '{}'),
           coalesce(array_agg(x.user_id), '{}'), coalesce(array_agg(x.profile_version), '{}'),
           coalesce(array_agg(x.visibility), '{}'), coalesce(array_agg(x.display_name), '{}')
      INTO erased, pr_users, pr_versions, pr_vis, pr_names FROM (
        SELECT u.user_id, u.erased_at IS NOT NULL AS gone, u.profile_version, u.visibility,
               coalesce(u.display_name, '') AS display_name FROM users u
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
    -- 3. the ids recorded already (both partitions of completion_ids), and per
    -- new id the first item that may be recorded (its place n), into arrays:
    -- the writing statement is then planned for the rows it really has. (It
    -- used to filter the arrays itself, and the planner, guessing 62 rows of
    -- 1,000, joined the answers in a nested loop, 1,000 x 1,000 comparisons,
    -- 120 ms a batch, once the months of partitions made the stored rows'
    -- lookup look costly.) A concurrent batch recording one of these ids
    -- after this read is met by the insert's ON CONFLICT: 'raced'.
    -- The sealed index is probed only for an id the filter does not rule out
    -- (filter, its size and the ids read in this one statement: one snapshot).
    SELECT array_agg(k.seq ORDER BY t.n), array_agg(k.completed_at ORDER BY t.n)
      INTO known_seqs, known_ats
      FROM (SELECT x.cid, x.n, fs.blocks = 0 OR f.words IS NULL
                               OR laurels_id_in_block(f.words, x.h) AS maybe
            FROM (SELECT u.cid, u.n, laurels_id_hash(u.cid) AS h
                  FROM unnest(p_ids) WITH ORDINALITY AS u(cid, n)) x
            CROSS JOIN completion_ids_filter_size fs
            LEFT JOIN completion_ids_filter f
                   ON f.block = laurels_id_block(x.h, greatest(fs.blocks, 1))) t
      LEFT JOIN LATERAL (
          SELECT o.seq, o.completed_at FROM completion_ids_open o WHERE o.completion_id = t.cid
          UNION ALL
          SELECT s.seq, s.completed_at FROM completion_ids_sealed s
          WHERE t.maybe AND s.completion_id = t.cid) k ON true;
    SELECT coalesce(array_agg(x.n), '{}') INTO ch_n
      FROM (SELECT DISTINCT ON (t.cid) t.cid, t.n
            FROM unnest(p_ids, p_users, p_seasons, p_closed, p_others)
                 WITH ORDINALITY AS t(cid, uid, sea, closed, others, n)
            WHERE NOT t.uid = ANY(erased) AND NOT t.closed
              AND NOT (t.sea = ANY(finalized) OR string_to_array(t.others, ',') && finalized)
              AND known_seqs[t.n] IS NULL
            ORDER BY t.cid, t.n) x;
    -- 4. insert what may be inserted; answer for every item
    RETURN QUERY
    WITH chosen AS (  -- each with its seq (a racing id's seq is skipped: a gap)
        SELECT p_ids[c.n] AS cid, p_users[c.n] AS uid, p_points[c.n] AS pts,
               p_at[c.n] AS at, p_seasons[c.n] AS sea, nextval('completion_seq') AS seq
        FROM unnest(ch_n) AS c(n)),
    claimed AS (  -- the ids this batch records (a racing one waits, then skips)
        INSERT INTO completion_ids_open AS k (completion_id, seq, completed_at)
        SELECT ch.cid, ch.seq, ch.at FROM chosen ch ORDER BY ch.cid
        ON CONFLICT (completion_id) DO NOTHING
        RETURNING k.seq),
    fresh AS (
        INSERT INTO completions AS c (seq, completion_id, user_id, points, completed_at,
                                      received_at, season)
        SELECT ch.seq, ch.cid, ch.uid, ch.pts, ch.at, p_received, ch.sea
        FROM chosen ch WHERE ch.seq IN (SELECT cl.seq FROM claimed cl)
        ORDER BY ch.seq
        RETURNING c.completion_id, c.seq, c.user_id, c.points, c.completed_at, c.season),
    outboxed AS (  -- runs although nothing reads it (a data-modifying CTE always does)
        INSERT INTO outbox (seq) SELECT f.seq FROM fresh f),
    items AS (
        SELECT t.*, (t.uid = ANY(erased)) AS gone,
               (t.sea = ANY(finalized) OR string_to_array(t.others, ',') && finalized) AS done
        FROM unnest(p_ids, p_users, p_seasons, p_closed, p_others, known_seqs, known_ats)
             WITH ORDINALITY AS t(cid, uid, sea, closed, others, kseq, kat, n)),
    profiles AS (
        SELECT * FROM unnest(pr_users, pr_versions, pr_vis, pr_names) AS p(uid, v, vis, name))
    SELECT i.n,
           CASE WHEN i.gone THEN 'erased'
                WHEN ch.n IS NOT NULL AND f.seq IS NOT NULL THEN 'recorded'
                WHEN s.seq IS NOT NULL OR f.seq IS NOT NULL THEN 'exists'
                WHEN i.closed THEN 'closed'
                WHEN i.done THEN 'finalized'
                ELSE 'raced' END,
           coalesce(s.seq, f.seq), coalesce(s.user_id, f.user_id), coalesce(s.points, f.points),
           coalesce(s.completed_at, f.completed_at), coalesce(s.received_at, p_received),
           coalesce(s.season, f.season), p.v, p.vis, p.name
    FROM items i
    LEFT JOIN unnest(ch_n) AS ch(n) ON ch.n = i.n
    LEFT JOIN fresh f ON f.completion_id = i.cid
    LEFT JOIN LATERAL (  -- the row recorded already, by its key (one probe an item)
        SELECT c.* FROM completions c WHERE c.seq = i.kseq AND c.completed_at = i.kat) s ON true
    LEFT JOIN profiles p ON p.uid = i.uid AND ch.n IS NOT NULL AND f.seq IS NOT NULL
    ORDER BY i.n;
END $$;
