-- ack_settle: the acknowledgements of finished jobs (ack_batch.lua) with the transitions of
-- the batches and workflows of those that belong to one, in one call: each transition exactly
-- as its own script records it (batch_settle.lua, workflow_settle.lua; scripts.go puts their
-- text before this one as the functions batch_settle and workflow_settle), then each job taken
-- off its backup list. A job's transition and its LREM are one atomic step: a node that dies
-- before the call leaves both undone (the job is rescued and runs again), after it both done;
-- why that is exactly once: docs/workflows.md, "The transition in the acknowledgement".
-- A job whose item was given a stale route (the item's reply is {-1, ...}: nothing written)
-- is not taken off: its caller records the transition alone with the stored route and then
-- acknowledges the job, the transition first as ever.
-- KEYS[1] P heartbeats   KEYS[2] P heartbeat_epochs   then every item's keys, one item after
-- the other; then the backup lists and leases sets the groups name.
-- ARGV[1] node   ARGV[2] I (items)   then per item: "b" (batch) or "w" (workflow), its number
-- of keys, its number of arguments, its arguments; then groups as ack_batch.lua's, each: 'a'
-- (finished jobs), 'l' (leases) or 'f' (finished jobs of batches or workflows), the index in
-- KEYS of their key, the incarnation token of their runs ('' for no check; unused for
-- leases), the count n, then the n raw jobs or leases; for 'f', three values per job: the
-- numbers of the (one or two) items it depends on (0 for none), then the raw job.
-- Returns {removed (backup entries and leases), then one reply per item as its own script
-- replies}.
-- Out of memory it runs: the first item's first write is a removal (HDEL), as is an LREM.
-- Any error raised by a transition stops the script before any job is taken off.
local I = tonumber(ARGV[2])
local replies, stale = {}, {}
local k, a = 3, 3
for i = 1, I do
  local kind, nk, na = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local keys, args = {}, {}
  for j = 1, nk do keys[j] = KEYS[k + j - 1] end
  for j = 1, na do args[j] = ARGV[a + 2 + j] end
  local r
  if kind == 'b' then
    r = batch_settle(keys, args)
  else
    r = workflow_settle(keys, args)
  end
  replies[i] = r
  stale[i] = r[1] == -1
  k = k + nk
  a = a + 3 + na
end

local current = redis.call('HGET', KEYS[2], ARGV[1])
local alive = redis.call('ZSCORE', KEYS[1], ARGV[1]) and current
local removed = 0
local last = #ARGV
while a <= last do
  local op, key, epoch, n = ARGV[a], KEYS[tonumber(ARGV[a + 1])], ARGV[a + 2], tonumber(ARGV[a + 3])
  local live = epoch == '' or (alive and epoch == current)
  if op == 'l' then
    for m = a + 4, a + 3 + n do
      removed = removed + redis.call('ZREM', key, ARGV[m])
    end
    a = a + 4 + n
  elseif op == 'f' then
    if live then
      for m = a + 4, a + 1 + 3 * n, 3 do
        if not stale[tonumber(ARGV[m])] and not stale[tonumber(ARGV[m + 1])] then
          removed = removed + redis.call('LREM', key, -1, ARGV[m + 2])
        end
      end
    end
    a = a + 4 + 3 * n
  else
    if live then
      for m = a + 4, a + 3 + n do
        removed = removed + redis.call('LREM', key, -1, ARGV[m])
      end
    end
    a = a + 4 + n
  end
end
local out = {removed}
for i = 1, I do out[i + 1] = replies[i] end
return out
