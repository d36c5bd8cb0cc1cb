-- read_top.lua: `limit` public entries of a season from the top, or after a
-- position (a cursor: score and member), in one round trip.
--
-- KEYS[1]  current marker, KEYS[2] public zset, KEYS[3] users hash (of that version),
-- KEYS[4]  the season's erased set
-- ARGV (ReadTopArgs): expected_current, limit, after_score (the stored score
--          of the position to start after, '' for the top), after_member
-- Returns {'MISSING'} | {'STALE', current} |
--         {'OK', total, start, better, last_member, last_score,
--          member1, score1, profile1, member2, ...}: `start` is the index of the
--         page's first entry, `better` how many entries score strictly better
--         than it, and last_* the page's last entry before erased learners are
--         left out ('' on an empty page).
local current_key, public, users, erased = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local expected_current, limit = ARGV[ARG.expected_current], tonumber(ARGV[ARG.limit])
local after_score, after_member = ARGV[ARG.after_score], ARGV[ARG.after_member]

local current = redis.call('GET', current_key)
if not current then return {'MISSING'} end
if current ~= expected_current then return {'STALE', current} end

-- The first index strictly after (after_score, after_member), in the set's
-- order (score, then member): count the better scores, then bisect the
-- members tied at that score. The position need not be on the board any more.
local start = 0
if after_score ~= '' then
  local lo = redis.call('ZCOUNT', public, '-inf', '(' .. after_score)
  local hi = lo + redis.call('ZCOUNT', public, after_score, after_score)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if redis.call('ZRANGE', public, mid, mid)[1] <= after_member then lo = mid + 1 else hi = mid end
  end
  start = lo
end

local items = redis.call('ZRANGE', public, start, start + limit - 1, 'WITHSCORES')
local better, last_member, last_score = 0, '', ''
if #items > 0 then
  better = redis.call('ZCOUNT', public, '-inf', '(' .. items[2])
  last_member, last_score = items[#items - 1], items[#items]
end
local out = {'OK', redis.call('ZCARD', public), start, better, last_member, last_score}
return append_entries(out, items, users, erased)
