-- team_read.lua: a team kind's board on the current version, read
-- (_common.lua, Teams; board/teams.py). Ties share a rank.
--
-- KEYS[1] the season's current marker, KEYS[2] the version's teams hash
-- ARGV (TeamReadArgs): op, version, kind, offset, limit, uid
-- - 'top': {'OK', total, then group, score, members, rank for each of the
--   `limit` teams from `offset`}
-- - 'of': {'OK', total, points, then group, score, members, rank, counted
--   ('1' when the learner's points count in it: on a `top` kind, when they
--   are among its best) for each group of the kind the learner counts in}
-- Returns {'STALE', current} when `version` is not current, {'ABSENT'}
-- when the kind's board is not ready on it.
local current = redis.call('GET', KEYS[1]) or ''
local op, version, kind = ARGV[ARG.op], ARGV[ARG.version], ARGV[ARG.kind]
if current ~= version then return {'STALE', current} end
local state = redis.call('HGET', KEYS[2], kind) or ''
local agg, top = string.match(state, '^(%a+):(%d+):%d+:1$')
if not agg then return {'ABSENT'} end
local base = string.sub(KEYS[2], 1, -7) .. ':team:' .. kind
local z = base .. ':z'
local out = {'OK', redis.call('ZCARD', z)}

local function team(g, score)
  out[#out + 1] = g
  out[#out + 1] = score
  out[#out + 1] = redis.call('HGET', base .. ':c', g) or '0'
  out[#out + 1] = redis.call('ZCOUNT', z, '-inf', '(' .. score) + 1
end

if op == 'top' then
  local offset = tonumber(ARGV[ARG.offset])
  local page = redis.call('ZRANGE', z, offset, offset + tonumber(ARGV[ARG.limit]) - 1,
                          'WITHSCORES')
  for i = 1, #page, 2 do team(page[i], page[i + 1]) end
  return out
end
local uid = ARGV[ARG.uid]
out[#out + 1] = redis.call('HGET', base .. ':p', uid) or '0'
for g in string.gmatch(redis.call('HGET', base .. ':m', uid) or '', '[^,]+') do
  local score = redis.call('ZSCORE', z, g)
  if score then
    team(g, score)
    local counted = '1'
    if agg == 'top' then
      local at = redis.call('ZREVRANK', base .. ':t:' .. g, uid)
      if not at or at >= tonumber(top) then counted = '0' end
    end
    out[#out + 1] = counted
  end
end
return out
