-- switch.lua: make the built version current in one atomic step.
--
-- KEYS[1]  current marker, KEYS[2] building marker
-- ARGV (VersionArgs): version, the version that was built
-- Returns {'OK', previous current version or ''} or {'LOST', building} when
-- another builder took over the building marker.
local current_key, building_key = KEYS[1], KEYS[2]
local version = ARGV[ARG.version]
local building = redis.call('GET', building_key) or ''
if building ~= version then return {'LOST', building} end
local previous = redis.call('GET', current_key) or ''
redis.call('SET', current_key, version)
redis.call('DEL', building_key)
return {'OK', previous}
