-- Groups and their members (reads/groups.py).

-- name: put_group
-- Create a group, or change the name and access given (NULL keeps them).
INSERT INTO groups AS g (group_id, name, access)
VALUES (%(group_id)s, coalesce(%(group_name)s, %(group_id)s), coalesce(%(access)s, 'members'))
ON CONFLICT (group_id) DO UPDATE
SET name = coalesce(%(group_name)s, g.name), access = coalesce(%(access)s, g.access)
RETURNING group_id, name, access;

-- name: get_group
-- A group and its member count.
SELECT g.group_id, g.name, g.access, g.team,
       (SELECT count(*) FROM group_members m WHERE m.group_id = g.group_id) AS members
FROM groups g WHERE g.group_id = %(group_id)s;

-- name: lock_group
-- locks: group
-- A group's row, locked for a membership change (after its learners' rows),
-- with its team kind (whose boards the change moves).
SELECT group_id, team FROM groups WHERE group_id = %(group_id)s FOR UPDATE;

-- name: set_group_team
-- A group's team kind (or none), and the one it had (its row locked by
-- put_group, in the same transaction).
UPDATE groups g SET team = %(team)s
FROM (SELECT team FROM groups WHERE group_id = %(group_id)s) AS was
WHERE g.group_id = %(group_id)s
RETURNING was.team AS was;

-- name: delete_group
-- Deletes a group (its memberships go with it: ON DELETE CASCADE), with its
-- team kind.
DELETE FROM groups WHERE group_id = %(group_id)s RETURNING group_id, team;

-- name: group_members_of
-- Every member of a group.
SELECT user_id FROM group_members WHERE group_id = %(group_id)s ORDER BY user_id;

-- name: add_members
-- Adds members to a group (adding one twice changes nothing).
INSERT INTO group_members (group_id, user_id)
SELECT %(group_id)s, u FROM unnest(%(user_ids)s::bigint[]) AS u
ON CONFLICT DO NOTHING;

-- name: remove_members
-- Removes members from a group.
DELETE FROM group_members WHERE group_id = %(group_id)s AND user_id = ANY(%(user_ids)s);

-- name: count_members
-- A group's member count (at most GROUP_MEMBERS_MAX).
SELECT count(*) AS members FROM group_members WHERE group_id = %(group_id)s;

-- name: group_member_ids
-- The group's members in one read: no row for an unknown group, one row with
-- a NULL user_id for a group without members.
SELECT g.name, m.user_id FROM groups g LEFT JOIN group_members m ON m.group_id = g.group_id
WHERE g.group_id = %(group_id)s;

-- name: user_groups
-- The groups a learner is in.
SELECT g.group_id, g.name, g.access
FROM group_members m JOIN groups g ON g.group_id = m.group_id
WHERE m.user_id = %(user_id)s ORDER BY g.group_id;

-- name: archive_of_users
-- The archived standings of some learners in a finalized season, with their
-- profile now (privacy applies as of the read).
SELECT st.user_id, st.score, st.last_completed_at, st.rank,
       coalesce(u.display_name, '') AS display_name,
       coalesce(u.visibility, 'public') AS visibility
FROM season_standings st LEFT JOIN users u ON u.user_id = st.user_id
WHERE st.season = %(season)s AND st.user_id = ANY(%(user_ids)s) AND u.erased_at IS NULL;

-- name: group_read_access
-- Who may read a group (api/group_routes.py), in one read whatever the
-- answer, so a caller who may not read it cannot tell it from no group by
-- the time taken either: no row for an unknown group, else its access and
-- whether the learner (NULL: no learner) is a member.
SELECT g.access, EXISTS (SELECT 1 FROM group_members m
                         WHERE m.group_id = g.group_id AND m.user_id = %(user_id)s) AS member
FROM groups g WHERE g.group_id = %(group_id)s;

-- name: delete_user_memberships
-- An erasure: the learner's group memberships (their groups' caches hear of
-- it).
DELETE FROM group_members WHERE user_id = %(user_id)s RETURNING group_id;
