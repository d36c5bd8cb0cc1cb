-- Shared helpers, prepended to every script when it is loaded (board/__init__.py, Scripts).
-- A profile is "profile_version\tvisibility\tlast_ts\tname" (names hold no
-- control characters, so a tab never occurs inside one). last_ts is '' until
-- the learner has scored in this version.
local function parse_profile(s)
  if not s then return nil end
  local ver, vis, ts, name = string.match(s, '^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$')
  return {ver = ver, vis = vis, ts = ts, name = name}
end

local function format_profile(p)
  return p.ver .. '\t' .. p.vis .. '\t' .. p.ts .. '\t' .. p.name
end

-- Under the `shared` policy a learner whose profile was never set (version
-- 0, public, no name: most learners) has no entry in the users hash; the
-- entry cost about as much memory as their place in the sorted set
-- (docs/performance.md, "Memory"). Such a learner is on the board when the
-- public set holds their member (their padded id: `shared` orders ties by
-- id alone, so no tie time is kept). An absent entry is the version-0
-- default, so a profile carried by a later write still wins by its
-- version exactly as before. Under `first` the tie time is part of the
-- member, so every entry is stored. ON_BOARD stands for a tie time that
-- is not kept (below every stored one: '-' sorts before the digits).
local ON_BOARD = '-'

-- p.stored is the entry as stored (nil when there is none); p.score is the
-- learner's stored score when loading it already read it (see score_of).
local function load_profile(users, public, policy, uid)
  local stored = redis.call('HGET', users, uid)
  if stored then
    local p = parse_profile(stored)
    p.stored = stored
    return p
  end
  local score = policy == 'shared' and redis.call('ZSCORE', public, uid)
  if score then
    return {ver = '0', vis = 'public', ts = ON_BOARD, name = '', score = score}
  end
  return nil
end

local function store_profile(users, policy, uid, p)
  if policy == 'shared' and tonumber(p.ver) == 0 and p.vis == 'public' and p.name == '' then
    if p.stored then redis.call('HDEL', users, uid) end
  else
    redis.call('HSET', users, uid, format_profile(p))
  end
end

-- A completion reaches a learner's stored profile: the profile it carries
-- wins if it is newer (its version is higher), and the learner's tie time
-- becomes the latest completion time. `p` is nil for a learner new to this
-- version. Returns the updated profile.
local function merge_profile(p, version, visibility, name, ts)
  if p == nil then
    p = {ver = version, vis = visibility, ts = '', name = name}
  elseif tonumber(version) > tonumber(p.ver) then
    p.ver, p.vis, p.name = version, visibility, name
  end
  if ts > p.ts then p.ts = ts end
  return p
end

-- A corrected completion's state in a version's corrections hash: its
-- correction number and whether it counts ("3:1"; "2:0" voided). The one
-- place the form is written and read (apply.lua, load_corrections.lua).
local function format_correction(n, counts)
  -- ('%.0f': WINDOW_LEFT, 2^50, would be written 1.1258999068426e+15 by `..`)
  return string.format('%.0f', n) .. ':' .. (counts and '1' or '0')
end

local function parse_correction(stored)
  local n, counts = string.match(stored, '^(%d+):(%d)$')
  return tonumber(n), counts == '1'
end

-- The sorted-set member of a learner (core/ranking.py explains the encoding).
local function member_of(policy, ts, uid)
  if policy == 'first' then return ts .. uid end
  return uid
end

local function zset_of(vis, public, hidden)
  if vis == 'hidden' then return hidden end
  return public
end

-- A loaded learner's sorted set, member and stored score (a string; nil
-- when the set does not hold them), read once.
local function score_of(p, public, hidden, policy, uid)
  local zset, member = zset_of(p.vis, public, hidden), member_of(policy, p.ts, uid)
  return zset, member, p.score or redis.call('ZSCORE', zset, member)
end

-- Take a learner off one version of a board (both sets and the users hash);
-- true if they were on it.
local function remove_learner(public, hidden, users, policy, uid)
  local p = load_profile(users, public, policy, uid)
  if not p then return false end
  if p.ts ~= '' then
    redis.call('ZREM', zset_of(p.vis, public, hidden), member_of(policy, p.ts, uid))
  end
  if p.stored then redis.call('HDEL', users, uid) end
  return true
end

-- The versions a write script may touch, or a reply that refuses it: STALE when
-- the caller's view of the current/building versions is out of date, MISSING
-- when the season has no board (never write a partial one).
local function check_versions(current_key, building_key, expected_current, expected_building)
  local current = redis.call('GET', current_key) or ''
  local building = redis.call('GET', building_key) or ''
  if current ~= expected_current or building ~= expected_building then
    return {'STALE', current, building}
  end
  if current == '' and building == '' then return {'MISSING'} end
  return nil
end

-- Append (member, score, profile) triples of a ZRANGE ... WITHSCORES reply.
-- A learner in the season's erased set is never returned, whatever a sorted
-- set still holds (privacy is checked where it is read, not only where it
-- is written).
local function append_entries(out, items, users, erased_key)
  if #items == 0 then return out end
  local uids = {}
  for i = 1, #items, 2 do uids[#uids + 1] = string.sub(items[i], -19) end
  local profiles = redis.call('HMGET', users, unpack(uids))
  local gone = redis.call('SMISMEMBER', erased_key, unpack(uids))
  for i = 1, #uids do
    if gone[i] == 0 then
      out[#out + 1] = items[2 * i - 1]
      out[#out + 1] = items[2 * i]
      out[#out + 1] = profiles[i] or ''
    end
  end
  return out
end

-- The learners among `uids` that the season's erased set holds, as a set:
-- asked in one call, not one a learner (most seasons have none: one EXISTS).
local function erased_of(erased_key, uids)
  local erased = {}
  if #uids == 0 or redis.call('EXISTS', erased_key) == 0 then return erased end
  local gone = redis.call('SMISMEMBER', erased_key, unpack(uids))
  for k = 1, #uids do
    if gone[k] == 1 then erased[uids[k]] = true end
  end
  return erased
end

-- The same, for a call's items (ARGV from `first` on, one item every
-- `width` values, its padded uid at `offset`).
local function erased_among(erased_key, first, width, offset)
  local uids = {}
  for i = first, #ARGV, width do uids[#uids + 1] = ARGV[i + offset] end
  return erased_of(erased_key, uids)
end

-- A finalized season's keys expire together (lifecycle.expire). A key that a
-- script creates afterwards (a new bitmap chunk, a first hidden learner, an
-- erased set) takes the same expiry, so nothing outlives its season (keys
-- `from` to `to`, the last one when not given).
local function inherit_expiry(current_key, keys, from, to)
  local ttl = redis.call('PTTL', current_key)
  if ttl <= 0 then return end
  for i = from, to or #keys do
    if redis.call('PTTL', keys[i]) == -1 then redis.call('PEXPIRE', keys[i], ttl) end
  end
end

-- Teams (board/keys.py TeamKeys, VersionKeys.teams; board/teams.py): a
-- version keeps a team board for each team kind in its `teams` hash (kind
-- -> "aggregate:top:applied:ready"). Its keys are named from the version's
-- base (its public set's name less ':public') as TeamKeys names them. A
-- learner counted in a kind's teams has their groups in `m` and the points
-- the teams hold for them in `p`; each team has its members' sum in `s`,
-- their count in `c`, on a `top` kind their points in its own set `t:<group>`,
-- and its score (minus its aggregate) in `z`. A learner's points change
-- (apply.lua, erase.lua) and their groups change (team_members.lua) by the
-- same few steps below, so a team's score is always its current members'.
local function version_base(public)
  return string.sub(public, 1, -8)  -- (less ':public')
end

-- The team kinds a version keeps: {{kind, base, aggregate, top}, ...}.
local function team_kinds(public)
  local vb = version_base(public)
  local fields = redis.call('HGETALL', vb .. ':teams')
  local out = {}
  for i = 1, #fields, 2 do
    local agg, top = string.match(fields[i + 1], '^(%a+):(%d+):')
    out[#out + 1] = {kind = fields[i], base = vb .. ':team:' .. fields[i], agg = agg,
                     top = tonumber(top)}
  end
  return out
end

-- A learner's points on a version (0 off the board).
local function learner_points(public, hidden, users, policy, uid)
  local p = load_profile(users, public, policy, uid)
  if not p or p.ts == '' then return 0 end
  local _, _, score = score_of(p, public, hidden, policy, uid)
  return score and 0 - tonumber(score) or 0  -- (0 - x: never -0, which HINCRBY refuses)
end

-- A team's score set again from its members (it leaves the board with its
-- last member).
local function team_rescore(k, group)
  local n = tonumber(redis.call('HGET', k.base .. ':c', group) or '0')
  if n <= 0 then
    redis.call('ZREM', k.base .. ':z', group)
    redis.call('HDEL', k.base .. ':s', group)
    redis.call('HDEL', k.base .. ':c', group)
    redis.call('DEL', k.base .. ':t:' .. group)
    return
  end
  local score
  if k.agg == 'top' then
    score = 0
    local best = redis.call('ZREVRANGE', k.base .. ':t:' .. group, 0, k.top - 1, 'WITHSCORES')
    for i = 2, #best, 2 do score = score + tonumber(best[i]) end
  else
    score = tonumber(redis.call('HGET', k.base .. ':s', group) or '0')
    if k.agg == 'mean' then score = score / n end
  end
  redis.call('ZADD', k.base .. ':z', -score, group)
end

local function team_join(k, group, uid, points)
  if k.joined then k.joined[group] = true end
  redis.call('HINCRBY', k.base .. ':c', group, 1)
  redis.call('HINCRBY', k.base .. ':s', group, points)
  if k.agg == 'top' then redis.call('ZADD', k.base .. ':t:' .. group, points, uid) end
  team_rescore(k, group)
end

local function team_leave(k, group, uid, points)
  redis.call('HINCRBY', k.base .. ':c', group, -1)
  redis.call('HINCRBY', k.base .. ':s', group, 0 - points)
  if k.agg == 'top' then redis.call('ZREM', k.base .. ':t:' .. group, uid) end
  team_rescore(k, group)
end

-- A learner's groups (a comma-joined list) as a set.
local function group_set(csv)
  local out = {}
  for g in string.gmatch(csv or '', '[^,]+') do out[g] = true end
  return out
end

-- Bring a learner's points in every team they count in up to their points
-- on the version now (`kinds`: team_kinds'); `points` when known.
local function team_sync(kinds, public, hidden, users, policy, uid, points)
  for _, k in ipairs(kinds) do
    local groups = redis.call('HGET', k.base .. ':m', uid)
    if groups then
      points = points or learner_points(public, hidden, users, policy, uid)
      local held = tonumber(redis.call('HGET', k.base .. ':p', uid) or '0')
      if held ~= points then
        for g in pairs(group_set(groups)) do
          redis.call('HINCRBY', k.base .. ':s', g, points - held)
          if k.agg == 'top' then redis.call('ZADD', k.base .. ':t:' .. g, points, uid) end
          team_rescore(k, g)
        end
        redis.call('HSET', k.base .. ':p', uid, points)
      end
    end
  end
end

-- Set a learner's groups of kind k to `csv` ('' for none): they leave the
-- others and join the new ones with their points now.
local function team_move(k, public, hidden, users, policy, uid, csv)
  local was = group_set(redis.call('HGET', k.base .. ':m', uid))
  local now = group_set(csv)
  local points = tonumber(redis.call('HGET', k.base .. ':p', uid) or '') or
      learner_points(public, hidden, users, policy, uid)
  for g in pairs(was) do
    if not now[g] then team_leave(k, g, uid, points) end
  end
  for g in pairs(now) do
    if not was[g] then team_join(k, g, uid, points) end
  end
  if csv == '' then
    redis.call('HDEL', k.base .. ':m', uid)
    redis.call('HDEL', k.base .. ':p', uid)
  else
    redis.call('HSET', k.base .. ':m', uid, csv)
    redis.call('HSET', k.base .. ':p', uid, points)
  end
end

-- A finalized season's keys expire together (inherit_expiry): the keys of
-- kind k a script may have made (its own; a `top` kind's sets of the groups
-- joined in it: k.joined), and the version's teams hash, take the marker's.
local function team_expiry(current_key, teams_key, k)
  local ttl = redis.call('PTTL', current_key)
  if ttl <= 0 then return end
  local keys = {teams_key}
  if k then
    for _, x in ipairs({':m', ':p', ':z', ':s', ':c'}) do keys[#keys + 1] = k.base .. x end
    for g in pairs(k.joined or {}) do keys[#keys + 1] = k.base .. ':t:' .. g end
  end
  for _, key in ipairs(keys) do
    if redis.call('PTTL', key) == -1 then redis.call('PEXPIRE', key, ttl) end
  end
end
