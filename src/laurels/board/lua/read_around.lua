-- read_around.lua: a learner's rank and the public entries around them.
-- O(log N + radius): ranks come from ZRANK/ZCOUNT, never from a scan.
--
-- KEYS[1]  current marker, KEYS[2] public zset, KEYS[3] hidden zset, KEYS[4] users hash,
-- KEYS[5]  the season's erased set
-- ARGV (ReadAroundArgs): expected_current, uid (padded), radius, policy
-- Returns {'MISSING'} | {'STALE', current} | {'NOT_RANKED'} |
--   {'OK', own profile, own score, own index, better count, slice start index,
--    slice first better count, member1, score1, profile1, ...}
-- "own index" is the learner's position in the public order (for a hidden
-- learner: where they would stand); "better count" is how many public
-- learners have a strictly higher score (shared rank = better count + 1).
local current_key, public, hidden, users, erased = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local expected_current, uid = ARGV[ARG.expected_current], ARGV[ARG.uid]
local radius, policy = tonumber(ARGV[ARG.radius]), ARGV[ARG.policy]

local current = redis.call('GET', current_key)
if not current then return {'MISSING'} end
if current ~= expected_current then return {'STALE', current} end

local p = load_profile(users, public, policy, uid)
if p == nil or p.ts == '' or redis.call('SISMEMBER', erased, uid) == 1 then
  return {'NOT_RANKED'}
end
local own_set, member, score = score_of(p, public, hidden, policy, uid)
if not score then return {'NOT_RANKED'} end

local better = redis.call('ZCOUNT', public, '-inf', '(' .. score)
local index
if own_set == public then
  index = redis.call('ZRANK', public, member)
else
  -- Binary search among the public learners tied on this score for the
  -- first member ordered after ours.
  local lo = better
  local hi = better + redis.call('ZCOUNT', public, score, score)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', public, mid, mid)[1]
    if m < member then lo = mid + 1 else hi = mid end
  end
  index = lo
end

local first = index - radius
if first < 0 then first = 0 end
local last = index + radius
if own_set ~= public then last = last - 1 end
local items = {}
if last >= first then items = redis.call('ZRANGE', public, first, last, 'WITHSCORES') end
local first_better = 0
if #items > 0 then first_better = redis.call('ZCOUNT', public, '-inf', '(' .. items[2]) end

local out = {'OK', format_profile(p), score, index, better, first, first_better}
return append_entries(out, items, users, erased)
