-- workflow_settle: record that job name of workflow id ended for good (succeeded or died) and
-- release or cancel its dependents, in one atomic step, idempotent by the job's state: a job
-- already succeeded, dead or canceled changes nothing, so the call sent again (a lost reply),
-- a rerun after a kill or a rescue, or a late second run releases nothing twice.
-- A node calls it before it writes the run's ordinary outcome (ack or dead): dying between the
-- two leaves the job in the backup list, its rerun calls this again (a no-op) and then writes
-- its outcome, so no release is lost.
-- KEYS[1] P wf:<id>   KEYS[2] P wf:<id>:graph   KEYS[3] P wf:<id>:jobs   KEYS[4] P queues
-- KEYS[4+q] P queue:<queue q>, for q = 1..Q
-- ARGV[1] name   ARGV[2] "succeeded" or "dead"   ARGV[3] now (seconds)   ARGV[4] wake channel
-- ARGV[5] the workflow's queues as the caller read them (its "queues" field)
-- ARGV[6..5+Q] the queue names of KEYS[4+q]
-- Returns {changed (0 or 1), released, canceled, finished (0 or 1)}, or {-1, queues} (nothing
-- written) when ARGV[5] is not the workflow's "queues" field.
-- A child is released (its document pushed to its queue) when its count of unfinished parents
-- reaches 0; that count drops once per parent, when the parent succeeds, or when it dies or is
-- canceled and the child runs anyway ("r:<child>"). Otherwise a parent's death cancels the
-- waiting child, with the reason, and its own children in turn; a canceled child's count is
-- set far below 0, so that no later success of another parent can bring it to 0.
-- Out of memory the script runs: its first write is a removal (HDEL of the job's own count of
-- unfinished parents, which is 0 once it runs), after which Redis refuses nothing.
local name, out = ARGV[1], ARGV[2]
local meta = redis.call('HMGET', KEYS[1], 'queues', 'total', 'succeeded', 'dead', 'canceled')
local queues = meta[1]
if not queues then return {0, 0, 0, 0} end -- no such workflow (expired, or never created)
if queues ~= ARGV[5] then return {-1, queues} end
redis.call('HDEL', KEYS[2], 'w:' .. name)
local mine = redis.call('HMGET', KEYS[2], 's:' .. name, 'c:' .. name)
local s = mine[1]
if s == 'succeeded' or s == 'dead' or s == 'canceled' then return {0, 0, 0, 0} end

local qkey = {}
for q = 1, #ARGV - 5 do qkey[ARGV[5 + q]] = KEYS[4 + q] end
local released, canceled = 0, 0
redis.call('HSET', KEYS[2], 's:' .. name, out)
local counts = {succeeded = tonumber(meta[3] or '0'), dead = tonumber(meta[4] or '0'), canceled = tonumber(meta[5] or '0')}
counts[out] = redis.call('HINCRBY', KEYS[1], out, 1)
local ended = counts.succeeded + counts.dead + counts.canceled

local todo = {{name, out}}
local ready = {}
local t = 1
while t <= #todo do
  local parent, how = todo[t][1], todo[t][2]
  t = t + 1
  local children = mine[2]
  if t > 2 then children = redis.call('HGET', KEYS[2], 'c:' .. parent) end
  if children then
    for child in string.gmatch(children, '[^\n]+') do
      if how == 'succeeded' then
        -- A canceled child's count is far below 0 (see below): it never reaches 0 here.
        if redis.call('HINCRBY', KEYS[2], 'w:' .. child, -1) == 0 then ready[#ready + 1] = child end
      elseif redis.call('HGET', KEYS[2], 's:' .. child) == 'waiting' then
        if redis.call('HEXISTS', KEYS[2], 'r:' .. child) == 1 then
          if redis.call('HINCRBY', KEYS[2], 'w:' .. child, -1) == 0 then ready[#ready + 1] = child end
        else
          redis.call('HSET', KEYS[2], 's:' .. child, 'canceled', 'why:' .. child, parent .. ' ' .. how, 'w:' .. child, -1000000000)
          redis.call('HDEL', KEYS[3], child)
          canceled = canceled + 1
          todo[#todo + 1] = {child, 'canceled'}
        end
      end
    end
  end
end
-- The released jobs: their documents pushed, one LPUSH per queue, and their states set.
local chunk = 1000
for s = 1, #ready, chunk do
  local names, qnames, states = {}, {}, {}
  for i = s, math.min(s + chunk - 1, #ready) do
    names[#names + 1] = ready[i]
    qnames[#qnames + 1] = 'q:' .. ready[i]
    states[#states + 1] = 's:' .. ready[i]
    states[#states + 1] = 'queued'
  end
  local docs = redis.call('HMGET', KEYS[3], unpack(names))
  local qs = redis.call('HMGET', KEYS[2], unpack(qnames))
  redis.call('HDEL', KEYS[3], unpack(names))
  redis.call('HSET', KEYS[2], unpack(states))
  local lists = {}
  for i = 1, #names do
    if docs[i] then
      local l = lists[qs[i]]
      if not l then
        l = {}
        lists[qs[i]] = l
      end
      l[#l + 1] = docs[i]
      released = released + 1
    end
  end
  for q, l in pairs(lists) do
    redis.call('SADD', KEYS[4], q)
    redis.call('LPUSH', qkey[q], unpack(l))
    redis.pcall('PUBLISH', ARGV[4], q)
  end
end
local finished = 0
if canceled > 0 then
  redis.call('HINCRBY', KEYS[1], 'canceled', canceled)
  ended = ended + canceled
end
if ended >= tonumber(meta[2]) then
  finished = 1
  redis.call('HSET', KEYS[1], 'finished_at', ARGV[3])
  local ttl = tonumber(redis.call('HGET', KEYS[1], 'ttl') or '86400')
  for k = 1, 3 do redis.call('EXPIRE', KEYS[k], ttl) end
end
return {1, released, canceled, finished}
