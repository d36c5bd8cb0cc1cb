-- A deleted kind's boards leave Redis after the deletion's transaction; the
-- seasons whose keys Redis could not drop then (down, failing over) wait
-- here until the projector's loop, or a new definition of the kind, drops
-- them (board_kinds.py `drop_pending`). No learner is named here.
CREATE TABLE board_drops (
    season text PRIMARY KEY,
    deleted_at timestamptz NOT NULL DEFAULT now()
);
