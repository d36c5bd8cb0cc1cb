-- Rolling windows (CONTRACT.md, "Rolling windows"; core/seasons.py): the
-- periods `7d` and `30d`, one season each (`last-7d`, `last-30d`) whatever
-- the day, on the whole board (LAURELS_PERIODS) and on a kind's boards.

-- A kind may name them among its periods.
ALTER TABLE board_kinds DROP CONSTRAINT board_kinds_periods_check;
ALTER TABLE board_kinds ADD CONSTRAINT board_kinds_periods_check
    CHECK (periods[1] = 'week'
           AND periods <@ ARRAY['week', 'day', 'month', 'all', '7d', '30d']);

-- laurels_board_seasons_v1 with a kind's windows: `tag/metric/zone/last-7d`
-- (a window's days are its kind's zone's). The _v1 stays for the processes
-- of the previous version (migration 038), which define no window.
CREATE FUNCTION laurels_board_seasons_v2(p_user_id bigint) RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT t.tag || '/' || k.metric || '/'
           || CASE WHEN p.period = 'all' THEN 'UTC' ELSE k.time_zone END || '/'
           || CASE p.period
                WHEN 'week' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'IYYY-"W"IW')
                WHEN 'day' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'YYYY-MM-DD')
                WHEN 'month' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'YYYY-MM')
                WHEN '7d' THEN 'last-7d'
                WHEN '30d' THEN 'last-30d'
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
