-- Noticing Redis going back in time (projection/epoch.py).

-- name: lock_redis_epoch
-- locks: epoch
-- One process repairs after Redis changed; the others skip while it holds this.
SELECT fingerprint FROM redis_epochs WHERE key_prefix = %(key_prefix)s
FOR UPDATE SKIP LOCKED;

-- name: ensure_redis_epoch
-- The run id's record of a key prefix, made empty if missing.
INSERT INTO redis_epochs (key_prefix, fingerprint) VALUES (%(key_prefix)s, '')
ON CONFLICT (key_prefix) DO NOTHING;

-- name: redis_epoch
-- The Redis run ids the boards were last repaired for (none before the
-- first check): what a process trusts (board/trust.py).
SELECT fingerprint FROM redis_epochs WHERE key_prefix = %(key_prefix)s;

-- name: set_redis_epoch
-- Records the Redis run id the boards were last repaired for.
UPDATE redis_epochs SET fingerprint = %(fingerprint)s, repaired_at = now()
WHERE key_prefix = %(key_prefix)s;

-- name: all_seasons
-- Every season PostgreSQL knows, and whether it is finalized: the boards a
-- repair looks at.
SELECT season, finalized_at IS NOT NULL AS finalized FROM seasons ORDER BY season;
