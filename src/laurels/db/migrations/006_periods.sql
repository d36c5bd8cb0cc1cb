-- Periods (issue 14): a day's, a month's and all time's boards select their
-- completions by `completed_at` (db/__init__.py, SEASON_FILTER), so it is
-- indexed. Their seasons get rows in `seasons` like weeks: the ingest creates
-- and share-locks every period's season of an item (`p_others`: the item's
-- seasons of the periods other than the week, comma-joined), in one name
-- order with its week, and refuses an item any of whose seasons is
-- finalized; the lifecycle finalizes them like weeks.
CREATE INDEX completions_completed_at ON completions (completed_at);

DROP FUNCTION laurels_ingest(text[], bigint[], integer[], timestamptz[], timestamptz, text[],
                             boolean[]);

CREATE FUNCTION laurels_ingest(p_ids text[], p_users bigint[], p_points integer[],
                               p_at timestamptz[], p_received timestamptz,
                               p_seasons text[], p_closed boolean[], p_others text[])
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
    -- 2. seasons of the items that may be recorded (every period's), in name order
    INSERT INTO seasons (season)
    SELECT DISTINCT x.s FROM (
        SELECT t.s, t.u, t.closed FROM unnest(p_seasons, p_users, p_closed) AS t(s, u, closed)
        UNION ALL
        SELECT o.s, t.u, t.closed FROM unnest(p_others, p_users, p_closed) AS t(os, u, closed),
             unnest(string_to_array(t.os, ',')) AS o(s)) x
    WHERE NOT x.u = ANY(erased) AND NOT x.closed ORDER BY 1
    ON CONFLICT DO NOTHING;
    SELECT coalesce(array_agg(x.season) FILTER (WHERE x.done), '{}') INTO finalized FROM (
        SELECT s.season, s.finalized_at IS NOT NULL AS done FROM seasons s
        WHERE s.season = ANY(p_seasons)
           OR s.season = ANY(string_to_array(array_to_string(p_others, ','), ','))
        ORDER BY s.season FOR SHARE) x;
    -- 3. insert what may be inserted; answer for every item
    RETURN QUERY
    WITH items AS (
        SELECT t.*, (t.uid = ANY(erased)) AS gone,
               (t.sea = ANY(finalized) OR string_to_array(t.others, ',') && finalized) AS done
        FROM unnest(p_ids, p_users, p_points, p_at, p_seasons, p_closed, p_others)
             WITH ORDINALITY AS t(cid, uid, pts, at, sea, closed, others, n)),
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
