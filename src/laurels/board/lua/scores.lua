-- scores.lua: some learners' stored scores on a season's current board, read
-- by id (verify; group and friends boards), never scanning the board.
--
-- KEYS[1]  current marker, KEYS[2] public zset, KEYS[3] hidden zset, KEYS[4] users hash
-- ARGV (ScoresArgs, then a Learner each): expected_current, policy, with_rank
--          ('rank' to add each learner's rank on the whole public board, else
--          ''); then padded user ids
-- Returns {'MISSING'} | {'STALE', current} |
--         {'OK', score1, profile1, [rank1,] score2, ...}: per learner the score
--         as stored (minus the total; '' when they have none on this board),
--         the stored profile ('' when none: the default profile, stored
--         for nobody under `shared`, _common.lua), and with 'rank' their rank on
--         the public board (for a hidden learner, the rank they would hold,
--         pushing nobody down; '' when no score).
local current_key, public, hidden, users = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local expected_current, policy = ARGV[ARG.expected_current], ARGV[ARG.policy]
local with_rank = ARGV[ARG.with_rank] == 'rank'

local current = redis.call('GET', current_key)
if not current then return {'MISSING'} end
if current ~= expected_current then return {'STALE', current} end

local function board_rank(p, member, score)
  local better = redis.call('ZCOUNT', public, '-inf', '(' .. score)
  if policy == 'shared' then return better + 1 end
  if p.vis ~= 'hidden' then return redis.call('ZRANK', public, member) + 1 end
  -- Among equal scores the member orders ties (core/ranking.py): count the public
  -- learners tied with this one who come first.
  local before = 0
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', public, score, score)) do
    if m < member then before = before + 1 end
  end
  return better + before + 1
end

local out = {'OK'}
for i = HEAD + 1, #ARGV do
  local uid = ARGV[i]
  local p = load_profile(users, public, policy, uid)
  local score, rank = false, ''
  if p and p.ts ~= '' then
    local _, member, stored_score = score_of(p, public, hidden, policy, uid)
    score = stored_score
    if score and with_rank then rank = board_rank(p, member, score) end
  end
  out[#out + 1] = score or ''
  out[#out + 1] = p and p.stored or ''
  if with_rank then out[#out + 1] = rank end
end
return out
