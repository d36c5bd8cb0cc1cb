-- Weekly leagues (issue 28; docs/leagues.md). Memberships, placement and
-- outcomes live here; a cohort's board is read from the week's board.
--
-- Joining needs no lock anybody queues on: a learner's first completion of
-- a week that counts writes one row of league_joins (keyed by week and
-- learner) in the transaction that records it, from a statement trigger on
-- completions, whatever process records it. Placement is done later, in
-- bulk and in joining order, by one placer per week at a time (leagues.py).

-- The deployment's league switch, stored by the serving process (as the
-- webhook settings are): every writer's transaction reads it.
CREATE TABLE league_settings (
    id          boolean PRIMARY KEY DEFAULT true CHECK (id),  -- one row
    enabled     boolean NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION laurels_leagues_on() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT enabled FROM league_settings), false)
$$;

-- A week's leagues: decided once, at its end plus the league grace.
CREATE TABLE league_weeks (
    season      text PRIMARY KEY,
    decided_at  timestamptz,
    zone_seq    bigint NOT NULL DEFAULT 0  -- completions seen by the zone pass
);

-- Who joined a week, in joining order; placed once the placer has them.
CREATE TABLE league_joins (
    season     text NOT NULL,
    user_id    bigint NOT NULL,
    join_seq   bigint GENERATED ALWAYS AS IDENTITY,
    joined_at  timestamptz NOT NULL DEFAULT now(),
    placed     boolean NOT NULL DEFAULT false,
    PRIMARY KEY (season, user_id)
);
CREATE INDEX league_joins_unplaced ON league_joins (season, join_seq) WHERE NOT placed;
CREATE INDEX league_joins_user ON league_joins (user_id);

-- Placed members: cohort = slot / size, slot = the member's place in its
-- tier's week (0-based), so every cohort is full but the newest.
CREATE TABLE league_members (
    season   text NOT NULL,
    user_id  bigint NOT NULL,
    tier     smallint NOT NULL,
    cohort   integer NOT NULL,
    slot     integer NOT NULL,
    zone     text CHECK (zone IN ('promotion', 'demotion')),  -- last one notified
    PRIMARY KEY (season, user_id)
);
CREATE INDEX league_members_cohort ON league_members (season, tier, cohort);
CREATE INDEX league_members_user ON league_members (user_id, season);

-- Slots used per tier and week (only the placer writes it, under its lock).
CREATE TABLE league_fill (
    season   text NOT NULL,
    tier     smallint NOT NULL,
    members  integer NOT NULL,
    PRIMARY KEY (season, tier)
);

-- The decision: each member's final rank and outcome, once.
CREATE TABLE league_results (
    season    text NOT NULL,
    user_id   bigint NOT NULL,
    tier      smallint NOT NULL,
    cohort    integer NOT NULL,
    rank      integer,
    outcome   text NOT NULL CHECK (outcome IN ('promoted', 'demoted', 'stayed')),
    new_tier  smallint NOT NULL,
    PRIMARY KEY (season, user_id)
);
CREATE INDEX league_results_user ON league_results (user_id, season DESC);

-- Each learner's tier after their latest decided week.
CREATE TABLE league_tiers (
    user_id  bigint PRIMARY KEY,
    tier     smallint NOT NULL,
    season   text NOT NULL
);

-- A completion that counts, of a learner who is not hidden (nor suspended:
-- then hidden too) nor erased, recorded before its week is decided: the
-- learner joins the week's leagues (once; later ones change nothing). A
-- restore that makes a completion count again joins the same way.
CREATE FUNCTION laurels_league_join() RETURNS trigger LANGUAGE plpgsql AS $$
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
    ORDER BY 1, 2
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER league_join AFTER INSERT ON completions
    REFERENCING NEW TABLE AS fresh
    FOR EACH STATEMENT EXECUTE FUNCTION laurels_league_join();
CREATE TRIGGER league_join_on_restore AFTER UPDATE ON completions
    REFERENCING NEW TABLE AS fresh
    FOR EACH STATEMENT EXECUTE FUNCTION laurels_league_join();

ALTER TABLE notifications DROP CONSTRAINT notifications_kind_check;
ALTER TABLE notifications ADD CONSTRAINT notifications_kind_check
    CHECK (kind IN ('overtaken', 'top10', 'season_final', 'league_zone', 'league_result'));
