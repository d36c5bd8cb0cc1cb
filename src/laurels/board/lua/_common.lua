-- Shared helpers, prepended to every script when it is loaded (board/scripts.py).
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

-- The sorted-set member of a learner (ranking.py explains the encoding).
local function member_of(policy, ts, uid)
  if policy == 'first' then return ts .. uid end
  return uid
end

local function zset_of(vis, public, hidden)
  if vis == 'hidden' then return hidden end
  return public
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
local function append_entries(out, items, users)
  if #items == 0 then return out end
  local uids = {}
  for i = 1, #items, 2 do uids[#uids + 1] = string.sub(items[i], -19) end
  local profiles = redis.call('HMGET', users, unpack(uids))
  for i = 1, #uids do
    out[#out + 1] = items[2 * i - 1]
    out[#out + 1] = items[2 * i]
    out[#out + 1] = profiles[i] or ''
  end
  return out
end
