-- Seasons that have completions, their finalization, and archived standings;
-- erasure jobs; durable personal notifications.
CREATE TABLE seasons (
    season        text PRIMARY KEY,
    finalized_at  timestamptz,
    tie_policy    text
);
INSERT INTO seasons (season) SELECT DISTINCT season FROM completions ON CONFLICT DO NOTHING;

-- Final standings of a finalized season. `rank` and `pos` (0-based place in
-- the public order) are NULL for hidden learners; they are recomputed when a
-- learner's visibility changes or a learner is erased, so ranks close up.
CREATE TABLE season_standings (
    season             text NOT NULL REFERENCES seasons (season),
    user_id            bigint NOT NULL,
    score              bigint NOT NULL,
    last_completed_at  timestamptz NOT NULL,
    rank               integer,
    pos                integer,
    PRIMARY KEY (season, user_id)
);
CREATE INDEX season_standings_pos ON season_standings (season, pos) WHERE pos IS NOT NULL;
CREATE INDEX season_standings_user ON season_standings (user_id);

-- An erasure whose Redis side is not yet done (restartable after a crash).
CREATE TABLE erasures (
    user_id     bigint PRIMARY KEY,
    seasons     text[] NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE notifications (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id     bigint NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('overtaken', 'top10', 'season_final')),
    season      text NOT NULL,
    data        jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    read        boolean NOT NULL DEFAULT false,
    -- idempotency: one per learner and source event (re-applying never duplicates)
    dedup_key   text NOT NULL,
    UNIQUE (user_id, dedup_key)
);
CREATE INDEX notifications_user ON notifications (user_id, id DESC);
-- "at most one unread overtaken per learner per season": it is updated instead
CREATE UNIQUE INDEX notifications_one_unread_overtaken ON notifications (user_id, season)
    WHERE kind = 'overtaken' AND NOT read;
