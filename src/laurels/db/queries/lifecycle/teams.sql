-- Team kinds and who counts in their teams (lifecycle/teams.py).

-- name: every_team_kind
-- Every team kind, by name.
SELECT team, title, aggregate, top, members_version, created_at FROM team_kinds ORDER BY team;

-- name: lock_team_kind
-- locks: team_kind
-- A team kind's row, locked by whoever changes who counts in its teams (a
-- membership, a group's kind, a suspension: after the learners' and the
-- group's rows) and by a fill of its board in Redis, which must not miss
-- one: they take their turns (docs/concurrency.md).
SELECT team, title, aggregate, top, members_version, created_at FROM team_kinds
WHERE team = %(team)s FOR UPDATE;

-- name: lock_team_kinds
-- locks: team_kind
-- Several team kinds' rows, in name order (a group moved from one kind to
-- another locks both).
SELECT team, title, aggregate, top, members_version, created_at FROM team_kinds
WHERE team = ANY(%(teams)s) ORDER BY team FOR UPDATE;

-- name: insert_team_kind
-- locks: team_kind
-- A new team kind, or another title for one (its aggregate is checked
-- first); its count of membership changes starts from the sequence, so
-- that a kind defined again never meets a board of the one deleted.
INSERT INTO team_kinds AS k (team, title, aggregate, top, members_version)
VALUES (%(team)s, %(title)s, %(aggregate)s, %(top)s, nextval('team_members_version'))
ON CONFLICT (team) DO UPDATE SET title = EXCLUDED.title
RETURNING team, title, aggregate, top, members_version, created_at, (xmax = 0) AS created;

-- name: lock_team_groups
-- locks: group
-- A team kind's groups, locked before the kind's row is deleted: the
-- deletion sets their `team` to NULL (the foreign key), and a membership
-- change takes a group's row before its kind's (lock order).
SELECT group_id FROM groups WHERE team = %(team)s ORDER BY group_id FOR UPDATE;

-- name: delete_team_kind
-- locks: team_kind
-- A team kind gone; its groups (locked already: lock_team_groups) are in
-- none (ON DELETE SET NULL).
DELETE FROM team_kinds WHERE team = %(team)s RETURNING team;

-- name: bump_team_members
-- Who counts in a kind's teams changed (the row is locked): its new count.
UPDATE team_kinds SET members_version = nextval('team_members_version')
WHERE team = %(team)s RETURNING members_version;

-- name: team_memberships
-- Everyone who counts in a kind's teams (a member of one of its groups,
-- neither suspended nor erased), with their groups of it comma-joined: what
-- fills its board in Redis, streamed by learner.
SELECT m.user_id, string_agg(m.group_id, ',' ORDER BY m.group_id) AS groups
FROM group_members m
JOIN groups g ON g.group_id = m.group_id
JOIN users u ON u.user_id = m.user_id
WHERE g.team = %(team)s AND u.suspended_at IS NULL AND u.erased_at IS NULL
GROUP BY m.user_id ORDER BY m.user_id;

-- name: team_groups_of
-- Some learners' groups of a kind, as the board must hold them now (none for
-- a suspended or erased learner): only those with any are returned.
SELECT m.user_id, string_agg(m.group_id, ',' ORDER BY m.group_id) AS groups
FROM group_members m
JOIN groups g ON g.group_id = m.group_id
JOIN users u ON u.user_id = m.user_id
WHERE g.team = %(team)s AND m.user_id = ANY(%(user_ids)s)
  AND u.suspended_at IS NULL AND u.erased_at IS NULL
GROUP BY m.user_id;

-- name: learner_team_kinds
-- The team kinds of the groups a learner is in.
SELECT DISTINCT g.team FROM group_members m JOIN groups g ON g.group_id = m.group_id
WHERE m.user_id = %(user_id)s AND g.team IS NOT NULL ORDER BY g.team;
