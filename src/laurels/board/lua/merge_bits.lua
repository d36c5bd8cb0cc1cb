-- merge_bits.lua: OR a rebuild's idempotency bits for one chunk into the
-- building version, atomically, and say which were set already.
--
-- The snapshot's completions count on the new board through its aggregates
-- (load_board.lua). A completion of the snapshot that an apply reached live
-- before this merge already counts on the building version: its bit is set
-- in both, and the caller takes its points out of the aggregate. After the
-- merge, a late apply of any snapshot completion finds its bit set and does
-- nothing. (docs/design.md, Rebuild: mark building, then snapshot.)
--
-- KEYS[1]  building marker, KEYS[2] the version's bitmap of this chunk,
-- KEYS[3]  the version's chunks set, KEYS[4] and KEYS[5] scratch keys
-- ARGV (MergeBitsArgs): version (being built), chunk (its id), bits
-- Returns {'LOST'} when the version is no longer the one being built, else
-- {'OK', offset...}: the bit offsets set in both (usually none).
local building_key, bitmap, chunks, ours, both = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local version, chunk, bits = ARGV[ARG.version], ARGV[ARG.chunk], ARGV[ARG.bits]
if redis.call('GET', building_key) ~= version then return {'LOST'} end
redis.call('SET', ours, bits)
local out = {'OK'}
if redis.call('EXISTS', bitmap) == 1 then
  redis.call('BITOP', 'AND', both, bitmap, ours)
  if redis.call('BITCOUNT', both) > 0 then
    local overlap = redis.call('GET', both)
    for i = 1, #overlap do
      local byte = string.byte(overlap, i)
      if byte ~= 0 then
        for k = 0, 7 do
          if bit.band(byte, bit.rshift(0x80, k)) ~= 0 then out[#out + 1] = (i - 1) * 8 + k end
        end
      end
    end
  end
  redis.call('BITOP', 'OR', bitmap, bitmap, ours)
else
  redis.call('SET', bitmap, bits)
end
redis.call('DEL', ours, both)
redis.call('SADD', chunks, chunk)
inherit_expiry(building_key, {bitmap, chunks}, 1)
return out
