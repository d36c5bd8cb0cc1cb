-- abort_build.lua: stop sending applies to a failed build (if it is still ours).
--
-- KEYS[1]  building marker
-- ARGV (VersionArgs): version, the version that was being built
-- Returns 1 when the marker was cleared, 0 when another build owns it.
local building_key, version = KEYS[1], ARGV[ARG.version]
if redis.call('GET', building_key) == version then
  redis.call('DEL', building_key)
  return 1
end
return 0
