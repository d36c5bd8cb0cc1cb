-- read_top.lua: the best `limit` public entries of a season, in one round trip.
--
-- KEYS[1]  current marker, KEYS[2] public zset, KEYS[3] users hash (of that version),
-- KEYS[4]  the season's erased set
-- ARGV[1]  expected current version, ARGV[2] limit
-- Returns {'MISSING'} | {'STALE', current} |
--         {'OK', total, member1, score1, profile1, member2, ...}.
local current_key, public, users, erased = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local expected_current, limit = ARGV[1], tonumber(ARGV[2])

local current = redis.call('GET', current_key)
if not current then return {'MISSING'} end
if current ~= expected_current then return {'STALE', current} end

local out = {'OK', redis.call('ZCARD', public)}
local items = redis.call('ZRANGE', public, 0, limit - 1, 'WITHSCORES')
return append_entries(out, items, users, erased)
