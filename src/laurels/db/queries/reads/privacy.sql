-- The read path's memory of private learners (reads/privacy.py).

-- name: private_learners
-- Learners whose row a transaction changed at or after a horizon (every one
-- from the start): the privacy filter of the read path keeps the ones that
-- are not public. `horizon` is the oldest transaction still running now:
-- the next refresh starts from it, so a change that commits after this
-- read, however long after it began, is read then.
-- The first load reads only the learners who are not public; later loads
-- also those whose profile was ever set (one may have become public again).
-- Learners an ingest created (public, profile version 0) never qualify: a
-- burst of new learners costs the refresh nothing.
SELECT u.user_id, u.visibility, u.erased_at IS NOT NULL AS erased, h.horizon::text AS horizon
FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS horizon) h
LEFT JOIN users u ON u.change_xid >= %(since)s::xid8
  AND (u.visibility <> 'public' OR u.erased_at IS NOT NULL
       OR (NOT %(only_private)s AND u.profile_version > 0));
