-- merge_fields.lua: merge_bits.lua for a board of a kind, whose version
-- keeps its idempotency bits in one hash (keys.py, BOARD_CHUNK_BITS): OR a
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
for i = HEAD + 1, #ARGV, EACH_WIDTH do
  local chunk, ours = ARGV[i + EACH.chunk], ARGV[i + EACH.bits]
  local theirs = redis.call('HGET', hash, chunk) or ''
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
  redis.call('HSET', hash, chunk, table.concat(merged))
end
inherit_expiry(building_key, {hash}, 1)
return out
