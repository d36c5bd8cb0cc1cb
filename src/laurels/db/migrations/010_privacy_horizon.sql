-- The read path's privacy filter (privacy.py) follows learners' rows by the
-- transaction that last changed them, not by a clock: a change is read
-- again until every transaction that may have made it has ended, however
-- long after its start it committed (an `updated_at` overlap of 30 s missed
-- a change that committed later than that).
ALTER TABLE users ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX users_change_xid ON users (change_xid);
