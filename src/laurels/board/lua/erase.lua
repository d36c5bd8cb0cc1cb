-- erase.lua: remove an erased learner from every version of a season board and
-- remember them, so no late apply (already in flight) can bring them back.
-- The tombstone is written even when the season has no board: a board built
-- later (from PostgreSQL, without them) must refuse a late apply too.
--
-- KEYS[1]  current marker, KEYS[2] building marker, KEYS[3] the season's erased set
-- KEYS[4+3i .. 6+3i], for each target version i: public zset, hidden zset, users hash
-- ARGV[1]  expected current version, ARGV[2] expected building version
-- ARGV[3]  padded user id, ARGV[4] tie policy, ARGV[5] when a tombstone of a
--          season without a board expires (unix ms; the season's keys would)
-- Returns {'STALE', current, building} | {'MISSING'} | {'OK', targets changed}.
local current_key, building_key, erased_key = KEYS[1], KEYS[2], KEYS[3]
local expected_current, expected_building = ARGV[1], ARGV[2]
local uid, policy = ARGV[3], ARGV[4]

local refused = check_versions(current_key, building_key, expected_current, expected_building)
if refused and refused[1] == 'MISSING' then
  redis.call('SADD', erased_key, uid)
  if redis.call('PTTL', erased_key) == -1 then redis.call('PEXPIREAT', erased_key, ARGV[5]) end
  return refused
end
if refused then return refused end

redis.call('SADD', erased_key, uid)
local changed = 0
for i = 0, (#KEYS - 3) / 3 - 1 do
  if remove_learner(KEYS[4 + 3 * i], KEYS[5 + 3 * i], KEYS[6 + 3 * i], policy, uid) then
    changed = changed + 1
  end
end
inherit_expiry(current_key, KEYS, 3)
return {'OK', changed}
