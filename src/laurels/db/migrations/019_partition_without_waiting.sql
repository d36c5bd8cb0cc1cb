-- Making a month's partition takes ACCESS EXCLUSIVE on `completions` (and
-- on its default partition). Waiting for it behind a long transaction (a
-- rebuild's snapshot, a league decision, an erasure) queued every later
-- statement on completions behind the request: every ingest and every read
-- of completions stood still for as long as that transaction ran. Found by
-- the interleaving machine (an ingest's first batch of a month while an
-- erasure and a decision were held). Now the function waits at most
-- 100 ms for its locks; if it cannot have them it makes nothing and answers
-- NULL, and the caller tries again later: the service's loop every 10 s, a
-- batch that needs the month every 0.25 s (history.Partitions), letting
-- every other statement on completions through between its tries. A batch
-- never records into the default partition for want of its month.
CREATE OR REPLACE FUNCTION laurels_completions_partition(p_month date) RETURNS text
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
END $$;

-- Retention's DETACH of a month takes the same lock: it waits at most
-- 100 ms for it too, and a month it could not drop now (its deletes undone)
-- is tried again by the retention loop a minute later.
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
