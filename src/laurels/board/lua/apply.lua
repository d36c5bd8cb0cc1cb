-- apply.lua: apply one completion to every target version of a season board.
-- The idempotency bit and the score change happen in this one script, so a
-- crash can never mark a completion without scoring it (DESIGN.md, invariant 3).
--
-- KEYS[1]  current marker of the season (version readers use)
-- KEYS[2]  building marker (version being rebuilt, if any)
-- KEYS[3]  the season's set of erased learners (never scored again)
-- KEYS[4+5i .. 8+5i], for each target version i:
--          public zset, hidden zset, users hash, chunks set, applied bitmap
-- ARGV[1]  expected current version ('' when none)
-- ARGV[2]  expected building version ('' when none)
-- ARGV[3]  bitmap (chunk) id of the completion's seq
-- ARGV[4]  bit offset of the seq in that bitmap
-- ARGV[5]  padded user id
-- ARGV[6]  points
-- ARGV[7]  padded microseconds of completed_at since the season start
-- ARGV[8]  profile version, ARGV[9] visibility, ARGV[10] display name ('' = none)
-- ARGV[11] tie policy
-- Returns {'STALE', current, building} when the caller's versions are out of
-- date, {'MISSING'} when the season has no board (never write a partial one),
-- else {'OK', number of targets it was newly applied to}.
local current_key, building_key, erased_key = KEYS[1], KEYS[2], KEYS[3]
local expected_current, expected_building = ARGV[1], ARGV[2]
local chunk, offset = ARGV[3], tonumber(ARGV[4])
local uid, points, ts = ARGV[5], tonumber(ARGV[6]), ARGV[7]
local profile_version, visibility, name = ARGV[8], ARGV[9], ARGV[10]
local policy = ARGV[11]

local current = redis.call('GET', current_key) or ''
local building = redis.call('GET', building_key) or ''
if current ~= expected_current or building ~= expected_building then
  return {'STALE', current, building}
end
if current == '' and building == '' then return {'MISSING'} end

local erased = redis.call('SISMEMBER', erased_key, uid) == 1
local applied = 0
for i = 0, (#KEYS - 3) / 5 - 1 do
  local public, hidden, users = KEYS[4 + 5 * i], KEYS[5 + 5 * i], KEYS[6 + 5 * i]
  local chunks, bitmap = KEYS[7 + 5 * i], KEYS[8 + 5 * i]
  if redis.call('SETBIT', bitmap, offset, 1) == 0 and not erased then
    redis.call('SADD', chunks, chunk)
    applied = applied + 1
    local p = parse_profile(redis.call('HGET', users, uid))
    local score = 0
    if p == nil then
      p = {ver = profile_version, vis = visibility, ts = '', name = name}
    else
      if p.ts ~= '' then
        local old_zset = zset_of(p.vis, public, hidden)
        local old_member = member_of(policy, p.ts, uid)
        score = tonumber(redis.call('ZSCORE', old_zset, old_member) or '0')
        redis.call('ZREM', old_zset, old_member)
      end
      if tonumber(profile_version) > tonumber(p.ver) then
        p.ver, p.vis, p.name = profile_version, visibility, name
      end
    end
    if ts > p.ts then p.ts = ts end
    redis.call('ZADD', zset_of(p.vis, public, hidden), score - points, member_of(policy, p.ts, uid))
    redis.call('HSET', users, uid, format_profile(p))
  end
end
return {'OK', applied}
