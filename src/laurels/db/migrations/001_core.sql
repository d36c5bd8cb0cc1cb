-- Core schema: learners, completions (the source of truth) and their outbox.
CREATE TABLE users (
    user_id          bigint PRIMARY KEY CHECK (user_id > 0),
    display_name     text,
    visibility       text NOT NULL DEFAULT 'public'
                     CHECK (visibility IN ('public', 'anonymous', 'hidden')),
    -- Bumped by every profile change; the Redis projection keeps the highest.
    profile_version  bigint NOT NULL DEFAULT 0,
    erased_at        timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE completions (
    seq            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    completion_id  text NOT NULL UNIQUE,
    user_id        bigint NOT NULL,
    points         integer NOT NULL CHECK (points BETWEEN 1 AND 1000000),
    completed_at   timestamptz NOT NULL,
    received_at    timestamptz NOT NULL,
    season         text NOT NULL
);
CREATE INDEX completions_season_user ON completions (season, user_id);
CREATE INDEX completions_user ON completions (user_id);

-- One row per completion not yet known to be applied to Redis.
CREATE TABLE outbox (
    seq         bigint PRIMARY KEY REFERENCES completions (seq) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbox_created ON outbox (created_at);

CREATE TABLE rebuilds (
    rebuild_id   uuid PRIMARY KEY,
    season       text NOT NULL,
    tie_policy   text NOT NULL,
    status       text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
    events       bigint NOT NULL DEFAULT 0,
    error        text,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz
);
