-- mark_ties.lua: mark learners a void is about to be projected for (under the
-- `first` policy, or on a `best` board: apply.lua, "Ties" and "Best"), before
-- the caller reads their fallback from PostgreSQL. Each learner's count is created if absent (at
-- the server's clock in microseconds, so a count made again after the hash
-- expired never repeats an old token); every apply to them bumps it; the
-- void's apply goes through only if the count is still the token returned
-- here.
--
-- An erased learner (in the season's erased set) is never marked: their
-- void changes nothing (apply.lua), and no key may name them after their
-- erasure (tests/invariants.py).
--
-- KEYS[1]  the season's ties hash, KEYS[2] the season's erased set
-- ARGV (MarkTiesArgs, then a Learner each): ttl_ms, how long the hash lives
--          after this call (a mark outlived by its void only makes that void
--          read again); then padded user ids
-- Returns the token (the count) of each learner, in order ('' if erased).
local ties_key, erased_key, ttl_ms = KEYS[1], KEYS[2], ARGV[ARG.ttl_ms]

local now = redis.call('TIME')
local start = now[1] .. string.format('%06d', tonumber(now[2]))
local out = {}
for i = HEAD + 1, #ARGV do
  if redis.call('SISMEMBER', erased_key, ARGV[i]) == 1 then
    out[#out + 1] = ''
  else
    redis.call('HSETNX', ties_key, ARGV[i], start)
    out[#out + 1] = redis.call('HGET', ties_key, ARGV[i])
  end
end
redis.call('PEXPIRE', ties_key, ttl_ms)
return out
