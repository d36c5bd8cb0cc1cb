-- profile_versions.lua: the profile version each of some learners has on a
-- season's current board (0 for a default one), or -1 for a learner who is
-- not on it: what a catch-up after Redis went back in time compares with
-- PostgreSQL (projection/catchup.py). Reads only.
--
-- KEYS[1]  current marker, KEYS[2] the version's public zset, KEYS[3] its users hash
-- ARGV (ProfileVersionsArgs, then a Learner each): expected_current, policy;
--          then padded user ids
-- Returns {'STALE', current} | {'MISSING'} | {'OK', version_1, version_2, ...}.
local current_key, public, users = KEYS[1], KEYS[2], KEYS[3]
local expected, policy = ARGV[ARG.expected_current], ARGV[ARG.policy]

local current = redis.call('GET', current_key)
if not current then return {'MISSING'} end
if current ~= expected then return {'STALE', current} end
local out = {'OK'}
for i = HEAD + 1, #ARGV do
  local p = load_profile(users, public, policy, ARGV[i])
  out[#out + 1] = p and tonumber(p.ver) or -1
end
return out
