-- erase.lua: remove an erased learner from every version of a season board and
-- remember them, so no late apply (already in flight) can bring them back.
-- The tombstone is written even when the season has no board: a board built
-- later (from PostgreSQL, without them) must refuse a late apply too. The
-- season's other keys that may name them forget them too: the ties hash,
-- and the rank-event stream (an event of theirs goes; an event of another
-- learner who passed them is written again without them). The notifier
-- deletes each event once handled, so the stream holds only what is not
-- handled yet (at most its MAXLEN, read here a page at a time). They leave
-- every team board of each version too (_common.lua, Teams).
--
-- KEYS[1]  current marker, KEYS[2] building marker, KEYS[3] the season's erased set
-- KEYS[4]  the season's ties hash, KEYS[5] the season's rank-event stream
-- KEYS[6+3i .. 8+3i], for each target version i: public zset, hidden zset, users hash
-- ARGV (EraseArgs): expected_current, expected_building, uid (padded), policy,
--          erased_until_ms: when a tombstone of a season without a board expires (unix ms; the season's keys would)
-- Returns {'STALE', current, building} | {'MISSING'} | {'OK', targets changed}.
local current_key, building_key, erased_key = KEYS[1], KEYS[2], KEYS[3]
local ties_key, stream_key = KEYS[4], KEYS[5]
local expected_current, expected_building = ARGV[ARG.expected_current], ARGV[ARG.expected_building]
local uid, policy = ARGV[ARG.uid], ARGV[ARG.policy]
local PAGE = 500

-- The stream's events written without the learner (apply.lua's fields).
local function scrub_stream()
  local from = '-'
  while true do
    local page = redis.call('XRANGE', stream_key, from, '+', 'COUNT', PAGE)
    for _, entry in ipairs(page) do
      local f = {}
      for i = 1, #entry[2], 2 do f[entry[2][i]] = entry[2][i + 1] end
      local passed, kept, named = f.passed or '', {}, false
      for p in string.gmatch(passed, '[^,]+') do
        if p == uid then named = true else kept[#kept + 1] = p end
      end
      if f.uid == uid or named then
        redis.call('XDEL', stream_key, entry[1])
        if f.uid ~= uid and (#kept > 0 or f.top10 == '1') then
          redis.call('XADD', stream_key, '*', 'seq', f.seq, 'uid', f.uid, 'vis', f.vis,
                     'rank', f.rank, 'score', f.score, 'top10', f.top10,
                     'passed', table.concat(kept, ','))
        end
      end
    end
    if #page < PAGE then return end
    from = '(' .. page[#page][1]
  end
end

local function forget_elsewhere()
  redis.call('HDEL', ties_key, uid)
  scrub_stream()
end

local refused = check_versions(current_key, building_key, expected_current, expected_building)
if refused and refused[1] == 'MISSING' then
  redis.call('SADD', erased_key, uid)
  if redis.call('PTTL', erased_key) == -1 then redis.call('PEXPIREAT', erased_key, ARGV[ARG.erased_until_ms]) end
  forget_elsewhere()
  return refused
end
if refused then return refused end

redis.call('SADD', erased_key, uid)
forget_elsewhere()
local changed = 0
for i = 0, (#KEYS - 5) / 3 - 1 do
  local public, hidden, users = KEYS[6 + 3 * i], KEYS[7 + 3 * i], KEYS[8 + 3 * i]
  -- (out of every team first, with the points the teams hold for them)
  for _, k in ipairs(team_kinds(public)) do
    team_move(k, public, hidden, users, policy, uid, '')
  end
  if remove_learner(public, hidden, users, policy, uid) then
    changed = changed + 1
  end
end
inherit_expiry(current_key, KEYS, 3)
return {'OK', changed}
