-- The seasons of boards of kinds where an erasure left a tombstone in Redis
-- although they have no `seasons` row (never built: a week nobody read, a
-- kind's board defined after it). A kind's deletion drops their keys with
-- its built boards' (board_drops, board_kinds.py `delete`), so none stays
-- until its expiry. No learner is named here.
CREATE TABLE board_tombstones (
    season text PRIMARY KEY
);
