-- laurels' database as the migrations leave it: generated from PostgreSQL's
-- catalogue by `python -m laurels.db.schema`, checked by
-- tests/integration/test_schema.py. Read it to know what is; never run it:
-- migrations/NNN_*.sql are what change a database.

CREATE SEQUENCE audit_id_seq AS bigint OWNED BY audit.id;

CREATE SEQUENCE board_kinds_generation AS bigint;

CREATE SEQUENCE completion_seq AS bigint OWNED BY completions.seq;

CREATE SEQUENCE league_joins_join_seq_seq AS bigint OWNED BY league_joins.join_seq;

CREATE SEQUENCE league_touches_id_seq AS bigint OWNED BY league_touches.id;

CREATE SEQUENCE notifications_id_seq AS bigint OWNED BY notifications.id;

CREATE SEQUENCE team_members_version AS bigint;

-- audit
CREATE TABLE audit (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    action text NOT NULL,
    target text NOT NULL,
    reason text,
    details jsonb,
    CONSTRAINT audit_action_check CHECK ((action = ANY (ARRAY['void'::text, 'restore'::text, 'suspend'::text, 'unsuspend'::text, 'erase'::text, 'rebuild'::text, 'group_delete'::text, 'kind_define'::text, 'kind_delete'::text, 'challenge_define'::text, 'challenge_delete'::text, 'team_define'::text, 'team_delete'::text]))),
    CONSTRAINT audit_pkey PRIMARY KEY (id)
);
CREATE TRIGGER audit_append_only BEFORE DELETE OR UPDATE ON public.audit FOR EACH ROW EXECUTE FUNCTION laurels_audit_is_append_only_v1();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON public.audit FOR EACH STATEMENT EXECUTE FUNCTION laurels_audit_is_append_only_v1();

-- board_drops
CREATE TABLE board_drops (
    season text NOT NULL,
    deleted_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT board_drops_pkey PRIMARY KEY (season)
);

-- board_kinds
CREATE TABLE board_kinds (
    kind text NOT NULL,
    title text NOT NULL,
    metric text NOT NULL,
    periods text[] NOT NULL,
    time_zone text NOT NULL,
    notify boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    generation bigint DEFAULT nextval('board_kinds_generation'::regclass) NOT NULL,
    CONSTRAINT board_kinds_kind_check CHECK ((kind ~ '^[a-z][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT board_kinds_metric_check CHECK ((metric = ANY (ARRAY['points'::text, 'completions'::text, 'best'::text]))),
    CONSTRAINT board_kinds_periods_check CHECK (((periods[1] = 'week'::text) AND (periods <@ ARRAY['week'::text, 'day'::text, 'month'::text, 'all'::text, '7d'::text, '30d'::text]))),
    CONSTRAINT board_kinds_pkey PRIMARY KEY (kind),
    CONSTRAINT board_kinds_title_check CHECK (((char_length(title) >= 1) AND (char_length(title) <= 100)))
);

-- board_tombstones
CREATE TABLE board_tombstones (
    season text NOT NULL,
    CONSTRAINT board_tombstones_pkey PRIMARY KEY (season)
);

-- challenge_joins
CREATE TABLE challenge_joins (
    challenge_id text NOT NULL,
    user_id bigint NOT NULL,
    joined_at timestamp with time zone NOT NULL,
    position integer NOT NULL,
    CONSTRAINT challenge_joins_challenge_id_fkey FOREIGN KEY (challenge_id) REFERENCES challenges(challenge_id) ON DELETE CASCADE,
    CONSTRAINT challenge_joins_pkey PRIMARY KEY (challenge_id, user_id),
    CONSTRAINT challenge_joins_user_id_check CHECK ((user_id > 0))
);
CREATE INDEX challenge_joins_user ON public.challenge_joins USING btree (user_id);

-- challenge_results
CREATE TABLE challenge_results (
    challenge_id text NOT NULL,
    user_id bigint NOT NULL,
    rank integer NOT NULL,
    score bigint NOT NULL,
    last_completed_at timestamp with time zone NOT NULL,
    reward text,
    CONSTRAINT challenge_results_challenge_id_fkey FOREIGN KEY (challenge_id) REFERENCES challenges(challenge_id) ON DELETE CASCADE,
    CONSTRAINT challenge_results_pkey PRIMARY KEY (challenge_id, user_id)
);
CREATE INDEX challenge_results_rank ON public.challenge_results USING btree (challenge_id, rank, user_id);
CREATE INDEX challenge_results_user ON public.challenge_results USING btree (user_id);

-- challenge_watch
CREATE TABLE challenge_watch (
    challenge_id text NOT NULL,
    user_id bigint NOT NULL,
    rank integer NOT NULL,
    CONSTRAINT challenge_watch_challenge_id_fkey FOREIGN KEY (challenge_id) REFERENCES challenges(challenge_id) ON DELETE CASCADE,
    CONSTRAINT challenge_watch_pkey PRIMARY KEY (challenge_id, user_id)
);

-- challenges
CREATE TABLE challenges (
    challenge_id text NOT NULL,
    title text NOT NULL,
    board text DEFAULT 'global'::text NOT NULL,
    metric text DEFAULT 'points'::text NOT NULL,
    starts_at timestamp with time zone NOT NULL,
    ends_at timestamp with time zone NOT NULL,
    join_rule text DEFAULT 'open'::text NOT NULL,
    max_size integer,
    joined integer DEFAULT 0 NOT NULL,
    rewards jsonb DEFAULT '[]'::jsonb NOT NULL,
    notify boolean DEFAULT false NOT NULL,
    grace_seconds integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    decided_at timestamp with time zone,
    participants integer,
    CONSTRAINT challenges_challenge_id_check CHECK ((challenge_id ~ '^[a-z0-9][a-z0-9_-]{0,63}$'::text)),
    CONSTRAINT challenges_check CHECK ((starts_at < ends_at)),
    CONSTRAINT challenges_check1 CHECK (((max_size IS NULL) OR (join_rule = 'required'::text))),
    CONSTRAINT challenges_grace_seconds_check CHECK ((grace_seconds >= 0)),
    CONSTRAINT challenges_join_rule_check CHECK ((join_rule = ANY (ARRAY['open'::text, 'required'::text]))),
    CONSTRAINT challenges_max_size_check CHECK (((max_size >= 1) AND (max_size <= 1000000))),
    CONSTRAINT challenges_metric_check CHECK ((metric = ANY (ARRAY['points'::text, 'completions'::text, 'best'::text]))),
    CONSTRAINT challenges_pkey PRIMARY KEY (challenge_id)
);
CREATE INDEX challenges_undecided ON public.challenges USING btree (ends_at) WHERE (decided_at IS NULL);

-- completion_ids
CREATE TABLE completion_ids (
    completion_id text NOT NULL,
    seq bigint NOT NULL,
    completed_at timestamp with time zone NOT NULL,
    sealed boolean DEFAULT false NOT NULL
) PARTITION BY LIST (sealed);

-- completion_ids_filter
CREATE TABLE completion_ids_filter (
    block integer NOT NULL,
    words bigint[] NOT NULL,
    CONSTRAINT completion_ids_filter_pkey PRIMARY KEY (block)
);

-- completion_ids_filter_size
CREATE TABLE completion_ids_filter_size (
    only_row boolean DEFAULT true NOT NULL,
    blocks integer NOT NULL,
    ids bigint NOT NULL,
    CONSTRAINT completion_ids_filter_size_only_row_check CHECK (only_row),
    CONSTRAINT completion_ids_filter_size_pkey PRIMARY KEY (only_row)
);

CREATE TABLE completion_ids_open PARTITION OF completion_ids FOR VALUES IN (false);

CREATE TABLE completion_ids_sealed PARTITION OF completion_ids FOR VALUES IN (true);

-- completion_ids_sealing
CREATE TABLE completion_ids_sealing (
    completion_id text NOT NULL
);

-- completion_seal
CREATE TABLE completion_seal (
    only_row boolean DEFAULT true NOT NULL,
    staged_by xid8 NOT NULL,
    staged bigint NOT NULL,
    staged_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT completion_seal_only_row_check CHECK (only_row),
    CONSTRAINT completion_seal_pkey PRIMARY KEY (only_row)
);

-- completions
CREATE TABLE completions (
    seq bigint DEFAULT nextval('completion_seq'::regclass) NOT NULL,
    completion_id text NOT NULL,
    user_id bigint NOT NULL,
    points integer NOT NULL,
    completed_at timestamp with time zone NOT NULL,
    received_at timestamp with time zone NOT NULL,
    season text NOT NULL,
    voided_at timestamp with time zone,
    correction integer DEFAULT 0 NOT NULL,
    tags text[],
    CONSTRAINT completions_pkey1 PRIMARY KEY (seq, completed_at),
    CONSTRAINT completions_points_check1 CHECK (((points >= 1) AND (points <= 1000000)))
) PARTITION BY RANGE (completed_at);
CREATE INDEX completions_completed_at_p ON ONLY public.completions USING btree (completed_at);
CREATE INDEX completions_corrected ON ONLY public.completions USING btree (seq) WHERE (correction > 0);
CREATE INDEX completions_season_user_p ON ONLY public.completions USING btree (season, user_id);
CREATE INDEX completions_tags ON ONLY public.completions USING gin (tags) WITH (fastupdate='on', gin_pending_list_limit='64') WHERE (tags IS NOT NULL);
CREATE INDEX completions_user_p ON ONLY public.completions USING btree (user_id);
CREATE TRIGGER league_join AFTER INSERT ON public.completions REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION laurels_league_join_v1();
CREATE TRIGGER league_join_on_restore AFTER UPDATE ON public.completions REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION laurels_league_join_v1();

CREATE TABLE completions_default PARTITION OF completions DEFAULT;

-- deployment_processes
CREATE TABLE deployment_processes (
    id uuid NOT NULL,
    kind text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    heard_at timestamp with time zone DEFAULT now() NOT NULL,
    secrets jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT deployment_processes_pkey PRIMARY KEY (id)
);

-- deployment_settings
CREATE TABLE deployment_settings (
    name text NOT NULL,
    value jsonb NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT deployment_settings_pkey PRIMARY KEY (name)
);

-- erasures
CREATE TABLE erasures (
    user_id bigint NOT NULL,
    seasons text[] NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT erasures_pkey PRIMARY KEY (user_id)
);

-- group_members
CREATE TABLE group_members (
    group_id text NOT NULL,
    user_id bigint NOT NULL,
    CONSTRAINT group_members_group_id_fkey FOREIGN KEY (group_id) REFERENCES groups(group_id) ON DELETE CASCADE,
    CONSTRAINT group_members_pkey PRIMARY KEY (group_id, user_id),
    CONSTRAINT group_members_user_id_check CHECK ((user_id > 0))
);
CREATE INDEX group_members_user ON public.group_members USING btree (user_id);

-- groups
CREATE TABLE groups (
    group_id text NOT NULL,
    name text NOT NULL,
    access text DEFAULT 'members'::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    team text,
    CONSTRAINT groups_access_check CHECK ((access = ANY (ARRAY['members'::text, 'public'::text]))),
    CONSTRAINT groups_group_id_check CHECK ((group_id ~ '^[A-Za-z0-9._:-]{1,64}$'::text)),
    CONSTRAINT groups_name_check CHECK (((char_length(name) >= 1) AND (char_length(name) <= 64))),
    CONSTRAINT groups_pkey PRIMARY KEY (group_id),
    CONSTRAINT groups_team_fkey FOREIGN KEY (team) REFERENCES team_kinds(team) ON DELETE SET NULL
);
CREATE INDEX groups_team ON public.groups USING btree (team) WHERE (team IS NOT NULL);

-- league_fill
CREATE TABLE league_fill (
    season text NOT NULL,
    tier smallint NOT NULL,
    members integer NOT NULL,
    CONSTRAINT league_fill_pkey PRIMARY KEY (season, tier)
);

-- league_joins
CREATE TABLE league_joins (
    season text NOT NULL,
    user_id bigint NOT NULL,
    join_seq bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    joined_at timestamp with time zone DEFAULT now() NOT NULL,
    placed boolean DEFAULT false NOT NULL,
    CONSTRAINT league_joins_pkey PRIMARY KEY (season, user_id)
);
CREATE INDEX league_joins_unplaced ON public.league_joins USING btree (season, join_seq) WHERE (NOT placed);
CREATE INDEX league_joins_user ON public.league_joins USING btree (user_id);

-- league_members
CREATE TABLE league_members (
    season text NOT NULL,
    user_id bigint NOT NULL,
    tier smallint NOT NULL,
    cohort integer NOT NULL,
    slot integer NOT NULL,
    zone text,
    CONSTRAINT league_members_pkey PRIMARY KEY (season, user_id),
    CONSTRAINT league_members_zone_check CHECK ((zone = ANY (ARRAY['promotion'::text, 'demotion'::text])))
);
CREATE INDEX league_members_cohort ON public.league_members USING btree (season, tier, cohort);
CREATE INDEX league_members_user ON public.league_members USING btree (user_id, season);

-- league_results
CREATE TABLE league_results (
    season text NOT NULL,
    user_id bigint NOT NULL,
    tier smallint NOT NULL,
    cohort integer NOT NULL,
    rank integer,
    outcome text NOT NULL,
    new_tier smallint NOT NULL,
    score bigint,
    CONSTRAINT league_results_outcome_check CHECK ((outcome = ANY (ARRAY['promoted'::text, 'demoted'::text, 'stayed'::text]))),
    CONSTRAINT league_results_pkey PRIMARY KEY (season, user_id)
);
CREATE INDEX league_results_user ON public.league_results USING btree (user_id, season DESC);

-- league_settings
CREATE TABLE league_settings (
    id boolean DEFAULT true NOT NULL,
    enabled boolean NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT league_settings_id_check CHECK (id),
    CONSTRAINT league_settings_pkey PRIMARY KEY (id)
);

-- league_tiers
CREATE TABLE league_tiers (
    user_id bigint NOT NULL,
    tier smallint NOT NULL,
    season text NOT NULL,
    CONSTRAINT league_tiers_pkey PRIMARY KEY (user_id)
);

-- league_touches
CREATE TABLE league_touches (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    season text NOT NULL,
    tier smallint NOT NULL,
    cohort integer NOT NULL,
    seq bigint,
    CONSTRAINT league_touches_pkey PRIMARY KEY (id)
);
CREATE INDEX league_touches_season ON public.league_touches USING btree (season, id);

-- league_weeks
CREATE TABLE league_weeks (
    season text NOT NULL,
    decided_at timestamp with time zone,
    zone_seq bigint DEFAULT 0 NOT NULL,
    CONSTRAINT league_weeks_pkey PRIMARY KEY (season)
);

-- notifications
CREATE TABLE notifications (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    user_id bigint NOT NULL,
    kind text NOT NULL,
    season text NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    read boolean DEFAULT false NOT NULL,
    dedup_key text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT notifications_kind_check CHECK ((kind = ANY (ARRAY['overtaken'::text, 'top10'::text, 'season_final'::text, 'league_zone'::text, 'league_result'::text, 'challenge_result'::text]))),
    CONSTRAINT notifications_pkey PRIMARY KEY (id),
    CONSTRAINT notifications_user_id_dedup_key_key UNIQUE (user_id, dedup_key)
);
CREATE INDEX notifications_latest ON public.notifications USING btree (user_id, updated_at DESC, id DESC);
CREATE UNIQUE INDEX notifications_one_unread_overtaken ON public.notifications USING btree (user_id, season) WHERE ((kind = 'overtaken'::text) AND (NOT read));
CREATE TRIGGER notification_refreshed_webhook AFTER UPDATE OF data ON public.notifications FOR EACH ROW WHEN ((old.dedup_key IS DISTINCT FROM new.dedup_key)) EXECUTE FUNCTION laurels_notification_webhook_v1();
CREATE TRIGGER notification_webhook AFTER INSERT ON public.notifications REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION laurels_notifications_webhook_v1();

-- outbox
CREATE TABLE outbox (
    seq bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT outbox_pkey PRIMARY KEY (seq)
);
CREATE TRIGGER outbox_notify AFTER INSERT ON public.outbox FOR EACH STATEMENT EXECUTE FUNCTION laurels_outbox_notify_v1();

-- rebuilds
CREATE TABLE rebuilds (
    rebuild_id uuid NOT NULL,
    season text NOT NULL,
    tie_policy text NOT NULL,
    status text NOT NULL,
    events bigint DEFAULT 0 NOT NULL,
    error text,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT rebuilds_pkey PRIMARY KEY (rebuild_id),
    CONSTRAINT rebuilds_status_check CHECK ((status = ANY (ARRAY['running'::text, 'succeeded'::text, 'failed'::text])))
);

-- redis_epochs
CREATE TABLE redis_epochs (
    key_prefix text NOT NULL,
    fingerprint text NOT NULL,
    repaired_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT redis_epochs_pkey PRIMARY KEY (key_prefix)
);

-- retired_months
CREATE TABLE retired_months (
    month date NOT NULL,
    retired_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT retired_months_pkey PRIMARY KEY (month)
);

-- schema_migrations
CREATE TABLE schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT schema_migrations_pkey PRIMARY KEY (version)
);

-- season_standings
CREATE TABLE season_standings (
    season text NOT NULL,
    user_id bigint NOT NULL,
    score bigint NOT NULL,
    last_completed_at timestamp with time zone NOT NULL,
    rank integer,
    pos integer,
    CONSTRAINT season_standings_pkey PRIMARY KEY (season, user_id),
    CONSTRAINT season_standings_season_fkey FOREIGN KEY (season) REFERENCES seasons(season)
);
CREATE INDEX season_standings_pos ON public.season_standings USING btree (season, pos) WHERE (pos IS NOT NULL);
CREATE INDEX season_standings_user ON public.season_standings USING btree (user_id);

-- seasons
CREATE TABLE seasons (
    season text NOT NULL,
    finalized_at timestamp with time zone,
    tie_policy text,
    CONSTRAINT seasons_pkey PRIMARY KEY (season)
);

-- team_kinds
CREATE TABLE team_kinds (
    team text NOT NULL,
    title text NOT NULL,
    aggregate text NOT NULL,
    top integer,
    members_version bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT team_kinds_aggregate_check CHECK ((aggregate = ANY (ARRAY['sum'::text, 'mean'::text, 'top'::text]))),
    CONSTRAINT team_kinds_check CHECK (((aggregate = 'top'::text) = (top IS NOT NULL))),
    CONSTRAINT team_kinds_pkey PRIMARY KEY (team),
    CONSTRAINT team_kinds_team_check CHECK ((team ~ '^[a-z][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT team_kinds_title_check CHECK (((char_length(title) >= 1) AND (char_length(title) <= 100))),
    CONSTRAINT team_kinds_top_check CHECK (((top >= 1) AND (top <= 100)))
);

-- users
CREATE TABLE users (
    user_id bigint NOT NULL,
    display_name text,
    visibility text DEFAULT 'public'::text NOT NULL,
    profile_version bigint DEFAULT 0 NOT NULL,
    erased_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    suspended_at timestamp with time zone,
    own_visibility text,
    change_xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    CONSTRAINT users_own_visibility_check CHECK ((own_visibility = ANY (ARRAY['public'::text, 'anonymous'::text, 'hidden'::text]))),
    CONSTRAINT users_pkey PRIMARY KEY (user_id),
    CONSTRAINT users_user_id_check CHECK ((user_id > 0)),
    CONSTRAINT users_visibility_check CHECK ((visibility = ANY (ARRAY['public'::text, 'anonymous'::text, 'hidden'::text])))
);
CREATE INDEX users_change_xid ON public.users USING btree (change_xid);
CREATE INDEX users_erased_at ON public.users USING btree (erased_at) WHERE (erased_at IS NOT NULL);
CREATE INDEX users_updated ON public.users USING btree (updated_at);

-- webhook_deliveries
CREATE TABLE webhook_deliveries (
    id uuid NOT NULL,
    type text NOT NULL,
    user_id bigint,
    body jsonb NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    give_up_at timestamp with time zone DEFAULT (now() + '24:00:00'::interval) NOT NULL,
    delivered_at timestamp with time zone,
    notification_id bigint,
    kind text,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id),
    CONSTRAINT webhook_deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'delivered'::text, 'failed'::text]))),
    CONSTRAINT webhook_deliveries_type_check CHECK ((type = ANY (ARRAY['notification.created'::text, 'season.finalized'::text, 'completion.voided'::text, 'completion.restored'::text, 'user.erased'::text, 'challenge.decided'::text])))
);
CREATE INDEX webhook_deliveries_due ON public.webhook_deliveries USING btree (next_attempt_at, id) WHERE (status = 'pending'::text);
CREATE INDEX webhook_deliveries_learner ON public.webhook_deliveries USING btree (user_id, kind) WHERE (type = 'notification.created'::text);
CREATE INDEX webhook_deliveries_notification ON public.webhook_deliveries USING btree (notification_id) WHERE ((notification_id IS NOT NULL) AND (status = 'pending'::text));
CREATE INDEX webhook_deliveries_status ON public.webhook_deliveries USING btree (status, created_at);

-- webhook_settings
CREATE TABLE webhook_settings (
    id boolean DEFAULT true NOT NULL,
    enabled boolean NOT NULL,
    events text[],
    coalesce_seconds integer DEFAULT 60 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT webhook_settings_id_check CHECK (id),
    CONSTRAINT webhook_settings_pkey PRIMARY KEY (id)
);

CREATE FUNCTION laurels_audit_is_append_only_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only' USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE FUNCTION laurels_board_seasons(p_user_id bigint) RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT t.tag || '/' || k.metric || '/'
           || CASE WHEN p.period = 'all' THEN 'UTC' ELSE k.time_zone END || '/'
           || CASE p.period
                WHEN 'week' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'IYYY-"W"IW')
                WHEN 'day' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'YYYY-MM-DD')
                WHEN 'month' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'YYYY-MM')
                ELSE 'all' END
    FROM completions c
    CROSS JOIN LATERAL unnest(c.tags) AS t(tag)
    JOIN board_kinds k ON k.kind = split_part(t.tag, ':', 1)
    CROSS JOIN LATERAL unnest(k.periods) AS p(period)
    WHERE c.user_id = p_user_id AND c.tags IS NOT NULL
    UNION
    -- the all-time board of a kind whose weeks archived them, their
    -- completions retired since (retention)
    SELECT split_part(st.season, '/', 1) || '/' || split_part(st.season, '/', 2) || '/UTC/all'
    FROM season_standings st
    WHERE st.user_id = p_user_id AND st.season LIKE '%%/%%'
$$;

CREATE FUNCTION laurels_board_seasons_v1(p_user_id bigint) RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT t.tag || '/' || k.metric || '/'
           || CASE WHEN p.period = 'all' THEN 'UTC' ELSE k.time_zone END || '/'
           || CASE p.period
                WHEN 'week' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'IYYY-"W"IW')
                WHEN 'day' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'YYYY-MM-DD')
                WHEN 'month' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'YYYY-MM')
                ELSE 'all' END
    FROM completions c
    CROSS JOIN LATERAL unnest(c.tags) AS t(tag)
    JOIN board_kinds k ON k.kind = split_part(t.tag, ':', 1)
    CROSS JOIN LATERAL unnest(k.periods) AS p(period)
    WHERE c.user_id = p_user_id AND c.tags IS NOT NULL
    UNION
    -- the all-time board of a kind whose weeks archived them, their
    -- completions retired since (retention)
    SELECT split_part(st.season, '/', 1) || '/' || split_part(st.season, '/', 2) || '/UTC/all'
    FROM season_standings st
    WHERE st.user_id = p_user_id AND st.season LIKE '%%/%%'
$$;

CREATE FUNCTION laurels_board_seasons_v2(p_user_id bigint) RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT t.tag || '/' || k.metric || '/'
           || CASE WHEN p.period = 'all' THEN 'UTC' ELSE k.time_zone END || '/'
           || CASE p.period
                WHEN 'week' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'IYYY-"W"IW')
                WHEN 'day' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'YYYY-MM-DD')
                WHEN 'month' THEN to_char(c.completed_at AT TIME ZONE k.time_zone, 'YYYY-MM')
                WHEN '7d' THEN 'last-7d'
                WHEN '30d' THEN 'last-30d'
                ELSE 'all' END
    FROM completions c
    CROSS JOIN LATERAL unnest(c.tags) AS t(tag)
    JOIN board_kinds k ON k.kind = split_part(t.tag, ':', 1)
    CROSS JOIN LATERAL unnest(k.periods) AS p(period)
    WHERE c.user_id = p_user_id AND c.tags IS NOT NULL
    UNION
    -- the all-time board of a kind whose weeks archived them, their
    -- completions retired since (retention)
    SELECT split_part(st.season, '/', 1) || '/' || split_part(st.season, '/', 2) || '/UTC/all'
    FROM season_standings st
    WHERE st.user_id = p_user_id AND st.season LIKE '%%/%%'
$$;

CREATE FUNCTION laurels_build_id_filter() RETURNS integer
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_ids bigint;
    v_blocks integer;
BEGIN
    PERFORM 1 FROM completion_ids_filter_size FOR UPDATE;  -- one writer of the filter
    SELECT count(*) INTO v_ids FROM completion_ids_sealed;
    v_blocks := greatest(16, ceil(v_ids * 16.0 / 64000)::integer);
    DELETE FROM completion_ids_filter;
    INSERT INTO completion_ids_filter (block, words)
    SELECT b.block, array_agg(coalesce(m.mask, 0) ORDER BY w.word)
    FROM generate_series(0, v_blocks - 1) AS b(block)
    CROSS JOIN generate_series(0, 999) AS w(word)
    LEFT JOIN (
        SELECT y.block, y.word, bit_or(1::bigint << y.bit) AS mask FROM (
            SELECT laurels_id_block(s.h, v_blocks) AS block,
                   laurels_id_bit(s.h, k.i) / 64 AS word, laurels_id_bit(s.h, k.i) % 64 AS bit
            FROM (SELECT laurels_id_hash(completion_id) AS h FROM completion_ids_sealed) s,
                 generate_series(0, 3) AS k(i)) y
        GROUP BY 1, 2) m ON m.block = b.block AND m.word = w.word
    GROUP BY b.block;
    UPDATE completion_ids_filter_size SET blocks = v_blocks, ids = v_ids;
    RETURN v_blocks;
END
$$;

CREATE FUNCTION laurels_build_id_filter_v1() RETURNS integer
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_ids bigint;
    v_blocks integer;
BEGIN
    PERFORM 1 FROM completion_ids_filter_size FOR UPDATE;  -- one writer of the filter
    SELECT count(*) INTO v_ids FROM completion_ids_sealed;
    v_blocks := greatest(16, ceil(v_ids * 16.0 / 64000)::integer);
    DELETE FROM completion_ids_filter;
    INSERT INTO completion_ids_filter (block, words)
    SELECT b.block, array_agg(coalesce(m.mask, 0) ORDER BY w.word)
    FROM generate_series(0, v_blocks - 1) AS b(block)
    CROSS JOIN generate_series(0, 999) AS w(word)
    LEFT JOIN (
        SELECT y.block, y.word, bit_or(1::bigint << y.bit) AS mask FROM (
            SELECT laurels_id_block_v1(s.h, v_blocks) AS block,
                   laurels_id_bit_v1(s.h, k.i) / 64 AS word,
                   laurels_id_bit_v1(s.h, k.i) % 64 AS bit
            FROM (SELECT laurels_id_hash_v1(completion_id) AS h FROM completion_ids_sealed) s,
                 generate_series(0, 3) AS k(i)) y
        GROUP BY 1, 2) m ON m.block = b.block AND m.word = w.word
    GROUP BY b.block;
    UPDATE completion_ids_filter_size SET blocks = v_blocks, ids = v_ids;
    RETURN v_blocks;
END
$$;

CREATE FUNCTION laurels_challenge_standings_v1(p_challenge text, p_policy text) RETURNS TABLE(user_id bigint, score bigint, last_at timestamp with time zone, visibility text, display_name text, shown boolean, rank bigint, pos bigint)
LANGUAGE plpgsql STABLE SET work_mem = 64MB AS $$
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

CREATE FUNCTION laurels_completion_months() RETURNS TABLE(name text, month date)
LANGUAGE sql STABLE AS $$
    SELECT c.relname::text, to_date(substr(c.relname, 13), 'YYYY_MM')
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'completions'::regclass AND c.relname ~ '^completions_[0-9]{4}_[0-9]{2}$'
    ORDER BY 2
$$;

CREATE FUNCTION laurels_completion_months_v1() RETURNS TABLE(name text, month date)
LANGUAGE sql STABLE AS $$
    SELECT c.relname::text, to_date(substr(c.relname, 13), 'YYYY_MM')
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'completions'::regclass AND c.relname ~ '^completions_[0-9]{4}_[0-9]{2}$'
    ORDER BY 2
$$;

CREATE FUNCTION laurels_completions_partition(p_month date) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_name text := 'completions_' || to_char(p_month, 'YYYY_MM');
    v_from timestamptz := (p_month::timestamp AT TIME ZONE 'UTC');
    v_to timestamptz := ((p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC');
    v_wait text := current_setting('lock_timeout');  -- the caller's, given back at the end
    v_made text := v_name;
BEGIN
    PERFORM set_config('lock_timeout', '100ms', true);
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('laurels completions partitions'));
        IF to_regclass(v_name) IS NOT NULL THEN
            NULL;  -- made already
        ELSIF NOT EXISTS (SELECT 1 FROM completions_default
                          WHERE completed_at >= v_from AND completed_at < v_to) THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF completions FOR VALUES FROM (%L) TO (%L)',
                           v_name, v_from, v_to);
        ELSE
            -- No row of the month may reach the default partition while they move.
            LOCK TABLE completions_default IN SHARE ROW EXCLUSIVE MODE;
            EXECUTE format('CREATE TABLE %I (LIKE completions INCLUDING DEFAULTS '
                           'INCLUDING CONSTRAINTS)', v_name);
            EXECUTE format('WITH moved AS (DELETE FROM completions_default '
                           'WHERE completed_at >= %L AND completed_at < %L RETURNING *) '
                           'INSERT INTO %I SELECT * FROM moved', v_from, v_to, v_name);
            EXECUTE format('ALTER TABLE completions ATTACH PARTITION %I FOR VALUES FROM (%L) '
                           'TO (%L)', v_name, v_from, v_to);
        END IF;
    EXCEPTION
        WHEN lock_not_available THEN
            v_made := NULL;  -- busy: nothing made (the block's work is undone); try again later
        WHEN duplicate_table THEN
            NULL;  -- made by another meanwhile (a catalog cache that had not seen it yet)
    END;
    PERFORM set_config('lock_timeout', v_wait, true);
    RETURN v_made;
END
$$;

CREATE FUNCTION laurels_completions_partition_v1(p_month date) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_name text := 'completions_' || to_char(p_month, 'YYYY_MM');
    v_from timestamptz := (p_month::timestamp AT TIME ZONE 'UTC');
    v_to timestamptz := ((p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC');
    v_wait text := current_setting('lock_timeout');  -- the caller's, given back at the end
    v_made text := v_name;
BEGIN
    PERFORM set_config('lock_timeout', '100ms', true);
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('laurels completions partitions'));
        IF to_regclass(v_name) IS NOT NULL THEN
            NULL;  -- made already
        ELSIF NOT EXISTS (SELECT 1 FROM completions_default
                          WHERE completed_at >= v_from AND completed_at < v_to) THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF completions FOR VALUES FROM (%L) TO (%L)',
                           v_name, v_from, v_to);
        ELSE
            -- No row of the month may reach the default partition while they move.
            LOCK TABLE completions_default IN SHARE ROW EXCLUSIVE MODE;
            EXECUTE format('CREATE TABLE %I (LIKE completions INCLUDING DEFAULTS '
                           'INCLUDING CONSTRAINTS)', v_name);
            EXECUTE format('WITH moved AS (DELETE FROM completions_default '
                           'WHERE completed_at >= %L AND completed_at < %L RETURNING *) '
                           'INSERT INTO %I SELECT * FROM moved', v_from, v_to, v_name);
            EXECUTE format('ALTER TABLE completions ATTACH PARTITION %I FOR VALUES FROM (%L) '
                           'TO (%L)', v_name, v_from, v_to);
        END IF;
    EXCEPTION
        WHEN lock_not_available THEN
            v_made := NULL;  -- busy: nothing made (the block's work is undone); try again later
        WHEN duplicate_table THEN
            NULL;  -- made by another meanwhile (a catalog cache that had not seen it yet)
    END;
    PERFORM set_config('lock_timeout', v_wait, true);
    RETURN v_made;
END
$$;

CREATE FUNCTION laurels_enqueue_webhook(p_type text, p_user bigint, p_data jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid := gen_random_uuid();
BEGIN
    IF laurels_webhook_wanted(p_type, NULL) THEN
        INSERT INTO webhook_deliveries (id, type, user_id, body)
        VALUES (v_id, p_type, p_user, jsonb_build_object(
            'id', v_id, 'type', p_type, 'created_at', laurels_utc(now()), 'data', p_data));
    END IF;
END
$$;

CREATE FUNCTION laurels_enqueue_webhook_v1(p_type text, p_user bigint, p_data jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid := gen_random_uuid();
BEGIN
    IF laurels_webhook_wanted_v1(p_type, NULL) THEN
        INSERT INTO webhook_deliveries (id, type, user_id, body)
        VALUES (v_id, p_type, p_user, jsonb_build_object(
            'id', v_id, 'type', p_type, 'created_at', laurels_utc_v1(now()), 'data', p_data));
    END IF;
END
$$;

CREATE FUNCTION laurels_id_bit(p_hash bigint, p_which integer) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT (((p_hash & 65535) + p_which * (((p_hash >> 16) & 65535) | 1)) % 64000)::integer
$$;

CREATE FUNCTION laurels_id_bit_v1(p_hash bigint, p_which integer) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT (((p_hash & 65535) + p_which * (((p_hash >> 16) & 65535) | 1)) % 64000)::integer
$$;

CREATE FUNCTION laurels_id_block(p_hash bigint, p_blocks integer) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT ((p_hash >> 32) & 2147483647)::integer % p_blocks
$$;

CREATE FUNCTION laurels_id_block_v1(p_hash bigint, p_blocks integer) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT ((p_hash >> 32) & 2147483647)::integer % p_blocks
$$;

CREATE FUNCTION laurels_id_hash(p_id text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT hashtextextended(p_id, 0)
$$;

CREATE FUNCTION laurels_id_hash_v1(p_id text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT hashtextextended(p_id, 0)
$$;

CREATE FUNCTION laurels_id_in_block(p_words bigint[], p_hash bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT (p_words[laurels_id_bit(p_hash, 0) / 64 + 1] >> (laurels_id_bit(p_hash, 0) % 64))
           & (p_words[laurels_id_bit(p_hash, 1) / 64 + 1] >> (laurels_id_bit(p_hash, 1) % 64))
           & (p_words[laurels_id_bit(p_hash, 2) / 64 + 1] >> (laurels_id_bit(p_hash, 2) % 64))
           & (p_words[laurels_id_bit(p_hash, 3) / 64 + 1] >> (laurels_id_bit(p_hash, 3) % 64))
           & 1 = 1
$$;

CREATE FUNCTION laurels_id_in_block_v1(p_words bigint[], p_hash bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT (p_words[laurels_id_bit_v1(p_hash, 0) / 64 + 1]
                >> (laurels_id_bit_v1(p_hash, 0) % 64))
           & (p_words[laurels_id_bit_v1(p_hash, 1) / 64 + 1]
                >> (laurels_id_bit_v1(p_hash, 1) % 64))
           & (p_words[laurels_id_bit_v1(p_hash, 2) / 64 + 1]
                >> (laurels_id_bit_v1(p_hash, 2) % 64))
           & (p_words[laurels_id_bit_v1(p_hash, 3) / 64 + 1]
                >> (laurels_id_bit_v1(p_hash, 3) % 64))
           & 1 = 1
$$;

CREATE FUNCTION laurels_ingest(p_ids text[], p_users bigint[], p_points integer[], p_at timestamp with time zone[], p_received timestamp with time zone, p_seasons text[], p_closed boolean[], p_others text[], p_tags text[]) RETURNS TABLE(n bigint, status text, seq bigint, user_id bigint, points integer, completed_at timestamp with time zone, received_at timestamp with time zone, season text, profile_version bigint, visibility text, display_name text, tags text[])
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan SET jit = off AS $$
#variable_conflict use_column
DECLARE
    erased bigint[];
    finalized text[];
    names text[];
    pr_users bigint[]; pr_versions bigint[]; pr_vis text[]; pr_names text[];
    known_seqs bigint[]; known_ats timestamptz[];  -- per item: its id's row, if recorded
    ch_n bigint[];
BEGIN
    -- A call of a few items (a group of single posts) runs each statement's
    -- plan kept for the connection; a larger one plans each for its arrays
    -- (migration 016). Local to the call: the SET clause restores it.
    IF cardinality(p_ids) <= 64 THEN
        PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
    END IF;
    -- 1. learners, in id order: share-locked, their profiles read once
    INSERT INTO users (user_id) SELECT DISTINCT u FROM unnest(p_users) AS u ORDER BY 1
    ON CONFLICT DO NOTHING;
    SELECT coalesce(array_agg(x.user_id) FILTER (WHERE x.gone), '{}'),
           coalesce(array_agg(x.user_id), '{}'), coalesce(array_agg(x.profile_version), '{}'),
           coalesce(array_agg(x.visibility), '{}'), coalesce(array_agg(x.display_name), '{}')
      INTO erased, pr_users, pr_versions, pr_vis, pr_names FROM (
        SELECT u.user_id, u.erased_at IS NOT NULL AS gone, u.profile_version, u.visibility,
               coalesce(u.display_name, '') AS display_name FROM users u
        WHERE u.user_id = ANY(p_users) ORDER BY u.user_id FOR SHARE) x;
    -- 2. seasons of the items that may be recorded (every period's), in name order
    INSERT INTO seasons (season)
    SELECT DISTINCT x.s FROM (
        SELECT t.s, t.u, t.closed FROM unnest(p_seasons, p_users, p_closed) AS t(s, u, closed)
        UNION ALL
        SELECT o.s, t.u, t.closed FROM unnest(p_others, p_users, p_closed) AS t(os, u, closed),
             unnest(string_to_array(t.os, ',')) AS o(s)) x
    WHERE NOT x.u = ANY(erased) AND NOT x.closed ORDER BY 1
    ON CONFLICT DO NOTHING;
    -- (the names once, then by the primary key: an OR of the two arrays made
    -- a scan of every season, splitting p_others again for each row)
    names := ARRAY(SELECT DISTINCT x FROM unnest(p_seasons || string_to_array(
                       array_to_string(p_others, ','), ',')) AS x);
    SELECT coalesce(array_agg(x.season) FILTER (WHERE x.done), '{}') INTO finalized FROM (
        SELECT s.season, s.finalized_at IS NOT NULL AS done FROM seasons s
        WHERE s.season = ANY(names)
        ORDER BY s.season FOR SHARE) x;
    -- 3. the ids recorded already (both partitions of completion_ids), and per
    -- new id the first item that may be recorded (its place n), into arrays:
    -- the writing statement is then planned for the rows it really has. (It
    -- used to filter the arrays itself, and the planner, guessing 62 rows of
    -- 1,000, joined the answers in a nested loop, 1,000 x 1,000 comparisons,
    -- 120 ms a batch, once the months of partitions made the stored rows'
    -- lookup look costly.) A concurrent batch recording one of these ids
    -- after this read is met by the insert's ON CONFLICT: 'raced'.
    -- The sealed index is probed only for an id the filter does not rule out
    -- (filter, its size and the ids read in this one statement: one snapshot).
    SELECT array_agg(k.seq ORDER BY t.n), array_agg(k.completed_at ORDER BY t.n)
      INTO known_seqs, known_ats
      FROM (SELECT x.cid, x.n, fs.blocks = 0 OR f.words IS NULL
                               OR laurels_id_in_block(f.words, x.h) AS maybe
            FROM (SELECT u.cid, u.n, laurels_id_hash(u.cid) AS h
                  FROM unnest(p_ids) WITH ORDINALITY AS u(cid, n)) x
            CROSS JOIN completion_ids_filter_size fs
            LEFT JOIN LATERAL (  -- the id's block, probed (LIMIT: see the header)
                SELECT f.words FROM completion_ids_filter f
                WHERE f.block = laurels_id_block(x.h, greatest(fs.blocks, 1)) LIMIT 1) f
                   ON true) t
      LEFT JOIN LATERAL (
          SELECT o.seq, o.completed_at FROM completion_ids_open o WHERE o.completion_id = t.cid
          UNION ALL
          SELECT s.seq, s.completed_at FROM completion_ids_sealed s
          WHERE t.maybe AND s.completion_id = t.cid) k ON true;
    SELECT coalesce(array_agg(x.n), '{}') INTO ch_n
      FROM (SELECT DISTINCT ON (t.cid) t.cid, t.n
            FROM unnest(p_ids, p_users, p_seasons, p_closed, p_others)
                 WITH ORDINALITY AS t(cid, uid, sea, closed, others, n)
            WHERE NOT t.uid = ANY(erased) AND NOT t.closed
              AND NOT (t.sea = ANY(finalized) OR string_to_array(t.others, ',') && finalized)
              AND known_seqs[t.n] IS NULL
            ORDER BY t.cid, t.n) x;
    -- 4. insert what may be inserted; answer for every item
    RETURN QUERY
    WITH chosen AS (  -- each with its seq (a racing id's seq is skipped: a gap)
        SELECT p_ids[c.n] AS cid, p_users[c.n] AS uid, p_points[c.n] AS pts,
               p_at[c.n] AS at, p_seasons[c.n] AS sea,
               string_to_array(nullif(p_tags[c.n], ''), ',') AS tg,
               nextval('completion_seq') AS seq
        FROM unnest(ch_n) AS c(n)),
    claimed AS (  -- the ids this batch records (a racing one waits, then skips)
        INSERT INTO completion_ids_open AS k (completion_id, seq, completed_at)
        SELECT ch.cid, ch.seq, ch.at FROM chosen ch ORDER BY ch.cid
        ON CONFLICT (completion_id) DO NOTHING
        RETURNING k.seq),
    fresh AS (
        INSERT INTO completions AS c (seq, completion_id, user_id, points, completed_at,
                                      received_at, season, tags)
        SELECT ch.seq, ch.cid, ch.uid, ch.pts, ch.at, p_received, ch.sea, ch.tg
        FROM chosen ch WHERE ch.seq IN (SELECT cl.seq FROM claimed cl)
        ORDER BY ch.seq
        RETURNING c.completion_id, c.seq, c.user_id, c.points, c.completed_at, c.season,
                  c.tags),
    outboxed AS (  -- runs although nothing reads it (a data-modifying CTE always does)
        INSERT INTO outbox (seq) SELECT f.seq FROM fresh f),
    items AS (
        SELECT t.*, (t.uid = ANY(erased)) AS gone,
               (t.sea = ANY(finalized) OR string_to_array(t.others, ',') && finalized) AS done
        FROM unnest(p_ids, p_users, p_seasons, p_closed, p_others, known_seqs, known_ats)
             WITH ORDINALITY AS t(cid, uid, sea, closed, others, kseq, kat, n)),
    profiles AS (
        SELECT * FROM unnest(pr_users, pr_versions, pr_vis, pr_names) AS p(uid, v, vis, name))
    SELECT i.n,
           CASE WHEN i.gone THEN 'erased'
                WHEN r.recorded THEN 'recorded'
                WHEN s.seq IS NOT NULL OR f.seq IS NOT NULL THEN 'exists'
                WHEN i.closed THEN 'closed'
                WHEN i.done THEN 'finalized'
                ELSE 'raced' END,
           coalesce(s.seq, f.seq),
           -- what was stored, for an item that was not recorded now (ingest.py
           -- compares a replay with it); a recorded one's caller has it
           CASE WHEN NOT r.recorded THEN coalesce(s.user_id, f.user_id) END,
           CASE WHEN NOT r.recorded THEN coalesce(s.points, f.points) END,
           CASE WHEN NOT r.recorded THEN coalesce(s.completed_at, f.completed_at) END,
           CASE WHEN NOT r.recorded THEN coalesce(s.received_at, p_received) END,
           CASE WHEN NOT r.recorded THEN coalesce(s.season, f.season) END, p.v, p.vis, p.name,
           CASE WHEN r.recorded THEN NULL WHEN s.seq IS NOT NULL THEN s.tags ELSE f.tags END
    FROM items i
    LEFT JOIN unnest(ch_n) AS ch(n) ON ch.n = i.n
    LEFT JOIN fresh f ON f.completion_id = i.cid
    CROSS JOIN LATERAL (SELECT ch.n IS NOT NULL AND f.seq IS NOT NULL AS recorded) r
    LEFT JOIN LATERAL (  -- the row recorded already, by its key (one probe an item;
                         -- LIMIT keeps it a probe: see the header)
        SELECT c.* FROM completions c WHERE c.seq = i.kseq AND c.completed_at = i.kat
        LIMIT 1) s ON true
    LEFT JOIN profiles p ON p.uid = i.uid AND r.recorded
    ORDER BY i.n;
END
$$;

CREATE FUNCTION laurels_ingest_v1(p_ids text[], p_users bigint[], p_points integer[], p_at timestamp with time zone[], p_received timestamp with time zone, p_seasons text[], p_closed boolean[], p_others text[], p_tags text[]) RETURNS TABLE(n bigint, status text, seq bigint, user_id bigint, points integer, completed_at timestamp with time zone, received_at timestamp with time zone, season text, profile_version bigint, visibility text, display_name text, tags text[])
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan SET jit = off AS $$
#variable_conflict use_column
DECLARE
    erased bigint[];
    finalized text[];
    names text[];
    pr_users bigint[]; pr_versions bigint[]; pr_vis text[]; pr_names text[];
    known_seqs bigint[]; known_ats timestamptz[];  -- per item: its id's row, if recorded
    ch_n bigint[];
BEGIN
    -- A call of a few items (a group of single posts) runs each statement's
    -- plan kept for the connection; a larger one plans each for its arrays
    -- (migration 016). Local to the call: the SET clause restores it.
    IF cardinality(p_ids) <= 64 THEN
        PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
    END IF;
    -- 1. learners, in id order: share-locked, their profiles read once
    INSERT INTO users (user_id) SELECT DISTINCT u FROM unnest(p_users) AS u ORDER BY 1
    ON CONFLICT DO NOTHING;
    SELECT coalesce(array_agg(x.user_id) FILTER (WHERE x.gone), '{}'),
           coalesce(array_agg(x.user_id), '{}'), coalesce(array_agg(x.profile_version), '{}'),
           coalesce(array_agg(x.visibility), '{}'), coalesce(array_agg(x.display_name), '{}')
      INTO erased, pr_users, pr_versions, pr_vis, pr_names FROM (
        SELECT u.user_id, u.erased_at IS NOT NULL AS gone, u.profile_version, u.visibility,
               coalesce(u.display_name, '') AS display_name FROM users u
        WHERE u.user_id = ANY(p_users) ORDER BY u.user_id FOR SHARE) x;
    -- 2. seasons of the items that may be recorded (every period's), in name order
    INSERT INTO seasons (season)
    SELECT DISTINCT x.s FROM (
        SELECT t.s, t.u, t.closed FROM unnest(p_seasons, p_users, p_closed) AS t(s, u, closed)
        UNION ALL
        SELECT o.s, t.u, t.closed FROM unnest(p_others, p_users, p_closed) AS t(os, u, closed),
             unnest(string_to_array(t.os, ',')) AS o(s)) x
    WHERE NOT x.u = ANY(erased) AND NOT x.closed ORDER BY 1
    ON CONFLICT DO NOTHING;
    -- (the names once, then by the primary key: an OR of the two arrays made
    -- a scan of every season, splitting p_others again for each row)
    names := ARRAY(SELECT DISTINCT x FROM unnest(p_seasons || string_to_array(
                       array_to_string(p_others, ','), ',')) AS x);
    SELECT coalesce(array_agg(x.season) FILTER (WHERE x.done), '{}') INTO finalized FROM (
        SELECT s.season, s.finalized_at IS NOT NULL AS done FROM seasons s
        WHERE s.season = ANY(names)
        ORDER BY s.season FOR SHARE) x;
    -- 3. the ids recorded already (both partitions of completion_ids), and per
    -- new id the first item that may be recorded (its place n), into arrays:
    -- the writing statement is then planned for the rows it really has. (It
    -- used to filter the arrays itself, and the planner, guessing 62 rows of
    -- 1,000, joined the answers in a nested loop, 1,000 x 1,000 comparisons,
    -- 120 ms a batch, once the months of partitions made the stored rows'
    -- lookup look costly.) A concurrent batch recording one of these ids
    -- after this read is met by the insert's ON CONFLICT: 'raced'.
    -- The sealed index is probed only for an id the filter does not rule out
    -- (filter, its size and the ids read in this one statement: one snapshot).
    SELECT array_agg(k.seq ORDER BY t.n), array_agg(k.completed_at ORDER BY t.n)
      INTO known_seqs, known_ats
      FROM (SELECT x.cid, x.n, fs.blocks = 0 OR f.words IS NULL
                               OR laurels_id_in_block_v1(f.words, x.h) AS maybe
            FROM (SELECT u.cid, u.n, laurels_id_hash_v1(u.cid) AS h
                  FROM unnest(p_ids) WITH ORDINALITY AS u(cid, n)) x
            CROSS JOIN completion_ids_filter_size fs
            LEFT JOIN LATERAL (  -- the id's block, probed (LIMIT: see the header)
                SELECT f.words FROM completion_ids_filter f
                WHERE f.block = laurels_id_block_v1(x.h, greatest(fs.blocks, 1)) LIMIT 1) f
                   ON true) t
      LEFT JOIN LATERAL (
          SELECT o.seq, o.completed_at FROM completion_ids_open o WHERE o.completion_id = t.cid
          UNION ALL
          SELECT s.seq, s.completed_at FROM completion_ids_sealed s
          WHERE t.maybe AND s.completion_id = t.cid) k ON true;
    SELECT coalesce(array_agg(x.n), '{}') INTO ch_n
      FROM (SELECT DISTINCT ON (t.cid) t.cid, t.n
            FROM unnest(p_ids, p_users, p_seasons, p_closed, p_others)
                 WITH ORDINALITY AS t(cid, uid, sea, closed, others, n)
            WHERE NOT t.uid = ANY(erased) AND NOT t.closed
              AND NOT (t.sea = ANY(finalized) OR string_to_array(t.others, ',') && finalized)
              AND known_seqs[t.n] IS NULL
            ORDER BY t.cid, t.n) x;
    -- 4. insert what may be inserted; answer for every item
    RETURN QUERY
    WITH chosen AS (  -- each with its seq (a racing id's seq is skipped: a gap)
        SELECT p_ids[c.n] AS cid, p_users[c.n] AS uid, p_points[c.n] AS pts,
               p_at[c.n] AS at, p_seasons[c.n] AS sea,
               string_to_array(nullif(p_tags[c.n], ''), ',') AS tg,
               nextval('completion_seq') AS seq
        FROM unnest(ch_n) AS c(n)),
    claimed AS (  -- the ids this batch records (a racing one waits, then skips)
        INSERT INTO completion_ids_open AS k (completion_id, seq, completed_at)
        SELECT ch.cid, ch.seq, ch.at FROM chosen ch ORDER BY ch.cid
        ON CONFLICT (completion_id) DO NOTHING
        RETURNING k.seq),
    fresh AS (
        INSERT INTO completions AS c (seq, completion_id, user_id, points, completed_at,
                                      received_at, season, tags)
        SELECT ch.seq, ch.cid, ch.uid, ch.pts, ch.at, p_received, ch.sea, ch.tg
        FROM chosen ch WHERE ch.seq IN (SELECT cl.seq FROM claimed cl)
        ORDER BY ch.seq
        RETURNING c.completion_id, c.seq, c.user_id, c.points, c.completed_at, c.season,
                  c.tags),
    outboxed AS (  -- runs although nothing reads it (a data-modifying CTE always does)
        INSERT INTO outbox (seq) SELECT f.seq FROM fresh f),
    items AS (
        SELECT t.*, (t.uid = ANY(erased)) AS gone,
               (t.sea = ANY(finalized) OR string_to_array(t.others, ',') && finalized) AS done
        FROM unnest(p_ids, p_users, p_seasons, p_closed, p_others, known_seqs, known_ats)
             WITH ORDINALITY AS t(cid, uid, sea, closed, others, kseq, kat, n)),
    profiles AS (
        SELECT * FROM unnest(pr_users, pr_versions, pr_vis, pr_names) AS p(uid, v, vis, name))
    SELECT i.n,
           CASE WHEN i.gone THEN 'erased'
                WHEN r.recorded THEN 'recorded'
                WHEN s.seq IS NOT NULL OR f.seq IS NOT NULL THEN 'exists'
                WHEN i.closed THEN 'closed'
                WHEN i.done THEN 'finalized'
                ELSE 'raced' END,
           coalesce(s.seq, f.seq),
           -- what was stored, for an item that was not recorded now (ingest.py
           -- compares a replay with it); a recorded one's caller has it
           CASE WHEN NOT r.recorded THEN coalesce(s.user_id, f.user_id) END,
           CASE WHEN NOT r.recorded THEN coalesce(s.points, f.points) END,
           CASE WHEN NOT r.recorded THEN coalesce(s.completed_at, f.completed_at) END,
           CASE WHEN NOT r.recorded THEN coalesce(s.received_at, p_received) END,
           CASE WHEN NOT r.recorded THEN coalesce(s.season, f.season) END, p.v, p.vis, p.name,
           CASE WHEN r.recorded THEN NULL WHEN s.seq IS NOT NULL THEN s.tags ELSE f.tags END
    FROM items i
    LEFT JOIN unnest(ch_n) AS ch(n) ON ch.n = i.n
    LEFT JOIN fresh f ON f.completion_id = i.cid
    CROSS JOIN LATERAL (SELECT ch.n IS NOT NULL AND f.seq IS NOT NULL AS recorded) r
    LEFT JOIN LATERAL (  -- the row recorded already, by its key (one probe an item;
                         -- LIMIT keeps it a probe: see the header)
        SELECT c.* FROM completions c WHERE c.seq = i.kseq AND c.completed_at = i.kat
        LIMIT 1) s ON true
    LEFT JOIN profiles p ON p.uid = i.uid AND r.recorded
    ORDER BY i.n;
END
$$;

CREATE FUNCTION laurels_league_join_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT laurels_leagues_on_v1() THEN
        RETURN NULL;
    END IF;
    INSERT INTO league_joins (season, user_id)
    SELECT DISTINCT f.season, f.user_id FROM fresh f
    JOIN users u ON u.user_id = f.user_id
    WHERE f.voided_at IS NULL AND u.visibility <> 'hidden' AND u.erased_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM league_weeks w
                      WHERE w.season = f.season AND w.decided_at IS NOT NULL)
      AND NOT EXISTS (SELECT 1 FROM league_joins l
                      WHERE l.user_id = f.user_id AND l.season > f.season)
    ORDER BY 1, 2
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

CREATE FUNCTION laurels_leagues_on() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT enabled FROM league_settings), false)
$$;

CREATE FUNCTION laurels_leagues_on_v1() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT enabled FROM league_settings), false)
$$;

CREATE FUNCTION laurels_notification_webhook_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid := gen_random_uuid();
    v_at timestamptz := now();
    v_window integer;
BEGIN
    IF NOT laurels_webhook_wanted_v1('notification.created', NEW.kind) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        PERFORM 1 FROM webhook_deliveries
        WHERE notification_id = NEW.id AND status = 'pending' AND attempts = 0
        FOR SHARE;
        IF FOUND THEN
            RETURN NULL;
        END IF;
        SELECT coalesce_seconds INTO v_window FROM webhook_settings;
        SELECT greatest(v_at, max(coalesce(delivered_at, next_attempt_at))
                              + make_interval(secs => v_window))
        INTO v_at FROM webhook_deliveries
        WHERE type = 'notification.created' AND user_id = NEW.user_id AND kind = NEW.kind;
        v_at := coalesce(v_at, now());
    END IF;
    INSERT INTO webhook_deliveries (id, type, user_id, notification_id, kind, next_attempt_at,
                                    body)
    VALUES (v_id, 'notification.created', NEW.user_id, NEW.id, NEW.kind, v_at,
            jsonb_build_object('id', v_id, 'type', 'notification.created',
                               'created_at', laurels_utc_v1(now()), 'data', jsonb_build_object(
                'id', NEW.id, 'user_id', NEW.user_id, 'kind', NEW.kind, 'season', NEW.season,
                'data', NEW.data, 'created_at', laurels_utc_v1(NEW.created_at),
                'read', NEW.read)));
    RETURN NULL;
END
$$;

CREATE FUNCTION laurels_notifications_webhook_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT laurels_webhooks_on_v1() THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (id, type, user_id, notification_id, kind, next_attempt_at,
                                    body)
    SELECT n.delivery, 'notification.created', n.user_id, n.id, n.kind, now(),
           jsonb_build_object('id', n.delivery, 'type', 'notification.created',
                              'created_at', laurels_utc_v1(now()), 'data', jsonb_build_object(
               'id', n.id, 'user_id', n.user_id, 'kind', n.kind, 'season', n.season,
               'data', n.data, 'created_at', laurels_utc_v1(n.created_at), 'read', n.read))
    FROM (SELECT f.*, gen_random_uuid() AS delivery FROM fresh f) n  -- a new id per row
    WHERE laurels_webhook_wanted_v1('notification.created', n.kind)
    ORDER BY n.id;
    RETURN NULL;
END
$$;

CREATE FUNCTION laurels_outbox_notify_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('laurels_outbox', '');
    RETURN NULL;
END
$$;

CREATE FUNCTION laurels_retire_month(p_month date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_name text := 'completions_' || to_char(p_month, 'YYYY_MM');
    v_from timestamptz := (p_month::timestamp AT TIME ZONE 'UTC');
    v_to timestamptz := ((p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC');
    v_wait text := current_setting('lock_timeout');
    v_done boolean := true;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('laurels completions partitions'));
    IF to_regclass(v_name) IS NULL THEN
        RETURN false;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(hashtext('laurels completion ids seal'));
    BEGIN
        DELETE FROM outbox o USING completions c
        WHERE o.seq = c.seq AND c.completed_at >= v_from AND c.completed_at < v_to;
        DELETE FROM completion_ids WHERE completed_at >= v_from AND completed_at < v_to;
        PERFORM set_config('lock_timeout', '100ms', true);
        EXECUTE format('ALTER TABLE completions DETACH PARTITION %I', v_name);
        EXECUTE format('DROP TABLE %I', v_name);
        INSERT INTO retired_months (month) VALUES (p_month) ON CONFLICT DO NOTHING;
    EXCEPTION WHEN lock_not_available THEN
        v_done := false;  -- busy: nothing dropped, nothing deleted; the loop tries again
    END;
    PERFORM set_config('lock_timeout', v_wait, true);
    RETURN v_done;
END
$$;

CREATE FUNCTION laurels_retire_month_v1(p_month date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_name text := 'completions_' || to_char(p_month, 'YYYY_MM');
    v_from timestamptz := (p_month::timestamp AT TIME ZONE 'UTC');
    v_to timestamptz := ((p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC');
    v_wait text := current_setting('lock_timeout');
    v_done boolean := true;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('laurels completions partitions'));
    IF to_regclass(v_name) IS NULL THEN
        RETURN false;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(hashtext('laurels completion ids seal'));
    BEGIN
        DELETE FROM outbox o USING completions c
        WHERE o.seq = c.seq AND c.completed_at >= v_from AND c.completed_at < v_to;
        DELETE FROM completion_ids WHERE completed_at >= v_from AND completed_at < v_to;
        PERFORM set_config('lock_timeout', '100ms', true);
        EXECUTE format('ALTER TABLE completions DETACH PARTITION %I', v_name);
        EXECUTE format('DROP TABLE %I', v_name);
        INSERT INTO retired_months (month) VALUES (p_month) ON CONFLICT DO NOTHING;
    EXCEPTION WHEN lock_not_available THEN
        v_done := false;  -- busy: nothing dropped, nothing deleted; the loop tries again
    END;
    PERFORM set_config('lock_timeout', v_wait, true);
    RETURN v_done;
END
$$;

CREATE FUNCTION laurels_seal_completion_ids(p_cutoff timestamp with time zone, p_limit integer) RETURNS TABLE(staged bigint, moved bigint)
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_state completion_seal%ROWTYPE;
    v_count bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('laurels completion ids seal step')) THEN
        RETURN QUERY SELECT 0::bigint, 0::bigint;  -- another process's seal is at work
        RETURN;
    END IF;
    IF (SELECT blocks = 0 FROM completion_ids_filter_size) THEN
        -- no filter yet (a migrated database): built here, in the background
        -- of the service, rather than in the migration's locks
        PERFORM laurels_build_id_filter();
    END IF;
    SELECT * INTO v_state FROM completion_seal;
    IF NOT FOUND THEN
        INSERT INTO completion_ids_sealing
        SELECT o.completion_id FROM completion_ids_open o
        WHERE o.completed_at < p_cutoff ORDER BY o.completed_at LIMIT p_limit;
        GET DIAGNOSTICS v_count = ROW_COUNT;
        IF v_count > 0 THEN
            INSERT INTO completion_seal (staged_by, staged)
            VALUES (pg_current_xact_id(), v_count);
        END IF;
        RETURN QUERY SELECT v_count, 0::bigint;
        RETURN;
    END IF;
    IF pg_snapshot_xmin(pg_current_snapshot()) <= v_state.staged_by
       OR NOT pg_try_advisory_xact_lock(hashtext('laurels completion ids seal')) THEN
        RETURN QUERY SELECT 0::bigint, 0::bigint;  -- not yet: the loop tries again
        RETURN;
    END IF;
    WITH moved AS (
        DELETE FROM completion_ids_open o USING completion_ids_sealing s
        WHERE o.completion_id = s.completion_id
        RETURNING o.completion_id, o.seq, o.completed_at)
    INSERT INTO completion_ids_sealed (completion_id, seq, completed_at, sealed)
    SELECT m.completion_id, m.seq, m.completed_at, true FROM moved m ORDER BY m.completion_id;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    -- their bits, in this transaction; a filter outgrown twice over, built again
    PERFORM laurels_set_id_bits(ARRAY(SELECT completion_id FROM completion_ids_sealing));
    IF (SELECT ids > blocks * 8000::bigint FROM completion_ids_filter_size) THEN
        PERFORM laurels_build_id_filter();
    END IF;
    TRUNCATE completion_ids_sealing;
    DELETE FROM completion_seal;
    RETURN QUERY SELECT 0::bigint, v_count;
END
$$;

CREATE FUNCTION laurels_seal_completion_ids_v1(p_cutoff timestamp with time zone, p_limit integer) RETURNS TABLE(staged bigint, moved bigint)
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_state completion_seal%ROWTYPE;
    v_count bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('laurels completion ids seal step')) THEN
        RETURN QUERY SELECT 0::bigint, 0::bigint;  -- another process's seal is at work
        RETURN;
    END IF;
    IF (SELECT blocks = 0 FROM completion_ids_filter_size) THEN
        -- no filter yet (a migrated database): built here, in the background
        -- of the service, rather than in the migration's locks
        PERFORM laurels_build_id_filter_v1();
    END IF;
    SELECT * INTO v_state FROM completion_seal;
    IF NOT FOUND THEN
        INSERT INTO completion_ids_sealing
        SELECT o.completion_id FROM completion_ids_open o
        WHERE o.completed_at < p_cutoff ORDER BY o.completed_at LIMIT p_limit;
        GET DIAGNOSTICS v_count = ROW_COUNT;
        IF v_count > 0 THEN
            INSERT INTO completion_seal (staged_by, staged)
            VALUES (pg_current_xact_id(), v_count);
        END IF;
        RETURN QUERY SELECT v_count, 0::bigint;
        RETURN;
    END IF;
    IF pg_snapshot_xmin(pg_current_snapshot()) <= v_state.staged_by
       OR NOT pg_try_advisory_xact_lock(hashtext('laurels completion ids seal')) THEN
        RETURN QUERY SELECT 0::bigint, 0::bigint;  -- not yet: the loop tries again
        RETURN;
    END IF;
    WITH moved AS (
        DELETE FROM completion_ids_open o USING completion_ids_sealing s
        WHERE o.completion_id = s.completion_id
        RETURNING o.completion_id, o.seq, o.completed_at)
    INSERT INTO completion_ids_sealed (completion_id, seq, completed_at, sealed)
    SELECT m.completion_id, m.seq, m.completed_at, true FROM moved m ORDER BY m.completion_id;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    -- their bits, in this transaction; a filter outgrown twice over, built again
    PERFORM laurels_set_id_bits_v1(ARRAY(SELECT completion_id FROM completion_ids_sealing));
    IF (SELECT ids > blocks * 8000::bigint FROM completion_ids_filter_size) THEN
        PERFORM laurels_build_id_filter_v1();
    END IF;
    TRUNCATE completion_ids_sealing;
    DELETE FROM completion_seal;
    RETURN QUERY SELECT 0::bigint, v_count;
END
$$;

CREATE FUNCTION laurels_set_id_bits(p_ids text[]) RETURNS void
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_blocks integer;
    r record;
    v_words bigint[];
    i integer;
BEGIN
    SELECT blocks INTO v_blocks FROM completion_ids_filter_size FOR UPDATE;
    IF v_blocks = 0 THEN
        RETURN;  -- no filter: nothing to keep
    END IF;
    FOR r IN
        SELECT y.block, array_agg(y.word ORDER BY y.word) AS words,
               array_agg(y.mask ORDER BY y.word) AS masks
        FROM (SELECT x.block, x.b / 64 AS word, bit_or(1::bigint << (x.b % 64)) AS mask
              FROM (SELECT laurels_id_block(s.h, v_blocks) AS block, laurels_id_bit(s.h, k.i) AS b
                    FROM (SELECT laurels_id_hash(id) AS h FROM unnest(p_ids) AS id) s,
                         generate_series(0, 3) AS k(i)) x
              GROUP BY 1, 2) y
        GROUP BY y.block ORDER BY y.block
    LOOP
        SELECT f.words INTO v_words FROM completion_ids_filter f WHERE f.block = r.block FOR UPDATE;
        FOR i IN 1 .. array_length(r.words, 1) LOOP
            v_words[r.words[i] + 1] := v_words[r.words[i] + 1] | r.masks[i];
        END LOOP;
        UPDATE completion_ids_filter SET words = v_words WHERE block = r.block;
    END LOOP;
    UPDATE completion_ids_filter_size SET ids = ids + cardinality(p_ids);
END
$$;

CREATE FUNCTION laurels_set_id_bits_v1(p_ids text[]) RETURNS void
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_blocks integer;
    r record;
    v_words bigint[];
    i integer;
BEGIN
    SELECT blocks INTO v_blocks FROM completion_ids_filter_size FOR UPDATE;
    IF v_blocks = 0 THEN
        RETURN;  -- no filter: nothing to keep
    END IF;
    FOR r IN
        SELECT y.block, array_agg(y.word ORDER BY y.word) AS words,
               array_agg(y.mask ORDER BY y.word) AS masks
        FROM (SELECT x.block, x.b / 64 AS word, bit_or(1::bigint << (x.b % 64)) AS mask
              FROM (SELECT laurels_id_block_v1(s.h, v_blocks) AS block,
                           laurels_id_bit_v1(s.h, k.i) AS b
                    FROM (SELECT laurels_id_hash_v1(id) AS h FROM unnest(p_ids) AS id) s,
                         generate_series(0, 3) AS k(i)) x
              GROUP BY 1, 2) y
        GROUP BY y.block ORDER BY y.block
    LOOP
        SELECT f.words INTO v_words FROM completion_ids_filter f WHERE f.block = r.block FOR UPDATE;
        FOR i IN 1 .. array_length(r.words, 1) LOOP
            v_words[r.words[i] + 1] := v_words[r.words[i] + 1] | r.masks[i];
        END LOOP;
        UPDATE completion_ids_filter SET words = v_words WHERE block = r.block;
    END LOOP;
    UPDATE completion_ids_filter_size SET ids = ids + cardinality(p_ids);
END
$$;

CREATE FUNCTION laurels_utc(t timestamp with time zone) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

CREATE FUNCTION laurels_utc_v1(t timestamp with time zone) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

CREATE FUNCTION laurels_webhook_wanted(p_type text, p_kind text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT enabled AND (events IS NULL OR p_type = ANY(events)
                                         OR 'notification.' || p_kind = ANY(events))
                     FROM webhook_settings), false)
$$;

CREATE FUNCTION laurels_webhook_wanted_v1(p_type text, p_kind text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT enabled AND (events IS NULL OR p_type = ANY(events)
                                         OR 'notification.' || p_kind = ANY(events))
                     FROM webhook_settings), false)
$$;

CREATE FUNCTION laurels_webhooks_on() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT enabled FROM webhook_settings), false)
$$;

CREATE FUNCTION laurels_webhooks_on_v1() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT enabled FROM webhook_settings), false)
$$;
