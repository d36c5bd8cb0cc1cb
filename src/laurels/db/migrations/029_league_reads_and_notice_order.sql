-- Leagues a learner can read, and notifications in the order they changed
-- (issue 43; CONTRACT.md, Leagues and Notifications).
--
-- A decided week's cohort board is the decision's: each member's score as
-- decided is kept beside their rank (null when they had none). Weeks
-- decided before this version get the score of their archived standing,
-- else of the completions that count now (the closest record there is).
ALTER TABLE league_results ADD COLUMN score bigint;
UPDATE league_results r SET score = s.score
FROM season_standings s
WHERE r.rank IS NOT NULL AND s.season = r.season AND s.user_id = r.user_id;
UPDATE league_results r SET score = c.score
FROM (SELECT c.season, c.user_id, sum(c.points) AS score FROM completions c
      JOIN league_results l ON l.season = c.season AND l.user_id = c.user_id
      WHERE l.rank IS NOT NULL AND l.score IS NULL AND c.voided_at IS NULL
      GROUP BY 1, 2) c
WHERE r.rank IS NOT NULL AND r.score IS NULL AND c.season = r.season
  AND c.user_id = r.user_id;

-- A notification refreshed with a newer state (the one unread `overtaken`
-- or `league_zone`) keeps its `created_at` and moves to the top of the
-- learner's list by `updated_at`.
ALTER TABLE notifications ADD COLUMN updated_at timestamptz;
UPDATE notifications SET updated_at = created_at;
ALTER TABLE notifications ALTER COLUMN updated_at SET DEFAULT now(),
                          ALTER COLUMN updated_at SET NOT NULL;
CREATE INDEX notifications_latest ON notifications (user_id, updated_at DESC, id DESC);
DROP INDEX notifications_user;
