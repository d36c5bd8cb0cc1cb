-- begin_build.lua: allocate a new board version and mark it as building, so
-- every apply from now on also goes to it (docs/design.md, Rebuild).
--
-- KEYS[1]  building marker, KEYS[2] version counter, KEYS[3] set of live versions
-- KEYS[4]  current marker
-- Returns {new version, current version or '', versions to drop...}: every
-- live version that is neither current nor new (an abandoned build, or an
-- old board whose builder died before dropping it).
local building_key, counter_key, versions_key, current_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local version = tostring(redis.call('INCR', counter_key))
local current = redis.call('GET', current_key) or ''
redis.call('SET', building_key, version)
local out = {version, current}
for _, v in ipairs(redis.call('SMEMBERS', versions_key)) do
  if v ~= current then out[#out + 1] = v end
end
redis.call('SADD', versions_key, version)
inherit_expiry(current_key, KEYS, 1)  -- a finalized season's rebuild expires with it
return out
