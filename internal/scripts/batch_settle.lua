-- batch_settle: record how one run of a job of batch bid ended and enqueue each callback whose
-- condition first holds, in one atomic step, idempotent by jid: every change is made only when
-- the set operation on the jid changed the set, so the call sent again (a lost reply), a rerun
-- after a kill or a rescue, or a late second run changes nothing and fires nothing.
-- A node calls it before it writes the run's ordinary outcome (ack, retry or dead): dying
-- between the two leaves the job in the backup list, its rerun calls this again (a no-op) and
-- then writes its outcome, so no transition is lost and none counts twice.
-- KEYS[1] P batch:<bid>   KEYS[2] P batch:<bid>:pending   KEYS[3] P batch:<bid>:fresh
-- KEYS[4] P batch:<bid>:dead   KEYS[5] P batch:<bid>:jobs   KEYS[6] P queues
-- KEYS[6+q] P queue:<callback queue q>, for q = 1..Q
-- ARGV[1] jid   ARGV[2] outcome: "succeeded", "failed" (will retry) or "died"
-- ARGV[3] now (seconds)   ARGV[4] wake channel   ARGV[5] the callback queues as the caller
-- read them (the batch's "queues" field)   ARGV[6..5+Q] the queue names of KEYS[6+q]
-- Returns {changed (0 or 1), fired callbacks…}, or {-1, queues} (nothing written) when ARGV[5]
-- is not the batch's "queues" field: the caller declares those queues' keys and calls again.
-- Success: jid leaves pending (and fresh); success fires when pending is empty. Failure: jid
-- leaves fresh. Death: jid leaves fresh and, if still pending, joins dead; the death callback
-- fires at the first death. Complete fires when fresh is empty: every job has run at least
-- once. A callback fires once: its "<name>_at" field is set with HSETNX when it is enqueued.
-- Out of memory the script runs: its first write is a removal (SREM), after which Redis
-- refuses nothing, so a node can always record an outcome before it acknowledges the job.
local jid, out = ARGV[1], ARGV[2]
local queues = redis.call('HGET', KEYS[1], 'queues')
if not queues then return {0} end -- no such batch (expired, or never created)
if queues ~= ARGV[5] then return {-1, queues} end

local changed
if out == 'succeeded' then
  changed = redis.call('SREM', KEYS[2], jid)
  redis.call('SREM', KEYS[3], jid)
else
  changed = redis.call('SREM', KEYS[3], jid)
  if out == 'died' and redis.call('SISMEMBER', KEYS[2], jid) == 1 then
    changed = redis.call('SADD', KEYS[4], jid)
  end
end
if changed == 0 then return {0} end

local qkey = {}
for q = 1, tonumber(#ARGV - 5) do qkey[ARGV[5 + q]] = KEYS[6 + q] end
local reply = {1}
local function fire(name)
  if redis.call('HSETNX', KEYS[1], name .. '_at', ARGV[3]) == 0 then return end
  reply[#reply + 1] = name
  local doc = redis.call('HGET', KEYS[1], 'cb:' .. name)
  if not doc then return end
  local q = redis.call('HGET', KEYS[1], 'cbq:' .. name)
  redis.call('SADD', KEYS[6], q)
  redis.call('LPUSH', qkey[q], doc)
  redis.pcall('PUBLISH', ARGV[4], q)
end
if out == 'died' then fire('death') end
if redis.call('SCARD', KEYS[3]) == 0 then fire('complete') end
if redis.call('SCARD', KEYS[2]) == 0 then
  fire('success')
  local ttl = tonumber(redis.call('HGET', KEYS[1], 'ttl') or '86400')
  for k = 1, 5 do redis.call('EXPIRE', KEYS[k], ttl) end
end
return reply
