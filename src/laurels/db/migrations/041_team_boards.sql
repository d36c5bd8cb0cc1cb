-- Team boards (CONTRACT.md, "Team boards"; lifecycle/teams.py): groups of one
-- team kind ranked against each other by their members' scores.

-- A team kind: its title and aggregate (`sum`, `mean`, or `top` N).
-- `members_version` counts the changes of who counts in its teams (a
-- membership, a group's kind, a suspension): every such change takes this
-- row FOR UPDATE, bumps it and moves Redis before it commits, so a team
-- board in Redis that applied another count than PostgreSQL's is refilled.
CREATE TABLE team_kinds (
    team            text PRIMARY KEY CHECK (team ~ '^[a-z][a-z0-9_-]{0,31}$'),
    title           text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 100),
    aggregate       text NOT NULL CHECK (aggregate IN ('sum', 'mean', 'top')),
    top             integer CHECK (top BETWEEN 1 AND 100),
    members_version bigint NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK ((aggregate = 'top') = (top IS NOT NULL))
);

-- A group is in at most one team kind (its teams' boards), or none.
ALTER TABLE groups ADD COLUMN team text REFERENCES team_kinds (team) ON DELETE SET NULL;
CREATE INDEX groups_team ON groups (team) WHERE team IS NOT NULL;

-- Counts of membership changes, one sequence for every kind (a kind defined
-- again never takes up a count its deleted namesake's boards hold).
CREATE SEQUENCE team_members_version;

-- A team kind's definition and deletion are audited.
ALTER TABLE audit DROP CONSTRAINT audit_action_check;
ALTER TABLE audit ADD CONSTRAINT audit_action_check CHECK (action IN (
    'void', 'restore', 'suspend', 'unsuspend', 'erase', 'rebuild', 'group_delete',
    'kind_define', 'kind_delete', 'challenge_define', 'challenge_delete', 'team_define',
    'team_delete'));
