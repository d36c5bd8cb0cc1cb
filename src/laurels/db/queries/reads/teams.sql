-- Team boards read (reads/teams.py).

-- name: teams_shown
-- The groups of a team board's page: their names and access, and whether
-- the caller (a learner; NULL for none) is a member (the members-only rule).
SELECT g.group_id, g.name, g.access,
       EXISTS (SELECT 1 FROM group_members m
               WHERE m.group_id = g.group_id AND m.user_id = %(user_id)s) AS member
FROM groups g WHERE g.group_id = ANY(%(group_ids)s);

-- name: learner_teams
-- The groups of a team kind a learner is in (neither suspended nor erased),
-- each with its kind.
SELECT g.team, g.group_id, g.name FROM group_members m
JOIN groups g ON g.group_id = m.group_id
JOIN users u ON u.user_id = m.user_id
WHERE m.user_id = %(user_id)s AND g.team IS NOT NULL
  AND u.suspended_at IS NULL AND u.erased_at IS NULL
ORDER BY g.team, g.group_id;

-- name: team_standings_archived
-- A kind's teams on a finalized season, from its archive and the
-- memberships now (a member carries their season score in or out, as on a
-- group's board): each team's members, their summed score, and the sum of
-- its `top` best (ties broken by id, which the sum does not see).
WITH members AS (
    SELECT m.group_id, coalesce(st.score, 0) AS score,
           row_number() OVER (PARTITION BY m.group_id
                              ORDER BY coalesce(st.score, 0) DESC, m.user_id) AS r
    FROM group_members m
    JOIN groups g ON g.group_id = m.group_id
    JOIN users u ON u.user_id = m.user_id
    LEFT JOIN season_standings st ON st.season = %(season)s AND st.user_id = m.user_id
    WHERE g.team = %(team)s AND u.suspended_at IS NULL AND u.erased_at IS NULL)
SELECT group_id, count(*) AS members, sum(score)::bigint AS total,
       coalesce(sum(score) FILTER (WHERE r <= %(top)s), 0)::bigint AS best
FROM members GROUP BY group_id;

-- name: team_archived_score
-- A learner's archived score on a finalized season.
SELECT score FROM season_standings WHERE season = %(season)s AND user_id = %(user_id)s;

-- name: archived_best_of
-- Of some groups, those in whose `top` best the learner's archived score
-- counts (as team_standings_archived ranks their members).
WITH members AS (
    SELECT m.group_id, m.user_id,
           row_number() OVER (PARTITION BY m.group_id
                              ORDER BY coalesce(st.score, 0) DESC, m.user_id) AS r
    FROM group_members m
    JOIN users u ON u.user_id = m.user_id
    LEFT JOIN season_standings st ON st.season = %(season)s AND st.user_id = m.user_id
    WHERE m.group_id = ANY(%(group_ids)s) AND u.suspended_at IS NULL AND u.erased_at IS NULL)
SELECT group_id FROM members WHERE user_id = %(user_id)s AND r <= %(top)s;
