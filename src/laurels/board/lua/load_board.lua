-- load_board.lua: add a rebuild's per-learner aggregates to the building
-- version. Live applies reach the building version meanwhile (for the
-- completions after the snapshot), so a learner may be on it already: the
-- aggregate is added to what is there, the latest completion time and the
-- newest profile win. Erased learners are skipped. On a `best` board the
-- higher of the two is kept, and its tie time (the earlier on a tie: the
-- earliest completion giving the best, apply.lua "Best").
--
-- KEYS[1]  building marker, KEYS[2] the season's erased set,
-- KEYS[3]  public zset, KEYS[4] hidden zset, KEYS[5] users hash (of the version)
-- ARGV (LoadBoardArgs, then a LoadRow each): version (being built), policy,
--          metric;
--          then per learner uid (padded), points (summed), ts (padded
--          completed_at offset), profile_version, visibility, name
--          (points below zero take back what reached the version live but
--          counts nothing in the snapshot; such a learner may leave the sets)
-- Returns {'LOST'} | {'OK', learners loaded, learners skipped as erased}.
local building_key, erased_key = KEYS[1], KEYS[2]
local public, hidden, users = KEYS[3], KEYS[4], KEYS[5]
local version, policy = ARGV[ARG.version], ARGV[ARG.policy]
local best = ARGV[ARG.metric] == 'best'
if redis.call('GET', building_key) ~= version then return {'LOST'} end

local erased = erased_among(erased_key, HEAD + 1, EACH_WIDTH, EACH.uid)

local loaded, skipped = 0, 0
for i = HEAD + 1, #ARGV, EACH_WIDTH do
  local uid, points, ts = ARGV[i + EACH.uid], tonumber(ARGV[i + EACH.points]), ARGV[i + EACH.ts]
  local profile_version = ARGV[i + EACH.profile_version]
  local visibility, name = ARGV[i + EACH.visibility], ARGV[i + EACH.name]
  if erased[uid] then
    skipped = skipped + 1
  else
    local p = load_profile(users, public, policy, uid)
    local score, on_board = 0, p ~= nil and p.ts ~= ''
    if on_board then
      local zset, member, stored_score = score_of(p, public, hidden, policy, uid)
      score = tonumber(stored_score or '0')
      redis.call('ZREM', zset, member)
    end
    if best then
      p = merge_profile(p, profile_version, visibility, name, '')
      if not on_board or -points < score then
        score, p.ts = -points, ts
      elseif -points == score and ts < p.ts then
        p.ts = ts
      end
      points = 0
    else
      p = merge_profile(p, profile_version, visibility, name, ts)
    end
    if score - points >= 0 then
      p.ts = ''  -- nothing of theirs counts (a completion voided in the snapshot)
    else
      redis.call('ZADD', zset_of(p.vis, public, hidden), score - points,
                 member_of(policy, p.ts, uid))
    end
    store_profile(users, policy, uid, p)
    loaded = loaded + 1
  end
end
inherit_expiry(building_key, {public, hidden, users}, 1)
return {'OK', loaded, skipped}
