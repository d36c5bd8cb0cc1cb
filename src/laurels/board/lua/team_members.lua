-- team_members.lua: learners' groups of one team kind set on one version's
-- team board (_common.lua, Teams; board/teams.py), each learner leaving the
-- groups they left and joining the new ones with their points now.
--
-- KEYS[1] the season's current marker, KEYS[2] its erased set,
-- KEYS[3..6] the version's public set, hidden set, users hash, teams hash
-- ARGV (TeamMembersArgs): op, version, kind, policy, expected, applied;
-- then (TeamMember) uid, groups (comma-joined; '' for none) for each learner
-- - 'fill': a board being filled (team.lua 'begin'): learners it holds
--   already are left as they are (a later change moved them);
-- - 'move': a change PostgreSQL is committing: the board must have applied
--   `expected` changes, and then has applied `applied`; one that applied
--   another count missed one (a process stopped between its commit and
--   this call, a Redis back from a snapshot): it is dropped, to be filled
--   again when read.
-- An erased learner (the season's erased set) joins nothing and leaves all.
-- Returns {'OK'}, {'STALE', current}, {'ABSENT'} (no board of the kind on
-- this version) or {'DROPPED'}.
local current = redis.call('GET', KEYS[1]) or ''
local op, version, kind = ARGV[ARG.op], ARGV[ARG.version], ARGV[ARG.kind]
if current ~= version then return {'STALE', current} end
local erased, public, hidden, users, teams = KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local state = redis.call('HGET', teams, kind)
if not state then return {'ABSENT'} end
local agg, top, applied, ready = string.match(state, '^(%a+):(%d+):(%d+):(%d)$')
local k = {kind = kind, base = version_base(public) .. ':team:' .. kind, agg = agg,
           top = tonumber(top), joined = {}}
local policy = ARGV[ARG.policy]
if op == 'move' and applied ~= ARGV[ARG.expected] then
  for _, g in ipairs(redis.call('HKEYS', k.base .. ':c')) do
    redis.call('DEL', k.base .. ':t:' .. g)
  end
  redis.call('DEL', k.base .. ':m', k.base .. ':p', k.base .. ':z', k.base .. ':s',
             k.base .. ':c')
  redis.call('HDEL', teams, kind)
  return {'DROPPED'}
end
for i = HEAD + 1, #ARGV, EACH_WIDTH do
  local uid, groups = ARGV[i + EACH.uid], ARGV[i + EACH.groups]
  if redis.call('SISMEMBER', erased, uid) == 1 then groups = '' end
  if op == 'move' or redis.call('HEXISTS', k.base .. ':m', uid) == 0 then
    team_move(k, public, hidden, users, policy, uid, groups)
  end
end
if op == 'move' then
  redis.call('HSET', teams, kind, agg .. ':' .. top .. ':' .. ARGV[ARG.applied] .. ':' .. ready)
end
team_expiry(KEYS[1], teams, k)  -- (a finalized season's: they expire with it)
return {'OK'}
