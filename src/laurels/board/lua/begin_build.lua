-- begin_build.lua: mark a new board version (its number allocated by the
-- caller's INCR of the version counter) as building, so every apply from
-- now on also goes to it (docs/design.md, Rebuild); record, in the same
-- step, the closed seasons it will be built from their archived standings
-- (a long board's parts: apply.lua treats their completions as counted).
--
-- KEYS[1]  building marker, KEYS[2] set of live versions, KEYS[3] current marker
-- KEYS[4]  the new version's parts set, KEYS[5] the version counter (for its expiry)
-- ARGV (VersionArgs, then a Part each): version, the new one; then its parts
--          (closed seasons' names)
-- Returns {current version or '', versions to drop...}: every live version
-- that is neither current nor new (an abandoned build, or an old board whose
-- builder died before dropping it).
local building_key, versions_key, current_key, parts_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local version = ARGV[ARG.version]
local current = redis.call('GET', current_key) or ''
redis.call('SET', building_key, version)
if #ARGV > HEAD then
  for i = HEAD + 1, #ARGV, 5000 do
    redis.call('SADD', parts_key, unpack(ARGV, i, math.min(i + 4999, #ARGV)))
  end
end
local out = {current}
for _, v in ipairs(redis.call('SMEMBERS', versions_key)) do
  if v ~= current then out[#out + 1] = v end
end
redis.call('SADD', versions_key, version)
inherit_expiry(current_key, KEYS, 1)  -- a finalized season's rebuild expires with it
return out
