-- Learners' profiles and suspensions (learners/profiles.py).

-- name: upsert_user
-- locks: users
-- While a learner is suspended their own choice of visibility is kept aside
-- (own_visibility) and they stay hidden: the platform cannot undo a suspension.
INSERT INTO users AS u (user_id, display_name, visibility, profile_version)
VALUES (%(user_id)s, %(display_name)s, coalesce(%(visibility)s, 'public'), 1)
ON CONFLICT (user_id) DO UPDATE SET
    display_name = coalesce(%(display_name)s, u.display_name),
    visibility = CASE WHEN u.suspended_at IS NULL THEN coalesce(%(visibility)s, u.visibility)
                      ELSE 'hidden' END,
    own_visibility = CASE WHEN u.suspended_at IS NULL THEN NULL
                          ELSE coalesce(%(visibility)s, u.own_visibility) END,
    profile_version = u.profile_version + 1,
    updated_at = now(), change_xid = pg_current_xact_id()
WHERE u.erased_at IS NULL
RETURNING user_id, display_name, visibility, profile_version, erased_at IS NOT NULL AS erased,
          coalesce(own_visibility, visibility) AS own_visibility;

-- name: suspend_user
-- locks: users
-- Suspend (hidden whatever they chose, their choice kept aside) or unsuspend
-- (their choice back); a new profile version projects it on every board.
UPDATE users AS u SET
    suspended_at = CASE WHEN %(suspended)s THEN coalesce(u.suspended_at, now()) END,
    own_visibility = CASE WHEN %(suspended)s THEN coalesce(u.own_visibility, u.visibility) END,
    visibility = CASE WHEN %(suspended)s THEN 'hidden'
                      ELSE coalesce(u.own_visibility, u.visibility) END,
    profile_version = u.profile_version + 1,
    updated_at = now(), change_xid = pg_current_xact_id()
WHERE u.user_id = %(user_id)s AND u.erased_at IS NULL
RETURNING user_id, display_name, visibility, profile_version, suspended_at IS NOT NULL AS suspended;
