-- A month whose completions reached the default partition (rows written
-- before its partition was made: by hand, by a restore, by an older tool)
-- made `CREATE TABLE … PARTITION OF` fail for good, and every later batch of
-- that month with it ("updated partition constraint for default partition
-- would be violated"). The month's partition is now made beside the table,
-- the month's rows moved into it from the default partition, and then it is
-- attached, all in one transaction; the default partition ends empty again.
CREATE OR REPLACE FUNCTION laurels_completions_partition(p_month date) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_name text := 'completions_' || to_char(p_month, 'YYYY_MM');
    v_from timestamptz := (p_month::timestamp AT TIME ZONE 'UTC');
    v_to timestamptz := ((p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC');
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('laurels completions partitions'));
    IF to_regclass(v_name) IS NOT NULL THEN
        RETURN v_name;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM completions_default
                   WHERE completed_at >= v_from AND completed_at < v_to) THEN
        EXECUTE format('CREATE TABLE %I PARTITION OF completions FOR VALUES FROM (%L) TO (%L)',
                       v_name, v_from, v_to);
        RETURN v_name;
    END IF;
    -- No row of the month may reach the default partition while they move.
    LOCK TABLE completions_default IN SHARE ROW EXCLUSIVE MODE;
    EXECUTE format('CREATE TABLE %I (LIKE completions INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                   v_name);
    EXECUTE format('WITH moved AS (DELETE FROM completions_default '
                   'WHERE completed_at >= %L AND completed_at < %L RETURNING *) '
                   'INSERT INTO %I SELECT * FROM moved', v_from, v_to, v_name);
    EXECUTE format('ALTER TABLE completions ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                   v_name, v_from, v_to);
    RETURN v_name;
END $$;
