-- load_erased.lua: a rebuild's tombstones. The season's erased set lives in
-- Redis only, so a board lost with it (a flush, a failover) is rebuilt
-- without it, and a board rolled back (an older snapshot, a lagging
-- replica; the epoch watch rebuilds it) may hold erased learners again;
-- meanwhile a fast path may still hold, in memory, a completion of a
-- learner erased since, and apply it. So a rebuild puts back, from its
-- snapshot, every learner erased who may have had a completion in the
-- season, and takes any of them off the version being built (an apply that
-- came first) and off the current version, if any; from then on apply.lua
-- refuses them. Erasures after the snapshot reach both versions themselves
-- (erase.lua).
--
-- KEYS[1]  building marker, KEYS[2] current marker, KEYS[3] the season's erased set,
-- KEYS[4+3i .. 6+3i], for the version being built (i = 0) and the current
--          version (i = 1, when there is one): public zset, hidden zset, users hash
-- ARGV (LoadErasedArgs, then a Learner each): version (being built), current
--          ('' when none), policy; then padded user ids
-- Returns {'LOST'} | {'OK', learners taken off a version}.
local building_key, current_key, erased_key = KEYS[1], KEYS[2], KEYS[3]
local version, current, policy = ARGV[ARG.version], ARGV[ARG.current], ARGV[ARG.policy]
if redis.call('GET', building_key) ~= version then return {'LOST'} end
local targets = 1
if #KEYS > 6 and (redis.call('GET', current_key) or '') == current then targets = 2 end

local removed = 0
for i = HEAD + 1, #ARGV do
  redis.call('SADD', erased_key, ARGV[i])
  for t = 0, targets - 1 do
    if remove_learner(KEYS[4 + 3 * t], KEYS[5 + 3 * t], KEYS[6 + 3 * t], policy, ARGV[i]) then
      removed = removed + 1
    end
  end
end
inherit_expiry(building_key, KEYS, 3)
return {'OK', removed}
