-- mark_ties.lua: mark learners a void is about to be projected for under the
-- `first` policy (apply.lua, "Ties"), before the caller reads their fallback
-- tie time from PostgreSQL. Each learner's count is created if absent (at
-- the server's clock in microseconds, so a count made again after the hash
-- expired never repeats an old token); every apply to them bumps it; the
-- void's apply goes through only if the count is still the token returned
-- here.
--
-- KEYS[1]  the season's ties hash
-- ARGV[1]  how long the hash lives after this call (ms): a mark outlived by
--          its void only makes that void read again
-- ARGV[2..] padded user ids
-- Returns the token (the count) of each learner, in order.
local ties_key, ttl_ms = KEYS[1], ARGV[1]

local now = redis.call('TIME')
local start = now[1] .. string.format('%06d', tonumber(now[2]))
local out = {}
for i = 2, #ARGV do
  redis.call('HSETNX', ties_key, ARGV[i], start)
  out[#out + 1] = redis.call('HGET', ties_key, ARGV[i])
end
redis.call('PEXPIRE', ties_key, ttl_ms)
return out
