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
  return n .. ':' .. (counts and '1' or '0')
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
