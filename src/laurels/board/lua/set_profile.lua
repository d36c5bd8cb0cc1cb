-- set_profile.lua: project a learner's name and visibility onto a season board,
-- moving them between the public and hidden sets atomically.
--
-- KEYS[1]  current marker, KEYS[2] building marker, KEYS[3] the season's erased set
-- KEYS[4+3i .. 6+3i], for each target version i: public zset, hidden zset, users hash
-- ARGV (SetProfileArgs): expected_current, expected_building, uid (padded),
--          profile_version, visibility, name ('' = none), policy
-- Returns {'STALE', current, building} | {'MISSING'} | {'OK', targets changed}.
-- An older profile version than the stored one changes nothing, and neither
-- does any profile of an erased learner (a change that committed before the
-- erasure but arrives after it must not bring their name back).
local current_key, building_key, erased_key = KEYS[1], KEYS[2], KEYS[3]
local expected_current, expected_building = ARGV[ARG.expected_current], ARGV[ARG.expected_building]
local uid, profile_version = ARGV[ARG.uid], ARGV[ARG.profile_version]
local visibility, name, policy = ARGV[ARG.visibility], ARGV[ARG.name], ARGV[ARG.policy]

local refused = check_versions(current_key, building_key, expected_current, expected_building)
if refused then return refused end
if redis.call('SISMEMBER', erased_key, uid) == 1 then return {'OK', 0} end

local changed = 0
for i = 0, (#KEYS - 3) / 3 - 1 do
  local public, hidden, users = KEYS[4 + 3 * i], KEYS[5 + 3 * i], KEYS[6 + 3 * i]
  local p = load_profile(users, public, policy, uid)
  if p == nil then
    p = {ver = profile_version, vis = visibility, ts = '', name = name}
    store_profile(users, policy, uid, p)
    changed = changed + 1
  elseif tonumber(profile_version) > tonumber(p.ver) then
    local from, to = zset_of(p.vis, public, hidden), zset_of(visibility, public, hidden)
    if p.ts ~= '' and from ~= to then
      local member = member_of(policy, p.ts, uid)
      local score = redis.call('ZSCORE', from, member)
      if score then
        redis.call('ZREM', from, member)
        redis.call('ZADD', to, score, member)
      end
    end
    p.ver, p.vis, p.name = profile_version, visibility, name
    store_profile(users, policy, uid, p)
    changed = changed + 1
  end
end
inherit_expiry(current_key, KEYS, 4)
return {'OK', changed}
