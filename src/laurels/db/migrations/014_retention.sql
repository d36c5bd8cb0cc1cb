-- Retention (issue 29; LAURELS_RETAIN_COMPLETIONS_DAYS): the months of
-- completions dropped once every season they touch was closed and archived.
-- A season touching one is "retired": its detail ("why my score") is gone,
-- its standings stay in the archive.
CREATE TABLE retired_months (
    month       date PRIMARY KEY,  -- the first day of the month (UTC)
    retired_at  timestamptz NOT NULL DEFAULT now()
);

-- The partitions of completions, with their month (migration 013 names them).
CREATE FUNCTION laurels_completion_months() RETURNS TABLE (name text, month date)
LANGUAGE sql STABLE AS $$
    SELECT c.relname::text, to_date(substr(c.relname, 13), 'YYYY_MM')
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'completions'::regclass AND c.relname ~ '^completions_[0-9]{4}_[0-9]{2}$'
    ORDER BY 2
$$;

-- Drop a month's partition (and its ids), once; the caller checked its seasons.
CREATE FUNCTION laurels_retire_month(p_month date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_name text := 'completions_' || to_char(p_month, 'YYYY_MM');
    v_from timestamptz := (p_month::timestamp AT TIME ZONE 'UTC');
    v_to timestamptz := ((p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC');
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('laurels completions partitions'));
    IF to_regclass(v_name) IS NULL THEN
        RETURN false;
    END IF;
    DELETE FROM outbox o USING completions c
    WHERE o.seq = c.seq AND c.completed_at >= v_from AND c.completed_at < v_to;
    DELETE FROM completion_ids WHERE completed_at >= v_from AND completed_at < v_to;
    EXECUTE format('ALTER TABLE completions DETACH PARTITION %I', v_name);
    EXECUTE format('DROP TABLE %I', v_name);
    INSERT INTO retired_months (month) VALUES (p_month) ON CONFLICT DO NOTHING;
    RETURN true;
END $$;
