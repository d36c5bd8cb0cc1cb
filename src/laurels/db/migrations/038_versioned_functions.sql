-- Versioned function names (procrastinate's rule). A function whose body
-- changed used to be redefined in place (CREATE OR REPLACE: laurels_ingest
-- eight times), so during a rolling deploy a process of the previous
-- version, still running, called a body written for the next one. From
-- here on a function's body never changes under its name: a change is a new
-- function `<name>_v<N+1>`, the named queries of that version call it, and
-- the old name stays defined for the processes of the previous version
-- until a later migration drops it (docs/design.md, "Functions have
-- versioned names"; docs/operations.md, "Upgrading while the previous
-- version runs"). tests/unit/test_function_versions.py fails when a
-- migration after this one redefines a name with another body, and when a
-- named query calls a function that has a newer version.
--
-- This migration gives every function its first versioned name, `_v1`,
-- with the body it has now (copied from the migration named above each;
-- "the header" in a body's comment is that migration's), each call of
-- another laurels function renamed to its `_v1`: what a `_v1` calls never
-- changes either. The unversioned functions stay, unchanged, for the
-- processes of the previous version (they call laurels_ingest and the
-- others by those names), calling each other as before; a migration of a
-- later version, once no process of the version before this one runs, drops
-- them.
--
-- Triggers are not called by processes: each is pointed at its `_v1`
-- trigger function here, and the unversioned trigger functions, which
-- nothing can call any more, are dropped. A trigger fires for every
-- process, old or new: its function's body must suit the statements of
-- both versions, and a change of it is a new `_vN` the trigger is pointed
-- at, like these.

-- 1. Helpers in SQL, in the order they call each other (a LANGUAGE sql body is
--    checked when it is created: what it calls must exist).

-- laurels_utc, as migration 008 left it.
CREATE FUNCTION laurels_utc_v1(t timestamp with time zone) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

-- laurels_webhooks_on, as migration 011 left it.
CREATE FUNCTION laurels_webhooks_on_v1() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT enabled FROM webhook_settings), false)
$$;

-- laurels_webhook_wanted, as migration 011 left it.
CREATE FUNCTION laurels_webhook_wanted_v1(p_type text, p_kind text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT enabled AND (events IS NULL OR p_type = ANY(events)
                                         OR 'notification.' || p_kind = ANY(events))
                     FROM webhook_settings), false)
$$;

-- laurels_leagues_on, as migration 012 left it.
CREATE FUNCTION laurels_leagues_on_v1() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT enabled FROM league_settings), false)
$$;

-- laurels_id_hash, as migration 020 left it.
CREATE FUNCTION laurels_id_hash_v1(p_id text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT hashtextextended(p_id, 0)
$$;

-- laurels_id_block, as migration 020 left it.
CREATE FUNCTION laurels_id_block_v1(p_hash bigint, p_blocks integer) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT ((p_hash >> 32) & 2147483647)::integer % p_blocks
$$;

-- laurels_id_bit, as migration 021 left it.
CREATE FUNCTION laurels_id_bit_v1(p_hash bigint, p_which integer) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT (((p_hash & 65535) + p_which * (((p_hash >> 16) & 65535) | 1)) % 64000)::integer
$$;

-- laurels_id_in_block, as migration 021 left it.
CREATE FUNCTION laurels_id_in_block_v1(p_words bigint[], p_hash bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT (p_words[laurels_id_bit_v1(p_hash, 0) / 64 + 1]
                >> (laurels_id_bit_v1(p_hash, 0) % 64))
           & (p_words[laurels_id_bit_v1(p_hash, 1) / 64 + 1]
                >> (laurels_id_bit_v1(p_hash, 1) % 64))
           & (p_words[laurels_id_bit_v1(p_hash, 2) / 64 + 1]
                >> (laurels_id_bit_v1(p_hash, 2) % 64))
           & (p_words[laurels_id_bit_v1(p_hash, 3) / 64 + 1]
                >> (laurels_id_bit_v1(p_hash, 3) % 64))
           & 1 = 1
$$;

-- laurels_completion_months, as migration 014 left it.
CREATE FUNCTION laurels_completion_months_v1() RETURNS TABLE(name text, month date)
LANGUAGE sql STABLE AS $$
    SELECT c.relname::text, to_date(substr(c.relname, 13), 'YYYY_MM')
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'completions'::regclass AND c.relname ~ '^completions_[0-9]{4}_[0-9]{2}$'
    ORDER BY 2
$$;

-- laurels_board_seasons, as migration 026 left it.
CREATE FUNCTION laurels_board_seasons_v1(p_user_id bigint) RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT t.tag || '/' || k.metric || '/'
           || CASE WHEN p.period = 'all' THEN 'UTC' ELSE k.time_zone END || '/'
           || CASE p.period
                WHEN 'week' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'IYYY-"W"IW')
                WHEN 'day' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'YYYY-MM-DD')
                WHEN 'month' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'YYYY-MM')
                ELSE 'all' END
    FROM completions c
    CROSS JOIN LATERAL unnest(c.tags) AS t(tag)
    JOIN board_kinds k ON k.kind = split_part(t.tag, ':', 1)
    CROSS JOIN LATERAL unnest(k.periods) AS p(period)
    WHERE c.user_id = p_user_id AND c.tags IS NOT NULL
    UNION
    -- the all-time board of a kind whose weeks archived them, their
    -- completions retired since (retention)
    SELECT split_part(st.season, '/', 1) || '/' || split_part(st.season, '/', 2) || '/UTC/all'
    FROM season_standings st
    WHERE st.user_id = p_user_id AND st.season LIKE '%%/%%'
$$;

-- 2. The functions the named queries call, and the ones they call.

-- laurels_build_id_filter, as migration 021 left it.
CREATE FUNCTION laurels_build_id_filter_v1() RETURNS integer
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
            SELECT laurels_id_block_v1(s.h, v_blocks) AS block,
                   laurels_id_bit_v1(s.h, k.i) / 64 AS word,
                   laurels_id_bit_v1(s.h, k.i) % 64 AS bit
            FROM (SELECT laurels_id_hash_v1(completion_id) AS h FROM completion_ids_sealed) s,
                 generate_series(0, 3) AS k(i)) y
        GROUP BY 1, 2) m ON m.block = b.block AND m.word = w.word
    GROUP BY b.block;
    UPDATE completion_ids_filter_size SET blocks = v_blocks, ids = v_ids;
    RETURN v_blocks;
END
$$;

-- laurels_set_id_bits, as migration 021 left it.
CREATE FUNCTION laurels_set_id_bits_v1(p_ids text[]) RETURNS void
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
              FROM (SELECT laurels_id_block_v1(s.h, v_blocks) AS block,
                           laurels_id_bit_v1(s.h, k.i) AS b
                    FROM (SELECT laurels_id_hash_v1(id) AS h FROM unnest(p_ids) AS id) s,
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
END
$$;

-- laurels_seal_completion_ids, as migration 020 left it.
CREATE FUNCTION laurels_seal_completion_ids_v1(p_cutoff timestamp with time zone,
                                               p_limit integer)
RETURNS TABLE(staged bigint, moved bigint)
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
        PERFORM laurels_build_id_filter_v1();
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
    PERFORM laurels_set_id_bits_v1(ARRAY(SELECT completion_id FROM completion_ids_sealing));
    IF (SELECT ids > blocks * 8000::bigint FROM completion_ids_filter_size) THEN
        PERFORM laurels_build_id_filter_v1();
    END IF;
    TRUNCATE completion_ids_sealing;
    DELETE FROM completion_seal;
    RETURN QUERY SELECT 0::bigint, v_count;
END
$$;

-- laurels_completions_partition, as migration 019 left it.
CREATE FUNCTION laurels_completions_partition_v1(p_month date) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_name text := 'completions_' || to_char(p_month, 'YYYY_MM');
    v_from timestamptz := (p_month::timestamp AT TIME ZONE 'UTC');
    v_to timestamptz := ((p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC');
    v_wait text := current_setting('lock_timeout');  -- the caller's, given back at the end
    v_made text := v_name;
BEGIN
    PERFORM set_config('lock_timeout', '100ms', true);
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('laurels completions partitions'));
        IF to_regclass(v_name) IS NOT NULL THEN
            NULL;  -- made already
        ELSIF NOT EXISTS (SELECT 1 FROM completions_default
                          WHERE completed_at >= v_from AND completed_at < v_to) THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF completions FOR VALUES FROM (%L) TO (%L)',
                           v_name, v_from, v_to);
        ELSE
            -- No row of the month may reach the default partition while they move.
            LOCK TABLE completions_default IN SHARE ROW EXCLUSIVE MODE;
            EXECUTE format('CREATE TABLE %I (LIKE completions INCLUDING DEFAULTS '
                           'INCLUDING CONSTRAINTS)', v_name);
            EXECUTE format('WITH moved AS (DELETE FROM completions_default '
                           'WHERE completed_at >= %L AND completed_at < %L RETURNING *) '
                           'INSERT INTO %I SELECT * FROM moved', v_from, v_to, v_name);
            EXECUTE format('ALTER TABLE completions ATTACH PARTITION %I FOR VALUES FROM (%L) '
                           'TO (%L)', v_name, v_from, v_to);
        END IF;
    EXCEPTION
        WHEN lock_not_available THEN
            v_made := NULL;  -- busy: nothing made (the block's work is undone); try again later
        WHEN duplicate_table THEN
            NULL;  -- made by another meanwhile (a catalog cache that had not seen it yet)
    END;
    PERFORM set_config('lock_timeout', v_wait, true);
    RETURN v_made;
END
$$;

-- laurels_retire_month, as migration 020 left it.
CREATE FUNCTION laurels_retire_month_v1(p_month date) RETURNS boolean
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
END
$$;

-- laurels_enqueue_webhook, as migration 011 left it.
CREATE FUNCTION laurels_enqueue_webhook_v1(p_type text, p_user bigint, p_data jsonb)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid := gen_random_uuid();
BEGIN
    IF laurels_webhook_wanted_v1(p_type, NULL) THEN
        INSERT INTO webhook_deliveries (id, type, user_id, body)
        VALUES (v_id, p_type, p_user, jsonb_build_object(
            'id', v_id, 'type', p_type, 'created_at', laurels_utc_v1(now()), 'data', p_data));
    END IF;
END
$$;

-- laurels_ingest, as migration 034 left it.
CREATE FUNCTION laurels_ingest_v1(p_ids text[], p_users bigint[], p_points integer[],
                                  p_at timestamptz[], p_received timestamptz,
                                  p_seasons text[], p_closed boolean[], p_others text[],
                                  p_tags text[])
RETURNS TABLE (n bigint, status text, seq bigint, user_id bigint, points integer,
               completed_at timestamptz, received_at timestamptz, season text,
               profile_version bigint, visibility text, display_name text, tags text[])
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan SET jit = off AS $$
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
                               OR laurels_id_in_block_v1(f.words, x.h) AS maybe
            FROM (SELECT u.cid, u.n, laurels_id_hash_v1(u.cid) AS h
                  FROM unnest(p_ids) WITH ORDINALITY AS u(cid, n)) x
            CROSS JOIN completion_ids_filter_size fs
            LEFT JOIN LATERAL (  -- the id's block, probed (LIMIT: see the header)
                SELECT f.words FROM completion_ids_filter f
                WHERE f.block = laurels_id_block_v1(x.h, greatest(fs.blocks, 1)) LIMIT 1) f
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

-- 3. The trigger functions.

-- laurels_audit_is_append_only, as migration 007 left it.
CREATE FUNCTION laurels_audit_is_append_only_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only' USING ERRCODE = 'insufficient_privilege';
END
$$;

-- laurels_league_join, as migration 022 left it.
CREATE FUNCTION laurels_league_join_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT laurels_leagues_on_v1() THEN
        RETURN NULL;
    END IF;
    INSERT INTO league_joins (season, user_id)
    SELECT DISTINCT f.season, f.user_id FROM fresh f
    JOIN users u ON u.user_id = f.user_id
    WHERE f.voided_at IS NULL AND u.visibility <> 'hidden' AND u.erased_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM league_weeks w
                      WHERE w.season = f.season AND w.decided_at IS NOT NULL)
      AND NOT EXISTS (SELECT 1 FROM league_joins l
                      WHERE l.user_id = f.user_id AND l.season > f.season)
    ORDER BY 1, 2
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

-- laurels_notification_webhook, as migration 036 left it.
CREATE FUNCTION laurels_notification_webhook_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid := gen_random_uuid();
    v_at timestamptz := now();
    v_window integer;
BEGIN
    IF NOT laurels_webhook_wanted_v1('notification.created', NEW.kind) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        PERFORM 1 FROM webhook_deliveries
        WHERE notification_id = NEW.id AND status = 'pending' AND attempts = 0
        FOR SHARE;
        IF FOUND THEN
            RETURN NULL;
        END IF;
        SELECT coalesce_seconds INTO v_window FROM webhook_settings;
        SELECT greatest(v_at, max(coalesce(delivered_at, next_attempt_at))
                              + make_interval(secs => v_window))
        INTO v_at FROM webhook_deliveries
        WHERE type = 'notification.created' AND user_id = NEW.user_id AND kind = NEW.kind;
        v_at := coalesce(v_at, now());
    END IF;
    INSERT INTO webhook_deliveries (id, type, user_id, notification_id, kind, next_attempt_at,
                                    body)
    VALUES (v_id, 'notification.created', NEW.user_id, NEW.id, NEW.kind, v_at,
            jsonb_build_object('id', v_id, 'type', 'notification.created',
                               'created_at', laurels_utc_v1(now()), 'data', jsonb_build_object(
                'id', NEW.id, 'user_id', NEW.user_id, 'kind', NEW.kind, 'season', NEW.season,
                'data', NEW.data, 'created_at', laurels_utc_v1(NEW.created_at),
                'read', NEW.read)));
    RETURN NULL;
END
$$;

-- laurels_notifications_webhook, as migration 018 left it.
CREATE FUNCTION laurels_notifications_webhook_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT laurels_webhooks_on_v1() THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (id, type, user_id, notification_id, kind, next_attempt_at,
                                    body)
    SELECT n.delivery, 'notification.created', n.user_id, n.id, n.kind, now(),
           jsonb_build_object('id', n.delivery, 'type', 'notification.created',
                              'created_at', laurels_utc_v1(now()), 'data', jsonb_build_object(
               'id', n.id, 'user_id', n.user_id, 'kind', n.kind, 'season', n.season,
               'data', n.data, 'created_at', laurels_utc_v1(n.created_at), 'read', n.read))
    FROM (SELECT f.*, gen_random_uuid() AS delivery FROM fresh f) n  -- a new id per row
    WHERE laurels_webhook_wanted_v1('notification.created', n.kind)
    ORDER BY n.id;
    RETURN NULL;
END
$$;

-- laurels_outbox_notify, as migration 003 left it.
CREATE FUNCTION laurels_outbox_notify_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('laurels_outbox', '');
    RETURN NULL;
END
$$;

-- 4. Each trigger pointed at its new function, in this migration's
-- transaction. The four tables are locked first, in the order the service's
-- writers first write them (an ingest: completions, then outbox; a void:
-- completions, outbox, then audit; an erasure: completions, outbox,
-- notifications, then audit), so the migration never holds one of them
-- while it waits for a writer that waits for it. SHARE ROW EXCLUSIVE is what
-- CREATE OR REPLACE TRIGGER takes anyway: reads go on; a writer of these
-- tables either committed before (its statements fired the old function,
-- which is the same body) or waits for the commit (they fire the new one).
-- No statement runs between the two, and a trigger is replaced in place,
-- never dropped then made again: no row goes without its trigger and none
-- fires two. ONLY: a partition of completions needs no lock of its own (the
-- triggers of completions are statement triggers of the partitioned table).
LOCK TABLE ONLY completions, outbox, notifications, audit IN SHARE ROW EXCLUSIVE MODE;

CREATE OR REPLACE TRIGGER league_join AFTER INSERT ON completions
    REFERENCING NEW TABLE AS fresh
    FOR EACH STATEMENT EXECUTE FUNCTION laurels_league_join_v1();
CREATE OR REPLACE TRIGGER league_join_on_restore AFTER UPDATE ON completions
    REFERENCING NEW TABLE AS fresh
    FOR EACH STATEMENT EXECUTE FUNCTION laurels_league_join_v1();
CREATE OR REPLACE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION laurels_outbox_notify_v1();
CREATE OR REPLACE TRIGGER notification_webhook AFTER INSERT ON notifications
    REFERENCING NEW TABLE AS fresh
    FOR EACH STATEMENT EXECUTE FUNCTION laurels_notifications_webhook_v1();
CREATE OR REPLACE TRIGGER notification_refreshed_webhook AFTER UPDATE OF data ON notifications
    FOR EACH ROW WHEN (OLD.dedup_key IS DISTINCT FROM NEW.dedup_key)
    EXECUTE FUNCTION laurels_notification_webhook_v1();
CREATE OR REPLACE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit
    FOR EACH ROW EXECUTE FUNCTION laurels_audit_is_append_only_v1();
CREATE OR REPLACE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
    FOR EACH STATEMENT EXECUTE FUNCTION laurels_audit_is_append_only_v1();

-- The unversioned trigger functions: no trigger runs them now, and a trigger
-- function cannot be called otherwise.
DROP FUNCTION laurels_league_join();
DROP FUNCTION laurels_outbox_notify();
DROP FUNCTION laurels_notifications_webhook();
DROP FUNCTION laurels_notification_webhook();
DROP FUNCTION laurels_audit_is_append_only();
