-- scores.lua: the stored scores of some learners on a season's current board.
--
-- KEYS[1]  current marker, KEYS[2] public zset, KEYS[3] hidden zset, KEYS[4] users hash
-- ARGV[1]  expected current version, ARGV[2] tie policy, ARGV[3..] padded user ids
-- Returns {'MISSING'} | {'STALE', current} |
--         {'OK', score1, profile1, score2, profile2, ...} with each score as
--         stored (minus the total), or '' for a learner who has no score on
--         this board, and the stored profile ('' when none).
local current_key, public, hidden, users = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local expected_current, policy = ARGV[1], ARGV[2]

local current = redis.call('GET', current_key)
if not current then return {'MISSING'} end
if current ~= expected_current then return {'STALE', current} end

local out = {'OK'}
for i = 3, #ARGV do
  local uid = ARGV[i]
  local raw = redis.call('HGET', users, uid)
  local p = parse_profile(raw)
  local score = false
  if p and p.ts ~= '' then
    score = redis.call('ZSCORE', zset_of(p.vis, public, hidden), member_of(policy, p.ts, uid))
  end
  out[#out + 1] = score or ''
  out[#out + 1] = raw or ''
end
return out
