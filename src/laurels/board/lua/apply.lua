-- apply.lua: apply a batch of completions of one season to every target
-- version of its board, in order. For each completion the idempotency bit and
-- the score change happen in this one script, so a crash can never mark a
-- completion without scoring it (docs/design.md, invariant 3); one call carries a
-- whole batch, so a batch costs one round trip whatever its size.
--
-- KEYS[1]  current marker of the season (version readers use)
-- KEYS[2]  building marker (version being rebuilt, if any)
-- KEYS[3]  the season's set of erased learners (never scored again)
-- KEYS[4]  the season's notification stream (rank events for the projector)
-- KEYS[5]  the season's ties hash (learners a void is in flight for; see below)
-- KEYS[6+6t .. 11+6t], for each target version t (T of them):
--          public zset, hidden zset, users hash, chunks set, corrections hash,
--          parts set
-- KEYS[6+6T + t*C + c], for target t and chunk c (C of them): applied bitmap
--          (bits 's'), or the version's bits hash, the same key for every
--          chunk (bits 'h': a board of a kind, keys.py BOARD_CHUNK_BITS)
-- ARGV, by name (board/lua_args.py: ApplyHead, then the C chunk ids, then
-- an ApplyDelta per completion; bound above this script as ARG, HEAD, EACH):
--   expected_current, expected_building: the versions the caller believes
--   policy: the tie policy
--   on_current: '1' when target 0 is the current version (then rank events
--     are computed on it: entering the top 10, passing learners in the top
--     100); 'h' when it is, on a board without rank events (periods other
--     than the week: contract, Domain); '0' when it is not
--   targets (T), chunks (C): the numbers of target versions and chunk ids
--   hint_command: how to hint the change: 'PUBLISH' (one node), 'SPUBLISH'
--     (a cluster: the season's shard channel, in this script's slot) or ''
--   hint_channel, season
--   metric: the board's; 'best' keeps each learner's highest points (see
--     Best below), any other adds the points given (1 a completion on a
--     `completions` board: the caller says)
--   bits: 's' a bitmap key per chunk, listed in the version's chunks set;
--     'h' one hash per version, a field per chunk holding its bitmap
--   then the chunk (bitmap) ids, in the order of their KEYS, and per
--   completion: seq, chunk (its index among them), offset (its bit), uid
--   (padded), points, ts (padded completed_at offset, microseconds),
--   profile_version, visibility, name ('' = none), correction (0: the
--   completion as recorded), counts ('1'; '0': voided), reset_ts (for a
--   correction the learner's latest counted completion time in this season,
--   '' when none counts), reset_score (a void's fallback on `best`: the
--   learner's next best, 0 when none counts), tie_token (a void's under the
--   `first` policy or on `best`, '' for none) and part (on a long board, all time or a month, the shorter
--   closed-able season it belongs to, its week or its day; else '')
--
-- Parts: a version may be built from archived standings (history.py)
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
-- Returns {'STALE', current, building} when the caller's versions are out of
-- date, {'MISSING'} when the season has no board (never write a partial one),
-- else {'OK', hint, applied_1, visibility_1, applied_2, ...}: the hint it
-- published ('' for none), then per completion the number of targets it was
-- newly applied to and its visibility on the current version ('' when not
-- applied there). When the current version changed, the refresh hint is
-- built here, the one place it is, and goes out in the same round trip
-- (the caller hands the same text to its own process): {"season": S},
-- with "user_id" when a single learner changed (null unless public), and,
-- when several learners changed and all of them are public, "routes": their
-- ids (at most ROUTES_MAX), by which a process routes the hint to the groups
-- of those learners only (group_index.py). No other learner is ever named.
local current_key, building_key, erased_key, stream_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ties_key = KEYS[5]
local expected_current, expected_building = ARGV[ARG.expected_current], ARGV[ARG.expected_building]
local policy = ARGV[ARG.policy]
local first_is_current, rank_events = ARGV[ARG.on_current] ~= '0', ARGV[ARG.on_current] == '1'
local T, C = tonumber(ARGV[ARG.targets]), tonumber(ARGV[ARG.chunks])
local hint_command, hint_channel = ARGV[ARG.hint_command], ARGV[ARG.hint_channel]
local season = ARGV[ARG.season]
local best = ARGV[ARG.metric] == 'best'
local hashed = ARGV[ARG.bits] == 'h'

-- Set a completion's idempotency bit (chunk c, bit `offset`) on a version
-- whose chunks set is `chunks`; true if it was set already. A field of the
-- bits hash is the bitmap SETBIT would make (a byte's bits from its high
-- end), so both forms read the same (board/inspection.py). A hash's fields
-- are read once a call and written back once at its end (write_bits): a
-- batch's completions share a few chunks, and one HGET and one HSET a
-- completion were half of what a board of a kind cost. (A script runs
-- whole or, on a write refused at its start, not at all: no reply sees a
-- bit that is not written.)
local bitmaps, dirty = {}, {}
local function set_bit(key, chunks, c, offset)
  local chunk = ARGV[HEAD + 1 + c]
  if not hashed then
    if redis.call('SETBIT', key, offset, 1) == 1 then return true end
    redis.call('SADD', chunks, chunk)
    return false
  end
  local fields = bitmaps[key]
  if not fields then
    fields = {}
    bitmaps[key] = fields
  end
  local bitmap = fields[chunk]
  if not bitmap then bitmap = redis.call('HGET', key, chunk) or '' end
  local i, mask = math.floor(offset / 8) + 1, bit.rshift(0x80, offset % 8)
  local byte = string.byte(bitmap, i) or 0
  if bit.band(byte, mask) ~= 0 then
    fields[chunk] = bitmap
    return true
  end
  if #bitmap < i then bitmap = bitmap .. string.rep('\0', i - #bitmap) end
  fields[chunk] = string.sub(bitmap, 1, i - 1) .. string.char(bit.bor(byte, mask))
                  .. string.sub(bitmap, i + 1)
  if not dirty[key] then dirty[key] = {} end
  dirty[key][chunk] = true
  return false
end
local function write_bits()
  for key, chunks in pairs(dirty) do
    local args = {}
    for chunk in pairs(chunks) do
      args[#args + 1] = chunk
      args[#args + 1] = bitmaps[key][chunk]
    end
    redis.call('HSET', key, unpack(args))
  end
end
-- Ties are tracked (the ties hash) where a void's fallback is read first.
local guarded = policy == 'first' or best

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

local refused = check_versions(current_key, building_key, expected_current, expected_building)
if refused then return refused end

-- Whether a completion of `part` (or of this season) counts on target t
-- from an archive (see Parts above); most versions have no parts at all.
local has_parts = {}
for t = 0, T - 1 do has_parts[t] = redis.call('EXISTS', KEYS[11 + 6 * t]) == 1 end
local function from_archive(t, part)
  if not has_parts[t] then return false end
  local parts = KEYS[11 + 6 * t]
  return redis.call('SISMEMBER', parts, season) == 1
      or (part ~= '' and redis.call('SISMEMBER', parts, part) == 1)
end

-- Apply a correction to target t (see above); returns 1 if its state is newly
-- recorded there, and (on the current version, when the score changed) the
-- learner's visibility after it.
local function correct_one(t, seq, c, offset, uid, points, ts, profile_version, visibility,
                           name, erased, correction, counts, reset_ts, reset_score, part)
  local base = 6 + 6 * t
  local public, hidden, users, chunks = KEYS[base], KEYS[base + 1], KEYS[base + 2], KEYS[base + 3]
  local corrections = KEYS[base + 4]
  local bitmap = KEYS[6 + 6 * T + t * C + c]
  local archived = from_archive(t, part)
  local stored = redis.call('HGET', corrections, seq)
  local stored_n, stored_counts = nil, false
  if stored then
    stored_n, stored_counts = parse_correction(stored)
    if stored_n >= correction then return 0, '' end
  end
  local was_applied = set_bit(bitmap, chunks, c, offset)
  redis.call('HSET', corrections, seq, format_correction(correction, counts))
  local counted = stored_counts or (not stored and (was_applied or archived))
  if erased or counted == counts then return 1, '' end
  local p = load_profile(users, public, policy, uid)
  local score, on_board = 0, p ~= nil and p.ts ~= ''
  if on_board then
    local old_zset, old_member, stored_score = score_of(p, public, hidden, policy, uid)
    score = tonumber(stored_score or '0')
    redis.call('ZREM', old_zset, old_member)
  end
  if counts and best then  -- restored: it may be the best again
    p = merge_profile(p, profile_version, visibility, name, '')
    score = raise_best(p, score, on_board, points, ts)
  elseif counts then  -- restored: it counts again, and may be the latest again
    p = merge_profile(p, profile_version, visibility, name, ts)
    score = score - points
  elseif best then  -- voided: the next best, as PostgreSQL has it (see Best)
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
  if first_is_current and t == 0 then return 1, p.vis end
  return 1, ''
end

-- Apply one completion to target t; returns 1 if newly applied there, and
-- (on the current version) the learner's visibility after it.
local function apply_one(t, seq, c, offset, uid, points, ts, profile_version, visibility, name,
                         erased, part)
  local base = 6 + 6 * t
  local public, hidden, users, chunks = KEYS[base], KEYS[base + 1], KEYS[base + 2], KEYS[base + 3]
  local bitmap = KEYS[6 + 6 * T + t * C + c]
  local ranked = first_is_current and t == 0
  -- The chunk is tracked whenever its bit is set (an erased learner's too),
  -- so dropping or expiring the version finds every bitmap.
  if set_bit(bitmap, chunks, c, offset) then return 0, '' end
  if erased then return 0, '' end
  if from_archive(t, part) then
    return 0, ''  -- counted in its archived standing (see Parts above)
  end
  local old_index, old_rank, removed = nil, nil, nil
  local p = load_profile(users, public, policy, uid)
  local score, on_board = 0, p ~= nil and p.ts ~= ''
  if on_board then
    local old_zset, old_member, stored_score = score_of(p, public, hidden, policy, uid)
    score = tonumber(stored_score or '0')
    if ranked and rank_events and old_zset == public then
      old_index = redis.call('ZRANK', public, old_member)
      old_rank = old_index + 1
      if policy == 'shared' then  -- the board's rank: ties share it
        old_rank = redis.call('ZCOUNT', public, '-inf', '(' .. score) + 1
      end
    end
    removed = {old_zset, old_member}
  end
  local new_score
  if best then
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
  end
  redis.call('ZADD', new_zset, new_score, new_member)
  store_profile(users, policy, uid, p)
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
      redis.call('XADD', stream_key, 'MAXLEN', '~', 100000, '*', 'seq', seq, 'uid', uid,
                 'vis', p.vis, 'rank', new_rank,
                 'score', -new_score, 'top10', entered and '1' or '0',
                 'passed', table.concat(passed, ','))
    end
  end
  return 1, p.vis
end

local out = {'OK'}
local changed_uid, changed_vis, changed, shown = nil, nil, 0, 0
local routes, routed, routable = {}, {}, true
-- Note what one item changed on the current version, for the hint.
local function note_change(uid, current_vis)
  if current_vis == '' or changed_uid == uid then return end
  changed = changed + 1
  if current_vis ~= 'hidden' then shown = shown + 1 end
  changed_uid, changed_vis = uid, current_vis
  if current_vis ~= 'public' then
    routable = false
  elseif routable and not routed[uid] then
    routed[uid] = true
    routes[#routes + 1] = string.gsub(uid, '^0+', '')
    if #routes > ROUTES_MAX then routable = false end
  end
end

local erased_uids = erased_among(erased_key, HEAD + 1 + C, EACH_WIDTH, EACH.uid)

for i = HEAD + 1 + C, #ARGV, EACH_WIDTH do
  local seq, c = ARGV[i + EACH.seq], tonumber(ARGV[i + EACH.chunk])
  local offset, uid = tonumber(ARGV[i + EACH.offset]), ARGV[i + EACH.uid]
  local points, ts = tonumber(ARGV[i + EACH.points]), ARGV[i + EACH.ts]
  local correction = tonumber(ARGV[i + EACH.correction])
  local counts, token = ARGV[i + EACH.counts] == '1', ARGV[i + EACH.tie_token]
  local part = ARGV[i + EACH.part]
  local profile_version, visibility = ARGV[i + EACH.profile_version], ARGV[i + EACH.visibility]
  local name = ARGV[i + EACH.name]
  if token ~= '' and redis.call('HGET', ties_key, uid) ~= token then
    out[#out + 1] = -2  -- retry: the void's tie time may be stale (see Ties above)
    out[#out + 1] = ''
  else
    local erased = erased_uids[uid] == true
    local applied, current_vis, deferred = 0, '', false
    for t = 0, T - 1 do
      local n, vis = 0, ''
      if correction > 0 and not (first_is_current and t == 0) then
        deferred = true  -- a version being built takes corrections once it is current
      elseif correction > 0 then
        n, vis = correct_one(t, seq, c, offset, uid, points, ts, profile_version, visibility,
                             name, erased, correction, counts, ARGV[i + EACH.reset_ts],
                             tonumber(ARGV[i + EACH.reset_score]), part)
      else
        n, vis = apply_one(t, seq, c, offset, uid, points, ts, profile_version, visibility,
                           name, erased, part)
      end
      applied = applied + n
      if vis ~= '' then current_vis = vis end
    end
    if applied > 0 and guarded and redis.call('HEXISTS', ties_key, uid) == 1 then
      redis.call('HINCRBY', ties_key, uid, 1)  -- a void in flight for them must read again
    end
    out[#out + 1] = deferred and -1 or applied
    out[#out + 1] = current_vis
    note_change(uid, current_vis)
  end
end
write_bits()
inherit_expiry(current_key, KEYS, 3)  -- (the ties hash has an expiry of its own)
local hint = ''
if changed > 0 and hint_command ~= '' then
  hint = '{"season":"' .. season .. '"'
  if changed == 1 then
    local id = 'null'
    if changed_vis == 'public' then id = string.gsub(changed_uid, '^0+', '') end
    hint = hint .. ',"user_id":' .. id
  elseif routable then
    hint = hint .. ',"routes":[' .. table.concat(routes, ',') .. ']'
  end
  -- Only hidden learners changed: no public board shows anything new (the
  -- caches still drop the season: the learners' own views did change).
  if shown == 0 then hint = hint .. ',"quiet":true' end
  hint = hint .. '}'
  redis.call(hint_command, hint_channel, hint)
end
table.insert(out, 2, hint)  -- the hint as published: this process's caches hear it too
return out
