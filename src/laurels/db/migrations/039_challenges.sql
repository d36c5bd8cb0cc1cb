-- Challenges (issue 67; CONTRACT.md, "Challenges: boards with a start and
-- an end"): a board over a window of time, which learners may have to join,
-- decided once with rewards by rank. Its standings are read from the
-- completions while it runs (challenges/standings.py) and frozen in
-- challenge_results when it is decided (challenges/decision.py).

CREATE TABLE challenges (
    challenge_id  text PRIMARY KEY CHECK (challenge_id ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    title         text NOT NULL,
    board         text NOT NULL DEFAULT 'global',
    metric        text NOT NULL DEFAULT 'points' CHECK (metric IN ('points', 'completions', 'best')),
    starts_at     timestamptz NOT NULL,
    ends_at       timestamptz NOT NULL,
    join_rule     text NOT NULL DEFAULT 'open' CHECK (join_rule IN ('open', 'required')),
    max_size      integer CHECK (max_size BETWEEN 1 AND 1000000),
    joined        integer NOT NULL DEFAULT 0,
    rewards       jsonb NOT NULL DEFAULT '[]',
    notify        boolean NOT NULL DEFAULT false,
    grace_seconds integer NOT NULL DEFAULT 0 CHECK (grace_seconds >= 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    decided_at    timestamptz,
    participants  integer,  -- once decided: how many took part
    CHECK (starts_at < ends_at),
    CHECK (max_size IS NULL OR join_rule = 'required')
);
-- The decider's look: the challenges not decided yet, by their end.
CREATE INDEX challenges_undecided ON challenges (ends_at) WHERE decided_at IS NULL;

-- Who joined a challenge that needs a join, in the order the joins committed.
CREATE TABLE challenge_joins (
    challenge_id text NOT NULL REFERENCES challenges ON DELETE CASCADE,
    user_id      bigint NOT NULL CHECK (user_id > 0),
    joined_at    timestamptz NOT NULL,
    position     integer NOT NULL,  -- 1 for the first join to commit, and so on
    PRIMARY KEY (challenge_id, user_id)
);
CREATE INDEX challenge_joins_user ON challenge_joins (user_id);

-- A decided challenge's frozen standings: every ranked participant.
CREATE TABLE challenge_results (
    challenge_id      text NOT NULL REFERENCES challenges ON DELETE CASCADE,
    user_id           bigint NOT NULL,
    rank              integer NOT NULL,
    score             bigint NOT NULL,
    last_completed_at timestamptz NOT NULL,
    reward            text,
    PRIMARY KEY (challenge_id, user_id)
);
CREATE INDEX challenge_results_rank ON challenge_results (challenge_id, rank, user_id);
CREATE INDEX challenge_results_user ON challenge_results (user_id);

-- While a challenge that notifies runs: the top 100 as last looked at (who
-- passed whom is told by comparing the next look with it).
CREATE TABLE challenge_watch (
    challenge_id text NOT NULL REFERENCES challenges ON DELETE CASCADE,
    user_id      bigint NOT NULL,
    rank         integer NOT NULL,
    PRIMARY KEY (challenge_id, user_id)
);

ALTER TABLE notifications DROP CONSTRAINT notifications_kind_check;
ALTER TABLE notifications ADD CONSTRAINT notifications_kind_check
    CHECK (kind IN ('overtaken', 'top10', 'season_final', 'league_zone', 'league_result',
                    'challenge_result'));

ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_type_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_type_check
    CHECK (type IN ('notification.created', 'season.finalized', 'completion.voided',
                    'completion.restored', 'user.erased', 'challenge.decided'));

ALTER TABLE audit DROP CONSTRAINT audit_action_check;
ALTER TABLE audit ADD CONSTRAINT audit_action_check CHECK (action IN (
    'void', 'restore', 'suspend', 'unsuspend', 'erase', 'rebuild', 'group_delete',
    'kind_define', 'kind_delete', 'challenge_define', 'challenge_delete'));

-- A challenge's standings now, from the completions that count on it
-- (CONTRACT.md, "What counts"): on its board (every completion for
-- `global`, else those tagged with it), not voided, inside
-- [starts_at, ends_at), and with a required join only from the learner's
-- joined_at. Each learner's score by the metric, their tie time (the latest
-- counted completion; on `best` the earliest giving the highest), and
-- whether a public board shows them (`shown`: not hidden nor suspended;
-- erased learners are left out); `rank` ranks the shown ones by `p_policy`, and `pos` is their
-- place in the board's order (score, then the tie time under `first`, then
-- user_id); both null for the others.
CREATE FUNCTION laurels_challenge_standings_v1(p_challenge text, p_policy text)
RETURNS TABLE (user_id bigint, score bigint, last_at timestamptz, visibility text,
               display_name text, shown boolean, rank bigint, pos bigint)
LANGUAGE plpgsql STABLE SET work_mem = '64MB' AS $$
DECLARE
    ch challenges;
BEGIN
    SELECT * INTO ch FROM challenges c WHERE c.challenge_id = p_challenge;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- Planned at each call with the challenge's own values (EXECUTE ...
    -- USING): the metric's aggregate alone, the join's filter only with a
    -- join, and estimates of its own window.
    RETURN QUERY EXECUTE format($q$
        WITH counted AS (
            SELECT c.user_id, c.points, c.completed_at
            FROM completions c
            WHERE c.completed_at >= $1 AND c.completed_at < $2 AND c.voided_at IS NULL
              %s %s),
        scores AS (
            SELECT k.user_id, %s AS score, %s AS last_at
            FROM counted k GROUP BY k.user_id),
        seen AS (
            SELECT s.user_id, s.score, s.last_at,
                   coalesce(u.visibility, 'public') AS visibility, u.display_name,
                   (u.user_id IS NULL OR (u.visibility <> 'hidden'
                                          AND u.suspended_at IS NULL)) AS shown
            FROM scores s LEFT JOIN users u ON u.user_id = s.user_id
            WHERE u.erased_at IS NULL)
        SELECT v.user_id, v.score, v.last_at, v.visibility, v.display_name, v.shown,
               CASE WHEN NOT v.shown THEN NULL
                    WHEN $4 = 'first'
                    THEN row_number() OVER (PARTITION BY v.shown
                                            ORDER BY v.score DESC, v.last_at, v.user_id)
                    ELSE rank() OVER (PARTITION BY v.shown ORDER BY v.score DESC) END,
               CASE WHEN v.shown
                    THEN row_number() OVER (PARTITION BY v.shown ORDER BY v.score DESC,
                                            CASE WHEN $4 = 'first' THEN v.last_at END,
                                            v.user_id) END
        FROM seen v$q$,
        CASE WHEN ch.board = 'global' THEN '' ELSE 'AND c.tags @> ARRAY[$3]' END,
        CASE WHEN ch.join_rule = 'open' THEN '' ELSE
            'AND EXISTS (SELECT 1 FROM challenge_joins j WHERE j.challenge_id = $5
                         AND j.user_id = c.user_id AND c.completed_at >= j.joined_at)' END,
        CASE ch.metric WHEN 'best' THEN 'max(k.points)::bigint'
                       WHEN 'completions' THEN 'count(*)::bigint'
                       ELSE 'sum(k.points)::bigint' END,
        CASE ch.metric WHEN 'best' THEN
            '(array_agg(k.completed_at ORDER BY k.points DESC, k.completed_at))[1]'
                       ELSE 'max(k.completed_at)' END)
    USING ch.starts_at, ch.ends_at, ch.board, p_policy, ch.challenge_id;
END
$$;
