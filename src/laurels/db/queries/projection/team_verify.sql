-- Team boards checked against PostgreSQL (projection/team_verify.py).

-- name: team_standings_counted
-- The same from the season's completions that count (what a team board
-- rebuilt from PostgreSQL holds: `laurels verify`).
WITH scores AS (
    SELECT c.user_id, METRIC(SCORE(c)) AS score FROM completions c
    WHERE SEASON_FILTER(c) AND c.voided_at IS NULL GROUP BY c.user_id),
members AS (
    SELECT m.group_id, coalesce(s.score, 0) AS score,
           row_number() OVER (PARTITION BY m.group_id
                              ORDER BY coalesce(s.score, 0) DESC, m.user_id) AS r
    FROM group_members m
    JOIN groups g ON g.group_id = m.group_id
    JOIN users u ON u.user_id = m.user_id
    LEFT JOIN scores s ON s.user_id = m.user_id
    WHERE g.team = %(team)s AND u.suspended_at IS NULL AND u.erased_at IS NULL)
SELECT group_id, count(*) AS members, sum(score)::bigint AS total,
       coalesce(sum(score) FILTER (WHERE r <= %(top)s), 0)::bigint AS best
FROM members GROUP BY group_id;
