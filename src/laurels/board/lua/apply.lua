-- apply.lua: apply a batch of completions to every target version of the
-- boards of one or more seasons, in order. For each completion the
-- idempotency bit and the score change happen in this one script, so a crash
-- can never mark a completion without scoring it (docs/design.md, invariant
-- 3); one call carries a whole batch, so a batch costs one round trip
-- whatever its size. A completion counting on several boards (its week and
-- all time, the boards of its tags) is sent once, as an item, with an entry
-- for each board: its values are built and packed once, not once a board.
--
-- ARGV, by name (board/lua_args.py, bound above this script as ARG,
-- SEASON, ITEM, ENTRY, RESET): ApplyHead, whole: policy, hint_command
-- ('PUBLISH' on one node, 'SPUBLISH' on a cluster (a call then holds one
-- season: the shard channel is in its slot), '' for no hint), S, then the
-- heads, the items, the entries and the resets, each list as one JSON
-- array of its values in turn: S ApplySeason and after them each season's
-- C chunk ids in turn, N ApplyItem, E ApplyEntry (each season's in turn,
-- as many as it says), ApplyReset of the entries that carry one. (A value
-- an argument of its own cost the caller about 0.1 us to pack and Valkey
-- about 0.05 to take in, more than all else a value costs: a completion
-- with three tags is about 50 values, a season about 17; cjson decodes
-- each list in one pass.) In the JSON, the counts, indexes and numbers are
-- numbers (targets, chunks, chunk_bits, origin, width, entries; seq, ts_s,
-- ts_us, correction; item, points, entry, reset_score: each below 2^53, as
-- Lua's numbers need; redis.call writes them exactly, where `..` would not
-- past 14 digits), the rest strings (profile_version too: it is stored in
-- the profile by concatenation; a chunk id: it names a field or a member
-- as sent, with no number written out again an entry).
-- A season:
--   expected_current, expected_building: the versions the caller believes
--   on_current: '1' when target 0 is the current version (then rank events
--     are computed on it: entering the top 10, passing learners in the top
--     100); 'h' when it is, on a board without rank events (periods other
--     than the week: contract, Domain); '0' when it is not
--   targets (T), chunks (C): the numbers of target versions and chunk ids
--   season, hint_channel
--   metric: the board's; 'best' keeps each learner's highest points (see
--     Best below), any other adds the points given (1 a completion on a
--     `completions` board: the caller says)
--   bits: 's' a bitmap key per chunk, listed in the version's chunks set;
--     'h' one hash per version, a field per chunk holding its bitmap
--   chunk_bits: a seq's chunk is seq >> chunk_bits, its bit the rest
--   origin, width: the season's start (seconds since 1970) and its tie
--     times' digits: a completion's tie time is its microseconds since the
--     start, padded (seasons.Season.pad_ts)
--   entries: how many of the call's entries are its own, the next in turn
-- An item: seq, uid (padded), ts_s and ts_us (completed_at: seconds since
-- 1970, microseconds), profile_version, visibility, name ('' = none),
-- correction (0: the completion as recorded), counts ('1'; '0': voided).
-- An entry (an item on one season's board): item (a 0-based index),
-- points, part (on a long board, all time or a month, the shorter
-- closed-able season it belongs to, its week or its day; else ''). A reset
-- (a correction's entry's, sent only for those): entry (its 0-based
-- index), reset_ts (the learner's latest counted completion time in this
-- season, '' when none counts), reset_score (a void's fallback on `best`:
-- the learner's next best, 0 when none counts), tie_token (a void's under
-- the `first` policy or on `best`, '' for none).
--
-- KEYS, each season's in turn: its current marker (the version readers
-- use), building marker (the version being rebuilt, if any), set of erased
-- learners (never scored again), notification stream (rank events for the
-- projector), ties hash (learners a void is in flight for; see below) and
-- window marker (a rolling window's: see Windows below);
-- for each target version t: public zset, hidden zset, users hash, chunks
-- set, corrections hash, parts set; then the bits: for each target t, its
-- C applied bitmaps (bits 's'), or its one bits hash (bits 'h': a board of
-- a kind, board/keys.py BOARD_CHUNK_BITS).
--
-- Parts: a version may be built from archived standings (lifecycle/history.py)
-- instead of completions, whose bits it then never had set: a long board
-- from its closed parts, a closed season from its own archive. A
-- completion of such a part (or of such a season) counts on the version
-- already: applied again, it is a duplicate; corrected, it was counted
-- until then.
--
-- Ties: a void's fallback tie time (the learner's latest completion that
-- still counts) is read from PostgreSQL before this script runs. A
-- completion (or a restore) of the same learner that committed after that
-- read and is applied before this script would have its tie time
-- overwritten by the older one. So under `first` the caller first marks the
-- learner in the ties hash (mark_ties.lua: a count, the token), then reads
-- PostgreSQL, then calls this script: every apply to a marked learner
-- bumps the count, and a void whose token no longer matches changes
-- nothing and answers -2, "retry" (mark, read and apply again).
--
-- Best: a learner's score is their highest points, their tie time the
-- earliest completion giving it (CONTRACT.md, "Boards of a course, a track
-- or a skill"). A completion or a restore raises it or leaves it; a void
-- sets the fallback read from PostgreSQL (reset_score, reset_ts), which the
-- ties hash guards as it guards a tie time (the learner is marked on a
-- `best` board under either policy).
--
-- Corrections (void, restore) converge: each carries its completion's
-- correction number, the version records the highest it applied per seq in
-- its corrections hash ("n:1" counted, "n:0" voided), and a projection of an
-- older state (a late fast path, a re-delivery) changes nothing. A
-- correction sets the completion's bit too, so the completion itself applied
-- later (its outbox row re-delivered) is a duplicate. A learner none of whose
-- completions counts any more leaves the sets (their tie time is cleared).
-- Corrections make no rank events: correcting a cheater notifies nobody.
-- A version being built does not take corrections (its rebuild loads the
-- corrected states of its snapshot): a correction applies to the current
-- version and answers -1, "deferred", and its outbox row stays until the
-- new version is current, which then takes it (a rebuild never has to tell
-- a correction that reached it live from one its snapshot holds).
-- Windows: a rolling window (`last-7d`, season `window` '1') holds the
-- completions of its last local days. Its marker's `from` is the first day
-- it holds: an entry whose part (its local day, 'YYYY-MM-DD') is earlier
-- changes nothing and answers 0, whatever the version. At a local midnight
-- the marker moves first, then each completion of the days left is taken
-- out as a correction numbered WINDOW_LEFT (lifecycle/windows.py): above
-- every real correction, so it converges like one, and no later void or
-- restore of that completion moves the window again. Once a day is taken
-- out whole (the marker's `done` past it) even its WINDOW_LEFT entries change
-- nothing: a second mover's late batch, after the first dropped the marks,
-- would take it out twice. (A window whose marker is lost filters nothing
-- until its rebuild sets it again.)
-- Returns {'OK', then for each season: its status ('OK'; 'STALE' when the
-- caller's versions are out of date; 'MISSING' when it has no board: never
-- write a partial one), current, building (as they are, when STALE) and the
-- hint it published ('' for none); then for each entry the number of targets
-- it was newly applied to (-1 deferred, -2 retry; 0 for a season not OK)}.
-- Every season is checked before the first write, so a refused season has
-- nothing written. When a season's current version changed, its refresh
-- hint is built here, the one place it is, and goes out in the same round trip
-- (the caller hands the same text to its own process): {"season": S},
-- with "user_id" when a single learner changed (null unless public), and,
-- when several learners changed and all of them are public, "routes": their
-- ids (at most ROUTES_MAX), by which a process routes the hint to the groups
-- of those learners only (live/group_index.py). No other learner is ever named.
local policy, hint_command = ARGV[ARG.policy], ARGV[ARG.hint_command]
local S = tonumber(ARGV[ARG.seasons])
local HEADS = cjson.decode(ARGV[ARG.heads])
local ITEMS, ENTRIES = cjson.decode(ARGV[ARG.items]), cjson.decode(ARGV[ARG.entries])
local E = #ENTRIES / ENTRY_WIDTH
-- (an entry's reset, by its index: the offset of its values in RESETS)
local RESETS, reset_at = cjson.decode(ARGV[ARG.resets]), {}
for r = 1, #RESETS, RESET_WIDTH do reset_at[RESETS[r + RESET.entry]] = r end

-- Each season's context: its keys' places, its head's values, what its
-- entries changed (for its hint).
local seasons, ts_shared = {}, {}
do
  local key_at, chunk_at, entry_at = 0, S * SEASON_WIDTH, 0
  for s = 1, S do
    local a = 1 + (s - 1) * SEASON_WIDTH
    local T, C = HEADS[a + SEASON.targets], HEADS[a + SEASON.chunks]
    local metric = HEADS[a + SEASON.metric]
    local on_current, width = HEADS[a + SEASON.on_current], HEADS[a + SEASON.width]
    local ctx = {
      name = HEADS[a + SEASON.season], channel = HEADS[a + SEASON.hint_channel],
      expected_current = HEADS[a + SEASON.expected_current],
      expected_building = HEADS[a + SEASON.expected_building],
      current = KEYS[key_at + 1], building = KEYS[key_at + 2], erased = KEYS[key_at + 3],
      stream = KEYS[key_at + 4], ties = KEYS[key_at + 5], window_key = KEYS[key_at + 6],
      window = HEADS[a + SEASON.window] == '1',
      first = key_at + 1, versions_at = key_at + 6, bits_at = key_at + 6 + 6 * T,
      T = T, C = C, hashed = HEADS[a + SEASON.bits] == 'h',
      first_is_current = on_current ~= '0', rank_events = on_current == '1',
      best = metric == 'best', lean = policy == 'shared' and metric ~= 'best',
      shift = 2 ^ HEADS[a + SEASON.chunk_bits], origin = HEADS[a + SEASON.origin],
      ts_format = '%0' .. (width - 6) .. 'd%06d',
      chunk_ids_at = chunk_at, chunk_index = {}, has_parts = {}, users_empty = {},
      k0 = entry_at, k1 = entry_at + HEADS[a + SEASON.entries] - 1,
      changed = 0, shown = 0, routes = {}, n_routes = 0, routed = {}, routable = true,
      touched = {},  -- learners whose score an entry moved (their team boards follow)
    }
    for c = 0, C - 1 do ctx.chunk_index[tonumber(HEADS[chunk_at + 1 + c])] = c end
    -- Seasons of one start and width share their tie times (an item's, by its place).
    local shared = ts_shared[ctx.ts_format .. ctx.origin]
    if not shared then
      shared = {}
      ts_shared[ctx.ts_format .. ctx.origin] = shared
    end
    ctx.tie_times = shared
    -- Ties are tracked (the ties hash) where a void's fallback is read first.
    ctx.guarded = policy == 'first' or ctx.best
    key_at = ctx.bits_at + (ctx.hashed and T or T * C)
    ctx.last = key_at
    chunk_at = chunk_at + C
    entry_at = ctx.k1 + 1
    seasons[s] = ctx
  end
end

-- Set a completion's idempotency bit (chunk c, bit `offset`) on target t of
-- a season; true if it was set already. A field of the
-- bits hash is the bitmap SETBIT would make (a byte's bits from its high
-- end), so both forms read the same (board/inspection.py). A hash's fields
-- are read once a call, kept as tables of their bytes while the call sets
-- bits, and written back once at its end (write_bits): a batch's
-- completions share a few chunks, and one HGET and one HSET a completion
-- were half of what a board of a kind cost; a field made again as a string
-- at each bit, another 1.5 us an entry. (A script runs whole or, on a
-- write refused at its start, not at all: no reply sees a bit that is not
-- written.)
local bitmaps, dirty = {}, {}
-- The fields of bits hash `key` read so far in this call, by chunk id.
local function fields_of(key)
  local fields = bitmaps[key]
  if not fields then
    fields = {}
    bitmaps[key] = fields
  end
  return fields
end
-- Set bit `offset` of field `chunk` of bits hash `key` (`fields`, its
-- fields_of); true if it was set already.
local function set_field_bit(key, fields, chunk, offset)
  local bytes = fields[chunk]
  if not bytes then
    bytes = {string.byte(redis.call('HGET', key, chunk) or '', 1, -1)}
    fields[chunk] = bytes
  end
  local i, mask = math.floor(offset / 8) + 1, bit.rshift(0x80, offset % 8)
  local byte = bytes[i]
  if not byte then
    for j = #bytes + 1, i do bytes[j] = 0 end  -- (the string SETBIT would pad)
    byte = 0
  end
  if bit.band(byte, mask) ~= 0 then return true end
  bytes[i] = bit.bor(byte, mask)
  local touched = dirty[key]
  if not touched then
    touched = {}
    dirty[key] = touched
  end
  touched[chunk] = true
  return false
end
local function set_bit(ctx, t, c, offset)
  local chunk = HEADS[ctx.chunk_ids_at + 1 + c]
  if not ctx.hashed then
    if redis.call('SETBIT', KEYS[ctx.bits_at + 1 + t * ctx.C + c], offset, 1) == 1 then
      return true
    end
    redis.call('SADD', KEYS[ctx.versions_at + 6 * t + 4], chunk)
    return false
  end
  local key = KEYS[ctx.bits_at + 1 + t]
  return set_field_bit(key, fields_of(key), chunk, offset)
end
local function write_bits()
  for key, chunks in pairs(dirty) do
    local args = {}
    for chunk in pairs(chunks) do
      args[#args + 1] = chunk
      args[#args + 1] = string.char(unpack(bitmaps[key][chunk]))
    end
    redis.call('HSET', key, unpack(args))
  end
end

-- On a `best` board, a learner at `score` (stored: minus the total; 0 when
-- off the board) with tie time p.ts gains a counted completion of `points`
-- at `ts`: the score and tie time after it.
local function raise_best(p, score, on_board, points, ts)
  if not on_board or -points < score then
    p.ts = ts
    return -points
  end
  if -points == score and ts < p.ts then p.ts = ts end
  return score
end

-- Every season is checked before the first write; a refused one (STALE,
-- MISSING) is left untouched and its entries answer 0.
for _, ctx in ipairs(seasons) do
  ctx.refused = check_versions(ctx.current, ctx.building, ctx.expected_current,
                               ctx.expected_building)
  if not ctx.refused then
    -- Whether a completion of a part counts on target t from an archive
    -- (see Parts above); most versions have no parts at all.
    for t = 0, ctx.T - 1 do
      ctx.has_parts[t] = redis.call('EXISTS', KEYS[ctx.versions_at + 6 * t + 6]) == 1
    end
    if ctx.window then
      local marker = redis.call('HMGET', ctx.window_key, 'from', 'done')
      ctx.from, ctx.done = marker[1] or nil, marker[2] or nil
    end
  end
end

-- Whether a completion of `part` (or of this season) counts on target t
-- from an archive (see Parts above).
local function from_archive(ctx, t, part)
  if not ctx.has_parts[t] then return false end
  local parts = KEYS[ctx.versions_at + 6 * t + 6]
  return redis.call('SISMEMBER', parts, ctx.name) == 1
      or (part ~= '' and redis.call('SISMEMBER', parts, part) == 1)
end

-- Item i's tie time on a season's board, made when an entry first needs it
-- (a lean entry does not); a completion's boards mostly share their start
-- (weeks of one zone), and then the one string.
local function tie_time(ctx, i)
  local ts = ctx.tie_times[i]
  if not ts then
    ts = string.format(ctx.ts_format, ITEMS[i + ITEM.ts_s] - ctx.origin, ITEMS[i + ITEM.ts_us])
    ctx.tie_times[i] = ts
  end
  return ts
end

-- Apply a correction to target t (see above); returns 1 if its state is newly
-- recorded there, and (on the current version, when the score changed) the
-- learner's visibility after it.
local function correct_one(ctx, t, seq, c, offset, uid, points, i, profile_version, visibility,
                           name, erased, correction, counts, reset_ts, reset_score, part)
  local ts = tie_time(ctx, i)
  local base = ctx.versions_at + 6 * t + 1
  local public, hidden, users = KEYS[base], KEYS[base + 1], KEYS[base + 2]
  local corrections = KEYS[base + 4]
  local archived = from_archive(ctx, t, part)
  local stored = redis.call('HGET', corrections, seq)
  local stored_n, stored_counts = nil, false
  if stored then
    stored_n, stored_counts = parse_correction(stored)
    if stored_n >= correction then return 0, '' end
  end
  local was_applied = set_bit(ctx, t, c, offset)
  redis.call('HSET', corrections, seq, format_correction(correction, counts))
  ctx.bar = nil  -- (a void may lower the top's last place: see top_bar)
  local counted = stored_counts or (not stored and (was_applied or archived))
  if erased or counted == counts then return 1, '' end
  local p = load_profile(users, public, policy, uid)
  local score, on_board = 0, p ~= nil and p.ts ~= ''
  if on_board then
    local old_zset, old_member, stored_score = score_of(p, public, hidden, policy, uid)
    score = tonumber(stored_score or '0')
    redis.call('ZREM', old_zset, old_member)
  end
  if counts and ctx.best then  -- restored: it may be the best again
    p = merge_profile(p, profile_version, visibility, name, '')
    score = raise_best(p, score, on_board, points, ts)
  elseif counts then  -- restored: it counts again, and may be the latest again
    p = merge_profile(p, profile_version, visibility, name, ts)
    score = score - points
  elseif ctx.best then  -- voided: the next best, as PostgreSQL has it (see Best)
    p = merge_profile(p, profile_version, visibility, name, '')
    score, p.ts = -reset_score, reset_ts
  else  -- voided: the tie time falls back when it was this completion's
    p = merge_profile(p, profile_version, visibility, name, '')
    if p.ts == ts then p.ts = reset_ts end
    score = score + points
  end
  if score >= 0 then
    p.ts = ''  -- nothing counts: off the board
  elseif p.ts == '' then
    p.ts = ts  -- (PostgreSQL said none counts, yet points remain: keep them shown)
  end
  if p.ts ~= '' then
    redis.call('ZADD', zset_of(p.vis, public, hidden), score, member_of(policy, p.ts, uid))
  end
  store_profile(users, policy, uid, p)
  ctx.users_empty[t] = nil  -- (see users_empty)
  if ctx.first_is_current and t == 0 then return 1, p.vis end
  return 1, ''
end

-- Whether target t's users hash holds nobody (a board none of whose
-- learners has a profile set, as most boards of a kind): a lean entry then
-- needs no HEXISTS. Read once a call; a profile stored or removed in the
-- call drops it, to be read again.
local function users_empty(ctx, t, users)
  local empty = ctx.users_empty[t]
  if empty == nil then
    empty = redis.call('EXISTS', users) == 0
    ctx.users_empty[t] = empty
  end
  return empty
end

-- Whether an entry is a default learner's (the lean entry below, the plain
-- lane): the completion carries the default profile (version 0, public, no
-- name), and target t stores no profile for the learner.
local function default_entry(ctx, t, users, uid, profile_version, visibility, name)
  return profile_version == '0' and visibility == 'public' and name == ''
      and (users_empty(ctx, t, users) or redis.call('HEXISTS', users, uid) == 0)
end

-- The score of the TOP-th learner of a season's current public set
-- (math.huge while it holds fewer). A learner scoring worse than it after
-- an entry makes no rank event: they enter no top 10 and pass nobody in
-- the top TOP (TOP learners score strictly better), so their ranks are not
-- read. Read once a call: an apply only raises standings, so the TOP-th
-- place only improves and a bar read earlier stays at or below the true
-- one; what can lower it (a public learner turning hidden, a correction)
-- drops it, to be read again.
local function top_bar(ctx, public)
  if not ctx.bar then
    local at = redis.call('ZRANGE', public, TOP - 1, TOP - 1, 'WITHSCORES')
    ctx.bar = at[2] and tonumber(at[2]) or math.huge
  end
  return ctx.bar
end

-- Apply one completion to target t; returns 1 if newly applied there, and
-- (on the current version) the learner's visibility after it.
local function apply_one(ctx, t, seq, c, offset, uid, points, i, profile_version, visibility,
                         name, erased, part)
  local base = ctx.versions_at + 6 * t + 1
  local public, hidden, users = KEYS[base], KEYS[base + 1], KEYS[base + 2]
  local ranked = ctx.first_is_current and t == 0
  -- The chunk is tracked whenever its bit is set (an erased learner's too),
  -- so dropping or expiring the version finds every bitmap.
  if set_bit(ctx, t, c, offset) then return 0, '' end
  if erased then return 0, '' end
  if from_archive(ctx, t, part) then
    return 0, ''  -- counted in its archived standing (see Parts above)
  end
  local rank_events = ranked and ctx.rank_events
  if ctx.lean and default_entry(ctx, t, users, uid, profile_version, visibility, name) then
    -- The common entry, lean: under `shared`, on a sum board, a learner
    -- with no users entry (the default profile: on the public set, or on
    -- no set) gaining a completion that carries the default profile too.
    -- Only their score moves (ZINCRBY adds to an absent member as to 0:
    -- what the general path below would ZADD), and their profile stays the
    -- absent default. Where rank events are made, only below the top (see
    -- top_bar); a learner reaching it takes the general path.
    if not rank_events then
      redis.call('ZINCRBY', public, -points, uid)
      return 1, ranked and 'public' or ''
    end
    local after = tonumber(redis.call('ZSCORE', public, uid) or '0') - points
    if after > top_bar(ctx, public) then
      redis.call('ZADD', public, after, uid)
      return 1, 'public'
    end
  end
  local ts = tie_time(ctx, i)
  local old_index, old_rank, removed = nil, nil, nil
  local p = load_profile(users, public, policy, uid)
  local score, on_board = 0, p ~= nil and p.ts ~= ''
  if on_board then
    local old_zset, old_member, stored_score = score_of(p, public, hidden, policy, uid)
    score = tonumber(stored_score or '0')
    removed = {old_zset, old_member}
  end
  if rank_events then
    -- (the score after it: raise_best's, or the sum's)
    local after = score - points
    if ctx.best then after = on_board and math.min(score, -points) or -points end
    if after > top_bar(ctx, public) then rank_events = false end
  end
  if rank_events and on_board and removed[1] == public then
    old_index = redis.call('ZRANK', public, removed[2])
    old_rank = old_index + 1
    if policy == 'shared' then  -- the board's rank: ties share it
      old_rank = redis.call('ZCOUNT', public, '-inf', '(' .. score) + 1
    end
  end
  local new_score
  if ctx.best then
    p = merge_profile(p, profile_version, visibility, name, '')
    new_score = raise_best(p, score, on_board, points, ts)
  else
    p = merge_profile(p, profile_version, visibility, name, ts)
    new_score = score - points
  end
  local new_member, new_zset = member_of(policy, p.ts, uid), zset_of(p.vis, public, hidden)
  -- (ZADD of the same member in the same set only moves it)
  if removed and (removed[1] ~= new_zset or removed[2] ~= new_member) then
    redis.call('ZREM', removed[1], removed[2])
    if removed[1] == public and new_zset ~= public then ctx.bar = nil end
  end
  redis.call('ZADD', new_zset, new_score, new_member)
  store_profile(users, policy, uid, p)
  ctx.users_empty[t] = nil  -- (see users_empty)
  if not ranked then return 1, '' end
  if not rank_events then return 1, p.vis end
  if p.vis ~= 'hidden' then
    local new_index = redis.call('ZRANK', public, new_member)
    local new_rank = new_index + 1
    if policy == 'shared' then
      new_rank = redis.call('ZCOUNT', public, '-inf', '(' .. new_score) + 1
    end
    local entered = new_rank <= NOTIFY_MAX and (old_rank == nil or old_rank > NOTIFY_MAX)
    -- Learners passed: those now just below who were ahead before and now
    -- have a strictly lower score (a tie passes nobody). A learner new to the
    -- public board comes from below all of it: entering above someone passes
    -- them.
    local passed = {}
    local from = old_index or TOP
    if from > new_index and new_index < TOP - 1 then
      local last = math.min(from, new_index + OVERTAKEN_MAX, TOP - 1)
      local below = redis.call('ZRANGE', public, new_index + 1, last, 'WITHSCORES')
      for j = 1, #below, 2 do
        if tonumber(below[j + 1]) > new_score then
          passed[#passed + 1] = string.sub(below[j], -19)
        end
      end
    end
    if entered or #passed > 0 then
      redis.call('XADD', ctx.stream, 'MAXLEN', '~', 100000, '*', 'seq', seq, 'uid', uid,
                 'vis', p.vis, 'rank', new_rank,
                 'score', -new_score, 'top10', entered and '1' or '0',
                 'passed', table.concat(passed, ','))
    end
  end
  return 1, p.vis
end

-- Note what one entry changed on its season's current version, for the hint.
local function note_change(ctx, uid, current_vis)
  if current_vis == '' or ctx.changed_uid == uid then return end
  ctx.changed = ctx.changed + 1
  if current_vis ~= 'hidden' then ctx.shown = ctx.shown + 1 end
  ctx.changed_uid, ctx.changed_vis = uid, current_vis
  if current_vis ~= 'public' then
    ctx.routable = false
  elseif ctx.routable and not ctx.routed[uid] then
    ctx.routed[uid] = true
    local n = ctx.n_routes + 1
    ctx.routes[n], ctx.n_routes = uid, n
    if n > ROUTES_MAX then ctx.routable = false end
  end
end

-- The erased learners among each season's entries: one question a season
-- that has any (erased_of). The entries come and are applied a season at
-- a time, so that a season's sets and hashes stay in the CPU's caches
-- while its entries are applied (in a batch's order, entries of many
-- seasons cost Valkey about a third more).
for _, ctx in ipairs(seasons) do
  ctx.gone = {}
  -- (most seasons have no erased set: their learners are not gathered)
  if not ctx.refused and redis.call('EXISTS', ctx.erased) == 1 then
    local uids = {}
    for k = ctx.k0, ctx.k1 do
      uids[#uids + 1] = ITEMS[1 + ENTRIES[1 + k * ENTRY_WIDTH + ENTRY.item] * ITEM_WIDTH
                              + ITEM.uid]
    end
    ctx.gone = erased_of(ctx.erased, uids)
  end
end

local out = {'OK'}
for _, ctx in ipairs(seasons) do
  -- (status, current, building, hint: filled in below)
  local refused = ctx.refused or {'OK', '', ''}
  out[#out + 1] = refused[1]
  out[#out + 1] = refused[2] or ''
  out[#out + 1] = refused[3] or ''
  out[#out + 1] = ''
end
local ANSWERS_AT = #out
for _ = 1, E do out[#out + 1] = 0 end  -- (each entry's answer: filled in below)

-- Apply entry k of a season by the general path: apply_one or correct_one
-- on each target (or a void's retry).
local function apply_entry(ctx, k)
  local e = 1 + k * ENTRY_WIDTH
  local i = 1 + ENTRIES[e + ENTRY.item] * ITEM_WIDTH
  local r = reset_at[k]
  local uid, token = ITEMS[i + ITEM.uid], r and RESETS[r + RESET.tie_token] or ''
  local answer = ANSWERS_AT + 1 + k
  if token ~= '' and redis.call('HGET', ctx.ties, uid) ~= token then
    out[answer] = -2  -- retry: the void's tie time may be stale (see Ties above)
    return
  end
  local seq = ITEMS[i + ITEM.seq]
  local chunk = math.floor(seq / ctx.shift)
  local c, offset = ctx.chunk_index[chunk], seq - chunk * ctx.shift
  local points, part = ENTRIES[e + ENTRY.points], ENTRIES[e + ENTRY.part]
  local correction = ITEMS[i + ITEM.correction]
  local counts = ITEMS[i + ITEM.counts] == '1'
  local profile_version = ITEMS[i + ITEM.profile_version]
  local visibility, name = ITEMS[i + ITEM.visibility], ITEMS[i + ITEM.name]
  local erased = ctx.gone[uid] == true
  if ctx.from and ((correction < WINDOW_LEFT and part < ctx.from)
                   or (correction >= WINDOW_LEFT and ctx.done and part < ctx.done)) then
    return  -- a day the window no longer holds, or has taken out: its answer stays 0
  end
  local applied, current_vis, deferred = 0, '', false
  for t = 0, ctx.T - 1 do
    local got, vis = 0, ''
    if correction > 0 and not (ctx.first_is_current and t == 0) then
      deferred = true  -- a version being built takes corrections once it is current
    elseif correction > 0 then
      got, vis = correct_one(ctx, t, seq, c, offset, uid, points, i, profile_version,
                             visibility, name, erased, correction, counts,
                             r and RESETS[r + RESET.reset_ts] or '',
                             r and RESETS[r + RESET.reset_score] or 0, part)
    else
      got, vis = apply_one(ctx, t, seq, c, offset, uid, points, i, profile_version,
                           visibility, name, erased, part)
    end
    applied = applied + got
    if vis ~= '' then current_vis = vis end
  end
  if applied > 0 and ctx.guarded and redis.call('HEXISTS', ctx.ties, uid) == 1 then
    redis.call('HINCRBY', ctx.ties, uid, 1)  -- a void in flight for them must read again
  end
  out[answer] = deferred and -1 or applied
  if applied > 0 then ctx.touched[uid] = true end
  note_change(ctx, uid, current_vis)
end

-- The plain lane: on a board of a kind with only its current version, no
-- rank events and no parts (most boards of a kind, most of the time), a
-- completion as recorded that carries the default profile, of a learner
-- with none stored, is apply_one's lean entry, taken here without the
-- general path's per-entry calls and reads (with the routes' stripping
-- below, a tenth of an entry's time in Valkey: bench/script_ab.py). The
-- season's keys, fields and the names' offsets are locals of its loop: a
-- table read a value, and a function call an entry, were 4% of an entry
-- there (script_ab, 2026-12-06).
local floor = math.floor
local E_ITEM, E_POINTS = ENTRY.item, ENTRY.points
local I_SEQ, I_UID, I_CORRECTION = ITEM.seq, ITEM.uid, ITEM.correction
local I_VERSION, I_VISIBILITY, I_NAME = ITEM.profile_version, ITEM.visibility, ITEM.name
for _, ctx in ipairs(seasons) do
  local plain = ctx.lean and ctx.T == 1 and ctx.hashed and ctx.first_is_current
      and not ctx.rank_events and not ctx.has_parts[0] and not ctx.window
  if ctx.refused then
    -- (a refused season: its entries answer 0)
  elseif not plain then
    for k = ctx.k0, ctx.k1 do apply_entry(ctx, k) end
  else
    local public, users = KEYS[ctx.versions_at + 1], KEYS[ctx.versions_at + 3]
    local bits_key = KEYS[ctx.bits_at + 1]
    local fields = fields_of(bits_key)
    local shift, ids_at, chunk_index, gone = ctx.shift, ctx.chunk_ids_at, ctx.chunk_index, ctx.gone
    for k = ctx.k0, ctx.k1 do
      local e = 1 + k * ENTRY_WIDTH
      local i = 1 + ENTRIES[e + E_ITEM] * ITEM_WIDTH
      local uid = ITEMS[i + I_UID]
      -- (as recorded, not erased, and default_entry's test, inline)
      if ITEMS[i + I_CORRECTION] == 0 and not gone[uid] and ITEMS[i + I_VERSION] == '0'
          and ITEMS[i + I_VISIBILITY] == 'public' and ITEMS[i + I_NAME] == ''
          and (users_empty(ctx, 0, users) or redis.call('HEXISTS', users, uid) == 0) then
        local seq = ITEMS[i + I_SEQ]
        local chunk = floor(seq / shift)
        if not set_field_bit(bits_key, fields, HEADS[ids_at + 1 + chunk_index[chunk]],
                             seq - chunk * shift) then
          redis.call('ZINCRBY', public, -ENTRIES[e + E_POINTS], uid)
          out[ANSWERS_AT + 1 + k] = 1
          ctx.touched[uid] = true
          note_change(ctx, uid, 'public')
        end  -- (else a duplicate: its answer stays 0)
      else
        apply_entry(ctx, k)
      end
    end
  end
end
write_bits()
-- The team boards of each version (see Teams in _common.lua): each learner
-- whose score moved here brings their teams along, in this same call.
for _, ctx in ipairs(seasons) do
  if not ctx.refused and next(ctx.touched) then
    for t = 0, ctx.T - 1 do
      local base = ctx.versions_at + 6 * t + 1
      local kinds = team_kinds(KEYS[base])
      if #kinds > 0 then
        for uid in pairs(ctx.touched) do
          team_sync(kinds, KEYS[base], KEYS[base + 1], KEYS[base + 2], policy, uid)
        end
      end
    end
  end
end
for s, ctx in ipairs(seasons) do
  if not ctx.refused then
    -- (the ties hash has an expiry of its own)
    inherit_expiry(ctx.current, KEYS, ctx.first + 2, ctx.last)
    if ctx.changed > 0 and hint_command ~= '' then
      local hint = '{"season":"' .. ctx.name .. '"'
      if ctx.changed == 1 then
        local id = 'null'
        if ctx.changed_vis == 'public' then id = string.gsub(ctx.changed_uid, '^0+', '') end
        hint = hint .. ',"user_id":' .. id
      elseif ctx.routable then
        -- (the padded ids, their zeros stripped at once, not an id at a time:
        -- user ids are 1 or more)
        local routes = string.gsub(',' .. table.concat(ctx.routes, ','), ',0+', ',')
        hint = hint .. ',"routes":[' .. string.sub(routes, 2) .. ']'
      end
      -- Only hidden learners changed: no public board shows anything new (the
      -- caches still drop the season: the learners' own views did change).
      if ctx.shown == 0 then hint = hint .. ',"quiet":true' end
      hint = hint .. '}'
      redis.call(hint_command, ctx.channel, hint)
      out[1 + 4 * s] = hint  -- as published: this process's caches hear it too
    end
  end
end
return out
