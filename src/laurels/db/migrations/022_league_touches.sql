-- Leagues against everything that moves a learner (issue 38).
--
-- 1. A learner never joins a week earlier than one they already play in: a
--    late completion (or a restore) for an earlier week counts on its board
--    and joins no league. The trigger refuses a join below a later one that
--    has committed; two joins racing each other (neither saw the other) are
--    settled by the placer in joining order (queries.sql, place_joins: a
--    join with a later week's join made before it is never placed).
--
-- 2. The zone pass looks again at a cohort whenever something may have moved
--    its members, not only at a new completion: a void or a restore of a
--    member's completion, a visibility change, a suspension, an erasure, a
--    placement. Each writes a touch in its own transaction; the zone pass
--    takes the touches whose change every board has applied (a correction's
--    touch carries the completion's seq: its outbox row must be gone) and
--    deletes them. A touch names a cohort, never a learner.
CREATE TABLE league_touches (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    season  text NOT NULL,
    tier    smallint NOT NULL,
    cohort  integer NOT NULL,
    seq     bigint  -- a correction's completion: ready once its outbox row is gone
);
CREATE INDEX league_touches_season ON league_touches (season, id);

CREATE OR REPLACE FUNCTION laurels_league_join() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT laurels_leagues_on() THEN
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
END $$;
