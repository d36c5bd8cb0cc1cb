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
