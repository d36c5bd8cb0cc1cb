-- A batch's answer carried, for each item recorded now, what its caller
-- sent: user, points, both times, season and tags (12 columns of which it
-- reads 5), each written out by PostgreSQL (two timestamptz a row) and
-- parsed again by psycopg. An item recorded now is answered with its seq
-- and its learner's profile alone, the other columns NULL; an item not
-- recorded now (a replay, a later copy in the same batch, a refusal) as
-- before, with what was stored, which ingest.py compares (issue 45: batch
-- ingest's statement ran 3% faster, bench/ingest_floor.py). The text is
-- 031's otherwise.
CREATE OR REPLACE FUNCTION laurels_ingest(p_ids text[], p_users bigint[], p_points integer[],
                               p_at timestamptz[], p_received timestamptz,
                               p_seasons text[], p_closed boolean[], p_others text[],
                               p_tags text[])
RETURNS TABLE (n bigint, status text, seq bigint, user_id bigint, points integer,
               completed_at timestamptz, received_at timestamptz, season text,
               profile_version bigint, visibility text, display_name text, tags text[])
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
    -- A call of a few items (a group of single posts) runs each statement's
    -- plan kept for the connection; a larger one plans each for its arrays
    -- (migration 016). Local to the call: the SET clause restores it.
    IF cardinality(p_ids) <= 64 THEN
        PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
    END IF;
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
            LEFT JOIN LATERAL (  -- the id's block, probed (LIMIT: see the header)
                SELECT f.words FROM completion_ids_filter f
                WHERE f.block = laurels_id_block(x.h, greatest(fs.blocks, 1)) LIMIT 1) f
                   ON true) t
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
               p_at[c.n] AS at, p_seasons[c.n] AS sea,
               string_to_array(nullif(p_tags[c.n], ''), ',') AS tg,
               nextval('completion_seq') AS seq
        FROM unnest(ch_n) AS c(n)),
    claimed AS (  -- the ids this batch records (a racing one waits, then skips)
        INSERT INTO completion_ids_open AS k (completion_id, seq, completed_at)
        SELECT ch.cid, ch.seq, ch.at FROM chosen ch ORDER BY ch.cid
        ON CONFLICT (completion_id) DO NOTHING
        RETURNING k.seq),
    fresh AS (
        INSERT INTO completions AS c (seq, completion_id, user_id, points, completed_at,
                                      received_at, season, tags)
        SELECT ch.seq, ch.cid, ch.uid, ch.pts, ch.at, p_received, ch.sea, ch.tg
        FROM chosen ch WHERE ch.seq IN (SELECT cl.seq FROM claimed cl)
        ORDER BY ch.seq
        RETURNING c.completion_id, c.seq, c.user_id, c.points, c.completed_at, c.season,
                  c.tags),
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
                WHEN r.recorded THEN 'recorded'
                WHEN s.seq IS NOT NULL OR f.seq IS NOT NULL THEN 'exists'
                WHEN i.closed THEN 'closed'
                WHEN i.done THEN 'finalized'
                ELSE 'raced' END,
           coalesce(s.seq, f.seq),
           -- what was stored, for an item that was not recorded now (ingest.py
           -- compares a replay with it); a recorded one's caller has it
           CASE WHEN NOT r.recorded THEN coalesce(s.user_id, f.user_id) END,
           CASE WHEN NOT r.recorded THEN coalesce(s.points, f.points) END,
           CASE WHEN NOT r.recorded THEN coalesce(s.completed_at, f.completed_at) END,
           CASE WHEN NOT r.recorded THEN coalesce(s.received_at, p_received) END,
           CASE WHEN NOT r.recorded THEN coalesce(s.season, f.season) END, p.v, p.vis, p.name,
           CASE WHEN r.recorded THEN NULL WHEN s.seq IS NOT NULL THEN s.tags ELSE f.tags END
    FROM items i
    LEFT JOIN unnest(ch_n) AS ch(n) ON ch.n = i.n
    LEFT JOIN fresh f ON f.completion_id = i.cid
    CROSS JOIN LATERAL (SELECT ch.n IS NOT NULL AND f.seq IS NOT NULL AS recorded) r
    LEFT JOIN LATERAL (  -- the row recorded already, by its key (one probe an item;
                         -- LIMIT keeps it a probe: see the header)
        SELECT c.* FROM completions c WHERE c.seq = i.kseq AND c.completed_at = i.kat
        LIMIT 1) s ON true
    LEFT JOIN profiles p ON p.uid = i.uid AND r.recorded
    ORDER BY i.n;
END
$$;
