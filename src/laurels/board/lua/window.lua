-- window.lua: a rolling window's marker (board/keys.py SeasonKeys.window;
-- apply.lua, "Windows"; lifecycle/windows.py moves it).
--
-- KEYS[1] current marker, KEYS[2] building marker, KEYS[3] the window marker
-- ARGV (WindowArgs): op, day ('YYYY-MM-DD', compared as text)
-- - 'state': nothing changes.
-- - 'begin': a build sets the marker where there is none (from, done and
--   forgot all `day`): the range its snapshot reads then starts at `from`.
-- - 'advance': `from` moves on to `day` (never back), unless a version is
--   being built (its snapshot's range must not move under it: the caller
--   tries again once it is switched) or there is no board.
-- - 'done', 'forgot': that field moves on to `day` (never back, never past
--   `from`).
-- Returns {status, current, building, from, done, forgot} ('' for absent);
-- status 'OK', or 'BUSY' for an advance refused.
local current = redis.call('GET', KEYS[1]) or ''
local building = redis.call('GET', KEYS[2]) or ''
local op, day = ARGV[ARG.op], ARGV[ARG.day]
local function state(status)
  local f = redis.call('HMGET', KEYS[3], 'from', 'done', 'forgot')
  return {status, current, building, f[1] or '', f[2] or '', f[3] or ''}
end
local from = redis.call('HGET', KEYS[3], 'from')
if op == 'begin' then
  if not from then redis.call('HSET', KEYS[3], 'from', day, 'done', day, 'forgot', day) end
elseif op == 'advance' then
  if building ~= '' or current == '' or not from then return state('BUSY') end
  if day > from then redis.call('HSET', KEYS[3], 'from', day) end
elseif op == 'done' or op == 'forgot' then
  local was = redis.call('HGET', KEYS[3], op)
  if from and was and day > was and day <= from then redis.call('HSET', KEYS[3], op, day) end
end
return state('OK')
