-- merge_fields.lua: merge_bits.lua for a board of a kind, whose version
-- keeps its idempotency bits in one hash (board/keys.py, BOARD_CHUNK_BITS): OR a
-- rebuild's bits of many chunks into the version being built, atomically,
-- and say which were set already (an apply reached them live first).
--
-- KEYS[1]  building marker, KEYS[2] the version's bits hash
-- ARGV (MergeFieldsArgs, then a Field each): version (being built); then
--          per chunk its id and its bitmap (a byte's bits from its high end)
-- Returns {'LOST'} when the version is no longer the one being built, else
-- {'OK', seq...}: the seqs whose bit was set in both (usually none).
local building_key, hash = KEYS[1], KEYS[2]
if redis.call('GET', building_key) ~= ARGV[ARG.version] then return {'LOST'} end
local out = {'OK'}
local width = 2 ^ BOARD_CHUNK_BITS
-- Every chunk's stored bits in one HMGET and the merged ones in one HSET:
-- a version being built usually holds none of them yet (nothing to OR).
local chunks, pairs_ = {}, {}
for i = HEAD + 1, #ARGV, EACH_WIDTH do
  chunks[#chunks + 1] = ARGV[i + EACH.chunk]
end
if #chunks == 0 then return out end
local stored = redis.call('HMGET', hash, unpack(chunks))
for n, chunk in ipairs(chunks) do
  local ours = ARGV[HEAD + (n - 1) * EACH_WIDTH + 1 + EACH.bits]
  local theirs = stored[n]
  if not theirs then
    pairs_[#pairs_ + 1] = chunk
    pairs_[#pairs_ + 1] = ours
  else
    local merged = {}
    for j = 1, math.max(#ours, #theirs) do
      local a, b = string.byte(ours, j) or 0, string.byte(theirs, j) or 0
      local both = bit.band(a, b)
      if both ~= 0 then
        for k = 0, 7 do
          if bit.band(both, bit.rshift(0x80, k)) ~= 0 then
            out[#out + 1] = tonumber(chunk) * width + (j - 1) * 8 + k
          end
        end
      end
      merged[j] = string.char(bit.bor(a, b))
    end
    pairs_[#pairs_ + 1] = chunk
    pairs_[#pairs_ + 1] = table.concat(merged)
  end
end
redis.call('HSET', hash, unpack(pairs_))
inherit_expiry(building_key, {hash}, 1)
return out
