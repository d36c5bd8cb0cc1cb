-- A batch of completions recorded in one round trip (ingest.py): create and
-- share-lock the learners, then share-lock the seasons (the lock order of
-- docs/concurrency.md), refuse erased learners and closed or finalized
-- seasons, insert the new completions and their outbox rows, and answer for
-- every item, in order. Items are independent, as if each came alone in turn:
-- of several items with one completion_id, the first that may be recorded is,
-- and the others are compared with it.
--
-- One row per item (n = its place in the arrays, from 1):
--   'recorded'   inserted: seq, and the learner's profile (read under the
--                share lock) for the fast path's apply
--   'exists'     recorded before, or by an earlier item of this batch: the
--                stored row, which the caller compares with the item
--   'erased'     the item's learner was erased
--   'closed'     the item's season is closed (by the clock: the caller says)
--   'finalized'  the item's season was finalized
--   'raced'      a concurrent batch recorded it after this one looked: the
--                caller reads the stored row again and compares
CREATE FUNCTION laurels_ingest(p_ids text[], p_users bigint[], p_points integer[],
                               p_at timestamptz[], p_received timestamptz,
                               p_seasons text[], p_closed boolean[])
RETURNS TABLE (n bigint, status text, seq bigint, user_id bigint, points integer,
               completed_at timestamptz, received_at timestamptz, season text,
               profile_version bigint, visibility text, display_name text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    erased bigint[];
    finalized text[];
BEGIN
    -- 1. learners, in id order
    INSERT INTO users (user_id) SELECT DISTINCT u FROM unnest(p_users) AS u ORDER BY 1
    ON CONFLICT DO NOTHING;
    SELECT coalesce(array_agg(x.user_id) FILTER (WHERE x.gone), '{}') INTO erased FROM (
        SELECT u.user_id, u.erased_at IS NOT NULL AS gone FROM users u
        WHERE u.user_id = ANY(p_users) ORDER BY u.user_id FOR SHARE) x;
    -- 2. seasons of the items that may be recorded, in name order
    INSERT INTO seasons (season)
    SELECT DISTINCT t.s FROM unnest(p_seasons, p_users, p_closed) AS t(s, u, closed)
    WHERE NOT t.u = ANY(erased) AND NOT t.closed ORDER BY 1
    ON CONFLICT DO NOTHING;
    SELECT coalesce(array_agg(x.season) FILTER (WHERE x.done), '{}') INTO finalized FROM (
        SELECT s.season, s.finalized_at IS NOT NULL AS done FROM seasons s
        WHERE s.season = ANY(p_seasons) ORDER BY s.season FOR SHARE) x;
    -- 3. insert what may be inserted; answer for every item
    RETURN QUERY
    WITH items AS (
        SELECT t.*, (t.uid = ANY(erased)) AS gone, (t.sea = ANY(finalized)) AS done
        FROM unnest(p_ids, p_users, p_points, p_at, p_seasons, p_closed)
             WITH ORDINALITY AS t(cid, uid, pts, at, sea, closed, n)),
    stored AS (
        SELECT c.* FROM completions c WHERE c.completion_id = ANY(p_ids)),
    chosen AS (  -- per new completion_id, the first item that may be recorded
        SELECT DISTINCT ON (i.cid) i.* FROM items i
        WHERE NOT i.gone AND NOT i.closed AND NOT i.done
          AND NOT EXISTS (SELECT 1 FROM stored s WHERE s.completion_id = i.cid)
        ORDER BY i.cid, i.n),
    fresh AS (
        INSERT INTO completions AS c (completion_id, user_id, points, completed_at,
                                      received_at, season)
        SELECT ch.cid, ch.uid, ch.pts, ch.at, p_received, ch.sea FROM chosen ch
        ORDER BY ch.cid
        ON CONFLICT (completion_id) DO NOTHING
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
