-- release_keys: remove the leases of ended keyed jobs and ready each key that has jobs
-- waiting and is not held (a key at its limit waited in key_blocked until its earliest lease
-- lapses: the end of a job frees its slot at once). The fetch checks the key's limits again,
-- so readying a key that a rate still holds costs one look, never a start beyond it. Every
-- write but the readying is a removal.
-- ARGV[1] namespace prefix   ARGV[2] wake channel
-- ARGV[3..] triples: queue, key, lease
-- Returns the number of leases removed.
local prefix, removed, woken, memo = ARGV[1], 0, {}, {}
for i = 3, #ARGV, 3 do
  local q, k, lease = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local leases = prefix .. 'key_leases:' .. q .. ':' .. k
  removed = removed + redis.call('ZREM', leases, lease)
  -- A key in the ready set stays there (the fetch checks its limits again).
  if not redis.call('ZSCORE', prefix .. 'key_ready:' .. q, k)
      and redis.call('LLEN', prefix .. 'key_jobs:' .. q .. ':' .. k) > 0 then
    if key_ready(prefix, q, k, 0, true, memo) then woken[q] = true end
  end
end
for q in pairs(woken) do redis.pcall('PUBLISH', ARGV[2], q) end
return removed
