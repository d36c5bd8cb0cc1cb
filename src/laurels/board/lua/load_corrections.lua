-- load_corrections.lua: a rebuild's snapshot of corrected completions onto
-- the version being built, unless a newer state reached it live (HSETNX): a
-- correction projected later converges from there (apply.lua).
--
-- KEYS[1]  building marker, KEYS[2] the version's corrections hash
-- ARGV[1]  the version being built,
-- then 3 values per completion: seq, correction number, '1' if it counts
-- Returns {'LOST'} when the version is no longer the one being built, else
-- {'OK', the number of states written}. A finalized season's hash takes the
-- building marker's expiry, like every key of the version (begin_build.lua).
local building_key, corrections = KEYS[1], KEYS[2]
if redis.call('GET', building_key) ~= ARGV[1] then return {'LOST'} end
local written = 0
for i = 2, #ARGV, 3 do
  written = written + redis.call('HSETNX', corrections, ARGV[i],
                                 format_correction(ARGV[i + 1], ARGV[i + 2] == '1'))
end
inherit_expiry(building_key, {corrections}, 1)
return {'OK', written}
