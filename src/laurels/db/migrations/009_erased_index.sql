-- A rebuild puts back its season's tombstones from the learners erased since
-- shortly before the season began (rebuild.py, load_erased.lua): an index of
-- erased learners only, by when.
CREATE INDEX users_erased_at ON users (erased_at) WHERE erased_at IS NOT NULL;
