-- apply.lua: apply one completion to every target version of a season board.
-- The idempotency bit and the score change happen in this one script, so a
-- crash can never mark a completion without scoring it (DESIGN.md, invariant 3).
--
-- KEYS[1]  current marker of the season (version readers use)
-- KEYS[2]  building marker (version being rebuilt, if any)
-- KEYS[3]  the season's set of erased learners (never scored again)
-- KEYS[4]  the season's notification stream (rank events for the projector)
-- KEYS[5+5i .. 9+5i], for each target version i:
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
-- ARGV[12] '1' when target 0 is the current version (then rank events are
--          computed on it: entering the top 10, passing learners in the top 100)
-- ARGV[13] the completion's seq (for the stream entry)
-- Returns {'STALE', current, building} when the caller's versions are out of
-- date, {'MISSING'} when the season has no board (never write a partial one),
-- else {'OK', number of targets it was newly applied to, visibility on the
-- current version ('' when not applied there)}.
local current_key, building_key, erased_key, stream_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local expected_current, expected_building = ARGV[1], ARGV[2]
local chunk, offset = ARGV[3], tonumber(ARGV[4])
local uid, points, ts = ARGV[5], tonumber(ARGV[6]), ARGV[7]
local profile_version, visibility, name = ARGV[8], ARGV[9], ARGV[10]
local policy = ARGV[11]
local first_is_current, seq = ARGV[12] == '1', ARGV[13]
local TOP, NOTIFY_MAX, OVERTAKEN_MAX = 100, 10, 10

local refused = check_versions(current_key, building_key, expected_current, expected_building)
if refused then return refused end

local erased = redis.call('SISMEMBER', erased_key, uid) == 1
local old_index, old_rank = nil, nil
local applied, current_vis = 0, ''
for i = 0, (#KEYS - 4) / 5 - 1 do
  local public, hidden, users = KEYS[5 + 5 * i], KEYS[6 + 5 * i], KEYS[7 + 5 * i]
  local chunks, bitmap = KEYS[8 + 5 * i], KEYS[9 + 5 * i]
  local ranked = first_is_current and i == 0
  -- The chunk is tracked whenever its bit is set (an erased learner's too),
  -- so dropping or expiring the version finds every bitmap.
  local fresh = redis.call('SETBIT', bitmap, offset, 1) == 0
  if fresh then redis.call('SADD', chunks, chunk) end
  if fresh and not erased then
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
        if ranked and old_zset == public then
          old_index = redis.call('ZRANK', public, old_member)
          old_rank = old_index + 1
          if policy == 'shared' then  -- the board's rank: ties share it
            old_rank = redis.call('ZCOUNT', public, '-inf', '(' .. score) + 1
          end
        end
        redis.call('ZREM', old_zset, old_member)
      end
      if tonumber(profile_version) > tonumber(p.ver) then
        p.ver, p.vis, p.name = profile_version, visibility, name
      end
    end
    if ts > p.ts then p.ts = ts end
    local new_score, new_member = score - points, member_of(policy, p.ts, uid)
    redis.call('ZADD', zset_of(p.vis, public, hidden), new_score, new_member)
    redis.call('HSET', users, uid, format_profile(p))
    if ranked then
      current_vis = p.vis
      if p.vis ~= 'hidden' then
        local new_index = redis.call('ZRANK', public, new_member)
        local new_rank = new_index + 1
        if policy == 'shared' then
          new_rank = redis.call('ZCOUNT', public, '-inf', '(' .. new_score) + 1
        end
        local entered = new_rank <= NOTIFY_MAX and (old_rank == nil or old_rank > NOTIFY_MAX)
        -- Learners passed: those now just below who were ahead before and
        -- now have a strictly lower score (a tie passes nobody). A learner new
        -- to the public board comes from below all of it: entering above
        -- someone passes them.
        local passed = {}
        local from = old_index or TOP
        if from > new_index and new_index < TOP - 1 then
          local last = math.min(from, new_index + OVERTAKEN_MAX, TOP - 1)
          local below = redis.call('ZRANGE', public, new_index + 1, last, 'WITHSCORES')
          for j = 1, #below, 2 do
            if tonumber(below[j + 1]) > new_score then
              passed[#passed + 1] = string.sub(below[j], -19)
            end
          end
        end
        if entered or #passed > 0 then
          redis.call('XADD', stream_key, 'MAXLEN', '~', 100000, '*', 'seq', seq, 'uid', uid,
                     'vis', p.vis, 'name', p.name, 'rank', new_rank,
                     'score', -new_score, 'top10', entered and '1' or '0',
                     'passed', table.concat(passed, ','))
        end
      end
    end
  end
end
inherit_expiry(current_key, KEYS, 3)
return {'OK', applied, current_vis}
