-- Board kinds (issue 42; CONTRACT.md, "Boards of a course, a track or a
-- skill"): what an operator defines so that the tags of one kind
-- (`course:python-101`) put completions on boards of their own. A kind is
-- immutable but for its title: a board is a pure function of the kept
-- completions and its kind's metric, periods and zone, so changing one of
-- them would be a different board (delete the kind and define it again).
-- No learner is named here.
--
-- `generation` tells a process whether the kinds it holds are still the
-- kinds: (how many, the highest generation) changes with every definition
-- and deletion, and no two sets of kinds share it (a new kind's generation
-- is higher than any before it). A retitle keeps it: the title puts no
-- completion on any board.
CREATE SEQUENCE board_kinds_generation;
CREATE TABLE board_kinds (
    kind        text PRIMARY KEY CHECK (kind ~ '^[a-z][a-z0-9_-]{0,31}$'),
    title       text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 100),
    metric      text NOT NULL CHECK (metric IN ('points', 'completions', 'best')),
    -- `week` always, then any of day, month, all, in that order
    periods     text[] NOT NULL CHECK (periods[1] = 'week'
                                       AND periods <@ ARRAY['week', 'day', 'month', 'all']),
    time_zone   text NOT NULL,  -- an IANA name PostgreSQL knows (checked on define)
    notify      boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    generation  bigint NOT NULL DEFAULT nextval('board_kinds_generation')
);

-- The seasons of boards of a kind a learner's completions count on (their
-- names as seasons.Season.name builds them: board/metric/zone/label, `all`
-- in UTC), whether or not a board of theirs was ever built: an erasure
-- leaves a tombstone in each, a profile change reaches each (lifecycle.py,
-- learners.py). Local dates as Python's season_of takes them.
CREATE FUNCTION laurels_board_seasons(p_user_id bigint) RETURNS SETOF text
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
