-- Groups (a class, a cohort, a course, a team) and their members: kept by
-- the platform, the source of truth for group and friends boards, which are
-- computed at read time from the season's board (docs/groups.md).
CREATE TABLE groups (
    group_id    text PRIMARY KEY CHECK (group_id ~ '^[A-Za-z0-9._:-]{1,64}$'),
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
    access      text NOT NULL DEFAULT 'members' CHECK (access IN ('members', 'public')),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE group_members (
    group_id  text NOT NULL REFERENCES groups (group_id) ON DELETE CASCADE,
    user_id   bigint NOT NULL CHECK (user_id > 0),
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_user ON group_members (user_id);
