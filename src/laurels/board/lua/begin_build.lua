-- begin_build.lua: allocate a new board version and mark it as building, so
-- every apply from now on also goes to it (DESIGN.md, Rebuild).
--
-- KEYS[1]  building marker, KEYS[2] version counter
-- Returns {new version, abandoned building version or ''}.
local building_key, counter_key = KEYS[1], KEYS[2]
local abandoned = redis.call('GET', building_key) or ''
local version = tostring(redis.call('INCR', counter_key))
redis.call('SET', building_key, version)
return {version, abandoned}
