-- load_corrections.lua: a rebuild's snapshot of corrected completions onto
-- the version being built, unless a newer state reached it live (HSETNX): a
-- correction projected later converges from there (apply.lua).
--
-- KEYS[1]  the version's corrections hash
-- ARGV     3 values per completion: seq, correction number, '1' if it counts
-- Returns the number of states written.
local corrections = KEYS[1]
local written = 0
for i = 1, #ARGV, 3 do
  written = written + redis.call('HSETNX', corrections, ARGV[i],
                                 format_correction(ARGV[i + 1], ARGV[i + 2] == '1'))
end
return written
