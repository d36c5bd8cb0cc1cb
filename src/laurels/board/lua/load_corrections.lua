-- load_corrections.lua: a rebuild's snapshot of corrected completions onto
-- the version being built, unless a newer state reached it live (HSETNX): a
-- correction projected later converges from there (apply.lua).
--
-- KEYS[1]  building marker, KEYS[2] the version's corrections hash
-- ARGV (VersionArgs, then a LoadCorrection each): version (being built);
--          then per completion seq, correction (its number), counts ('1')
-- Returns {'LOST'} when the version is no longer the one being built, else
-- {'OK', the number of states written}. A finalized season's hash takes the
-- building marker's expiry, like every key of the version (begin_build.lua).
local building_key, corrections = KEYS[1], KEYS[2]
if redis.call('GET', building_key) ~= ARGV[ARG.version] then return {'LOST'} end
local written = 0
for i = HEAD + 1, #ARGV, EACH_WIDTH do
  written = written + redis.call('HSETNX', corrections, ARGV[i + EACH.seq],
    format_correction(ARGV[i + EACH.correction], ARGV[i + EACH.counts] == '1'))
end
inherit_expiry(building_key, {corrections}, 1)
return {'OK', written}
