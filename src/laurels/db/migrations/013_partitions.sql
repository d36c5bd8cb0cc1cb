-- Completions partitioned by month of `completed_at` (issue 29;
-- docs/operations.md, "A year of history"). Every index and every vacuum
-- then works on a month, not on all history, and a month whose seasons are
-- closed and archived can be dropped whole (LAURELS_RETAIN_COMPLETIONS_DAYS).
--
-- A unique index of a partitioned table must hold the partition key, so
-- `completion_id`, unique forever, gets a table of its own
-- (completion_ids), written first in the recording transaction: a second
-- recording of the same id waits for the first and finds it. The outbox
-- keeps `seq` only: its foreign key (a partitioned table's key is (seq,
-- completed_at)) gives way to an explicit delete in the erasure.
--
-- This migration moves an existing table in one transaction (the ingest
-- waits meanwhile); docs/operations.md says how to do it on a large live
-- database instead.

ALTER TABLE completions RENAME TO completions_unpartitioned;
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_seq_fkey;

CREATE SEQUENCE completion_seq AS bigint;
SELECT setval('completion_seq',
              coalesce((SELECT max(seq) FROM completions_unpartitioned), 0) + 1, false);

CREATE TABLE completions (
    seq            bigint NOT NULL DEFAULT nextval('completion_seq'),
    completion_id  text NOT NULL,
    user_id        bigint NOT NULL,
    points         integer NOT NULL CHECK (points BETWEEN 1 AND 1000000),
    completed_at   timestamptz NOT NULL,
    received_at    timestamptz NOT NULL,
    season         text NOT NULL,
    voided_at      timestamptz,
    correction     integer NOT NULL DEFAULT 0,
    PRIMARY KEY (seq, completed_at)
) PARTITION BY RANGE (completed_at);
ALTER SEQUENCE completion_seq OWNED BY completions.seq;
CREATE INDEX completions_by_id ON completions (completion_id);
CREATE INDEX completions_season_user_p ON completions (season, user_id);
CREATE INDEX completions_user_p ON completions (user_id);
CREATE INDEX completions_completed_at_p ON completions (completed_at);
CREATE INDEX completions_corrected ON completions (seq) WHERE correction > 0;
-- Rows of a month without a partition yet (none, normally: the service
-- creates each month's ahead of its first completion).
CREATE TABLE completions_default PARTITION OF completions DEFAULT;

-- One partition per month holding completions, then the rows.
CREATE FUNCTION laurels_completions_partition(p_month date) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_name text := 'completions_' || to_char(p_month, 'YYYY_MM');
    v_from timestamptz := (p_month::timestamp AT TIME ZONE 'UTC');
    v_to timestamptz := ((p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC');
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('laurels completions partitions'));
    IF to_regclass(v_name) IS NULL THEN
        EXECUTE format('CREATE TABLE %I PARTITION OF completions FOR VALUES FROM (%L) TO (%L)',
                       v_name, v_from, v_to);
    END IF;
    RETURN v_name;
END $$;

SELECT laurels_completions_partition(m::date)
FROM (SELECT DISTINCT date_trunc('month', completed_at AT TIME ZONE 'UTC') AS m
      FROM completions_unpartitioned) months;

INSERT INTO completions (seq, completion_id, user_id, points, completed_at, received_at, season,
                         voided_at, correction)
SELECT seq, completion_id, user_id, points, completed_at, received_at, season, voided_at,
       correction
FROM completions_unpartitioned;

CREATE TABLE completion_ids (
    completion_id  text PRIMARY KEY,
    seq            bigint NOT NULL,
    completed_at   timestamptz NOT NULL
);
CREATE INDEX completion_ids_completed_at ON completion_ids (completed_at);
INSERT INTO completion_ids SELECT completion_id, seq, completed_at FROM completions_unpartitioned;

DROP TABLE completions_unpartitioned;

-- The league joins ride on the new table (012).
CREATE TRIGGER league_join AFTER INSERT ON completions
    REFERENCING NEW TABLE AS fresh
    FOR EACH STATEMENT EXECUTE FUNCTION laurels_league_join();
CREATE TRIGGER league_join_on_restore AFTER UPDATE ON completions
    REFERENCING NEW TABLE AS fresh
    FOR EACH STATEMENT EXECUTE FUNCTION laurels_league_join();

-- Recording: the id first (unique forever), then the completion in its
-- month, then its outbox row (006's function, with completion_ids).
CREATE OR REPLACE FUNCTION laurels_ingest(p_ids text[], p_users bigint[], p_points integer[],
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
        INSERT INTO completion_ids AS k (completion_id, seq, completed_at)
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
