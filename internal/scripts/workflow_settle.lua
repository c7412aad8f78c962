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
-- reaches 0 while it is still waiting; that count drops once per parent, when the parent
-- succeeds, or when it dies or is canceled and the child runs anyway ("r:<child>"). Otherwise a
-- parent's death cancels the child, with the reason, and its own children in turn.
-- Out of memory the script runs: its first write is a removal (HDEL of the job's own count of
-- unfinished parents, which is 0 once it runs), after which Redis refuses nothing.
local name, out = ARGV[1], ARGV[2]
local queues = redis.call('HGET', KEYS[1], 'queues')
if not queues then return {0, 0, 0, 0} end -- no such workflow (expired, or never created)
if queues ~= ARGV[5] then return {-1, queues} end
redis.call('HDEL', KEYS[2], 'w:' .. name)
local s = redis.call('HGET', KEYS[2], 's:' .. name)
if s == 'succeeded' or s == 'dead' or s == 'canceled' then return {0, 0, 0, 0} end

local qkey = {}
for q = 1, #ARGV - 5 do qkey[ARGV[5 + q]] = KEYS[4 + q] end
local released, canceled, ended = 0, 0, 1
local woken = {}
redis.call('HSET', KEYS[2], 's:' .. name, out)
redis.call('HINCRBY', KEYS[1], out, 1)

local todo = {{name, out}}
local t = 1
while t <= #todo do
  local parent, how = todo[t][1], todo[t][2]
  t = t + 1
  local children = redis.call('HGET', KEYS[2], 'c:' .. parent)
  if children then
    for child in string.gmatch(children, '[^\n]+') do
      if redis.call('HGET', KEYS[2], 's:' .. child) == 'waiting' then
        if how == 'succeeded' or redis.call('HEXISTS', KEYS[2], 'r:' .. child) == 1 then
          if redis.call('HINCRBY', KEYS[2], 'w:' .. child, -1) <= 0 then
            redis.call('HDEL', KEYS[2], 'w:' .. child)
            local doc = redis.call('HGET', KEYS[3], child)
            local q = redis.call('HGET', KEYS[2], 'q:' .. child)
            redis.call('HDEL', KEYS[3], child)
            redis.call('HSET', KEYS[2], 's:' .. child, 'queued')
            redis.call('LPUSH', qkey[q], doc)
            if not woken[q] then
              woken[q] = true
              redis.call('SADD', KEYS[4], q)
              redis.pcall('PUBLISH', ARGV[4], q)
            end
            released = released + 1
          end
        else
          redis.call('HSET', KEYS[2], 's:' .. child, 'canceled', 'why:' .. child, parent .. ' ' .. how)
          redis.call('HDEL', KEYS[2], 'w:' .. child)
          redis.call('HDEL', KEYS[3], child)
          canceled = canceled + 1
          todo[#todo + 1] = {child, 'canceled'}
        end
      end
    end
  end
end
if canceled > 0 then redis.call('HINCRBY', KEYS[1], 'canceled', canceled) end
local finished = 0
if redis.call('HINCRBY', KEYS[1], 'ended', ended + canceled) >= tonumber(redis.call('HGET', KEYS[1], 'total')) then
  finished = 1
  redis.call('HSET', KEYS[1], 'finished_at', ARGV[3])
  local ttl = tonumber(redis.call('HGET', KEYS[1], 'ttl') or '86400')
  for k = 1, 3 do redis.call('EXPIRE', KEYS[k], ttl) end
end
return {1, released, canceled, finished}
