-- The database module's own statements: session locks, snapshots, LISTEN, the
-- embedded database's creation (db/__init__.py).

-- name: try_session_lock
-- locks: none
-- A session advisory lock, tried (a rebuild's per season and policy); never
-- waits.
SELECT pg_try_advisory_lock(%(key)s) AS ok;

-- name: session_unlock
-- locks: none
-- Gives a session advisory lock back.
SELECT pg_advisory_unlock(%(key)s) AS ok;

-- name: snapshot_isolation
-- Makes the transaction a read-only snapshot (a rebuild's, a catch-up's,
-- verify's).
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY;

-- name: listen_outbox
-- The projector's wake-up: every transaction that writes outbox rows NOTIFYs
-- (migration 003).
LISTEN laurels_outbox;

-- name: database_exists
-- Whether the embedded PostgreSQL has laurels' database yet (its first start
-- makes it).
SELECT 1 FROM pg_database WHERE datname = %(name)s;

-- name: reload_settings
-- The embedded PostgreSQL reads its pg_hba.conf again: a password now
-- required (db.require_password).
SELECT pg_reload_conf();

-- name: schema_tables
-- The schema as it is (db/schema.py): each table of the public schema, its
-- partitioning, and the table it is a partition of; partitions the service
-- makes as months come (completions_YYYY_MM) aside.
SELECT c.relname AS name, c.relkind = 'p' AS partitioned,
       coalesce(pg_get_partkeydef(c.oid), '') AS partition_key,
       coalesce(parent.relname, '') AS parent,
       coalesce(pg_get_expr(c.relpartbound, c.oid), '') AS bound
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
LEFT JOIN pg_class parent ON parent.oid = i.inhparent
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
  AND c.relname !~ '^completions_[0-9]{4}_[0-9]{2}$'
ORDER BY c.relname;

-- name: schema_columns
-- Each column of a table of the public schema, in its table's order: its
-- type, whether it may be null, its default.
SELECT c.relname AS table_name, a.attname AS name,
       format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null,
       coalesce(pg_get_expr(d.adbin, d.adrelid), '') AS default_value,
       a.attidentity AS identity
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY c.relname, a.attnum;

-- name: schema_constraints
-- Each constraint of a table (keys, references, checks; not the NOT NULLs
-- the columns say), a partition's inherited ones aside.
SELECT c.relname AS table_name, k.conname AS name, pg_get_constraintdef(k.oid) AS definition
FROM pg_constraint k
JOIN pg_class c ON c.oid = k.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND k.contype IN ('p', 'u', 'f', 'c', 'x')
  AND NOT c.relispartition
ORDER BY c.relname, k.conname;

-- name: schema_indexes
-- Each index not made by a constraint, a partition's aside.
SELECT c.relname AS table_name, i.relname AS name, pg_get_indexdef(i.oid) AS definition
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class c ON c.oid = x.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND NOT c.relispartition
  AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.oid)
ORDER BY c.relname, i.relname;

-- name: schema_sequences
-- Each sequence, and the column that owns it if one does.
SELECT c.relname AS name, format_type(s.seqtypid, NULL) AS type,
       coalesce((SELECT t.relname || '.' || a.attname FROM pg_depend d
                 JOIN pg_class t ON t.oid = d.refobjid
                 JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
                 WHERE d.objid = c.oid AND d.deptype IN ('a', 'i') LIMIT 1), '') AS owned_by
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_sequence s ON s.seqrelid = c.oid
WHERE n.nspname = 'public'
ORDER BY c.relname;

-- name: schema_functions
-- Each function as it is now (the text of its latest migration): its
-- arguments, result, language, volatility, strictness, settings and body.
SELECT p.proname AS name, pg_get_function_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS result, l.lanname AS language,
       p.provolatile AS volatility, p.prosecdef AS security_definer,
       p.proisstrict AS strict, coalesce(p.proconfig, '{}') AS settings, p.prosrc AS body
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
JOIN pg_language l ON l.oid = p.prolang
WHERE n.nspname = 'public'
ORDER BY p.proname, pg_get_function_identity_arguments(p.oid);

-- name: schema_triggers
-- Each trigger (a partition's clones aside).
SELECT c.relname AS table_name, t.tgname AS name, pg_get_triggerdef(t.oid) AS definition
FROM pg_trigger t
JOIN pg_class c ON c.oid = t.tgrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND NOT t.tgisinternal AND NOT c.relispartition
ORDER BY c.relname, t.tgname;

-- name: schema_views
-- Each view and its query.
SELECT c.relname AS name, pg_get_viewdef(c.oid) AS definition
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('v', 'm')
ORDER BY c.relname;
