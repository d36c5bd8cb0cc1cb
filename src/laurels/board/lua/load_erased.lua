-- load_erased.lua: a rebuild's tombstones. The season's erased set lives in
-- Redis only, so a board lost with it (a flush, a failover) is rebuilt
-- without it; yet a fast path may still hold, in memory, a completion of a
-- learner erased since, and apply it onto the new board. So a rebuild puts
-- back, from its snapshot, every learner erased who may have had a
-- completion in the season, and takes any of them off the version being
-- built (an apply that came first); from then on apply.lua refuses them.
-- Erasures after the snapshot reach the building version themselves
-- (erase.lua).
--
-- KEYS[1]  building marker, KEYS[2] the season's erased set,
-- KEYS[3]  public zset, KEYS[4] hidden zset, KEYS[5] users hash (of the version)
-- ARGV[1]  the version being built, ARGV[2] tie policy, ARGV[3..] padded user ids
-- Returns {'LOST'} | {'OK', learners taken off the version}.
local building_key, erased_key = KEYS[1], KEYS[2]
local public, hidden, users = KEYS[3], KEYS[4], KEYS[5]
local version, policy = ARGV[1], ARGV[2]
if redis.call('GET', building_key) ~= version then return {'LOST'} end

local removed = 0
for i = 3, #ARGV do
  redis.call('SADD', erased_key, ARGV[i])
  if remove_learner(public, hidden, users, policy, ARGV[i]) then removed = removed + 1 end
end
inherit_expiry(building_key, {erased_key, public, hidden, users}, 1)
return {'OK', removed}
