-- team.lua: a team kind's board on one version of a season's board: its
-- state, its beginning (filled from PostgreSQL by team_members.lua), its end
-- (ready to read), its drop (_common.lua, Teams; board/teams.py).
--
-- KEYS[1] the season's current marker, KEYS[2] the version's teams hash
-- ARGV (TeamArgs): op, version, kind, aggregate, top, applied
-- - 'state': {'OK', current, the kind's state or ''}
-- - 'begin': its keys dropped, the kind marked filling at `applied` (the
--   membership count PostgreSQL had when the fill read it)
-- - 'finish': marked ready, if still filling at `applied`
-- - 'drop': its keys and its state gone
-- Returns {'STALE', current} when `version` is not the current one (but for
-- 'state' and 'drop').
local current = redis.call('GET', KEYS[1]) or ''
local op, version, kind = ARGV[ARG.op], ARGV[ARG.version], ARGV[ARG.kind]
local state = redis.call('HGET', KEYS[2], kind) or ''
if op == 'state' then return {'OK', current, state} end
local base = string.sub(KEYS[2], 1, -7) .. ':team:' .. kind  -- (less ':teams')

local function drop()
  for _, g in ipairs(redis.call('HKEYS', base .. ':c')) do
    redis.call('DEL', base .. ':t:' .. g)
  end
  redis.call('DEL', base .. ':m', base .. ':p', base .. ':z', base .. ':s', base .. ':c')
end

if op == 'drop' then
  drop()
  redis.call('HDEL', KEYS[2], kind)
  return {'OK', current, ''}
end
if current ~= version then return {'STALE', current} end
local head = ARGV[ARG.aggregate] .. ':' .. ARGV[ARG.top] .. ':' .. ARGV[ARG.applied]
if op == 'begin' then
  drop()
  redis.call('HSET', KEYS[2], kind, head .. ':0')
  team_expiry(KEYS[1], KEYS[2], nil)  -- (a finalized season's: it expires with it)
elseif op == 'finish' and state == head .. ':0' then
  redis.call('HSET', KEYS[2], kind, head .. ':1')
end
return {'OK', current, redis.call('HGET', KEYS[2], kind) or ''}
