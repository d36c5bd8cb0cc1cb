-- The sealed ids' Bloom filter (migration 020) sets four bits of an id's
-- block instead of two. At 16 bits an id, two bits let about 1.4% of new ids
-- through to the sealed index (measured: about 15 a batch of 1,000 at
-- 20,000,000 sealed ids, each a block read from the device, about 5 ms of a
-- batch); four let about 0.24% through ((1 - e^(-4/16))^4), with the same
-- 40 MB. The bits are chosen by double hashing, (h1 + i * h2) mod 64,000,
-- from the hash's low 32 bits (its block comes from the high 32, as before).
--
-- A filter built with two bits does not hold the other two: it is emptied
-- here (blocks = 0: every id probes the sealed index, a correct answer and a
-- slower one), and the seasons loop's next seal builds it again, as it built
-- the first. Nothing else changes: the batch's lookup (laurels_ingest) calls
-- laurels_id_in_block, which is inlined and planned for each call.
--
-- The build and the bits' setter are 020's, restated with four bits (a
-- migration replaces a function whole). No filter built the old way may
-- commit after this: the migration first
-- waits for the seal step's lock (a seal step at work, maybe building the
-- filter with two bits, ends first; a later one finds the lock taken until
-- this commits, and does nothing), and the build, from now on, locks the
-- size row before it reads the sealed ids (an operator's build by hand
-- waits for, or is waited for by, any other writer of the filter).
SELECT pg_advisory_xact_lock(hashtext('laurels completion ids seal step'));

CREATE OR REPLACE FUNCTION laurels_id_bit(p_hash bigint, p_which integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (((p_hash & 65535) + p_which * (((p_hash >> 16) & 65535) | 1)) % 64000)::integer $$;

-- Whether a block has all four of an id's bits set.
CREATE OR REPLACE FUNCTION laurels_id_in_block(p_words bigint[], p_hash bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (p_words[laurels_id_bit(p_hash, 0) / 64 + 1] >> (laurels_id_bit(p_hash, 0) % 64))
           & (p_words[laurels_id_bit(p_hash, 1) / 64 + 1] >> (laurels_id_bit(p_hash, 1) % 64))
           & (p_words[laurels_id_bit(p_hash, 2) / 64 + 1] >> (laurels_id_bit(p_hash, 2) % 64))
           & (p_words[laurels_id_bit(p_hash, 3) / 64 + 1] >> (laurels_id_bit(p_hash, 3) % 64))
           & 1 = 1 $$;

-- The filter built from the sealed ids: 16 bits an id, at least 16 blocks.
CREATE OR REPLACE FUNCTION laurels_build_id_filter() RETURNS integer
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_ids bigint;
    v_blocks integer;
BEGIN
    PERFORM 1 FROM completion_ids_filter_size FOR UPDATE;  -- one writer of the filter
    SELECT count(*) INTO v_ids FROM completion_ids_sealed;
    v_blocks := greatest(16, ceil(v_ids * 16.0 / 64000)::integer);
    DELETE FROM completion_ids_filter;
    INSERT INTO completion_ids_filter (block, words)
    SELECT b.block, array_agg(coalesce(m.mask, 0) ORDER BY w.word)
    FROM generate_series(0, v_blocks - 1) AS b(block)
    CROSS JOIN generate_series(0, 999) AS w(word)
    LEFT JOIN (
        SELECT y.block, y.word, bit_or(1::bigint << y.bit) AS mask FROM (
            SELECT laurels_id_block(s.h, v_blocks) AS block,
                   laurels_id_bit(s.h, k.i) / 64 AS word, laurels_id_bit(s.h, k.i) % 64 AS bit
            FROM (SELECT laurels_id_hash(completion_id) AS h FROM completion_ids_sealed) s,
                 generate_series(0, 3) AS k(i)) y
        GROUP BY 1, 2) m ON m.block = b.block AND m.word = w.word
    GROUP BY b.block;
    UPDATE completion_ids_filter_size SET blocks = v_blocks, ids = v_ids;
    RETURN v_blocks;
END $$;

-- The bits of some ids set (the seal's move, in its transaction).
CREATE OR REPLACE FUNCTION laurels_set_id_bits(p_ids text[]) RETURNS void
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
              FROM (SELECT laurels_id_block(s.h, v_blocks) AS block, laurels_id_bit(s.h, k.i) AS b
                    FROM (SELECT laurels_id_hash(id) AS h FROM unnest(p_ids) AS id) s,
                         generate_series(0, 3) AS k(i)) x
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

-- The two-bit filter, emptied in the same transaction as the new functions:
-- no batch reads a filter built one way with the test of the other.
SELECT 1 FROM completion_ids_filter_size FOR UPDATE;
DELETE FROM completion_ids_filter;
UPDATE completion_ids_filter_size SET blocks = 0, ids = 0;
