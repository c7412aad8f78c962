-- batch_settle: record how runs of jobs of batch bid ended and enqueue each callback whose
-- condition first holds, in one atomic step, idempotent by jid: a job's state in the pending
-- hash (batch_add.lua) changes only where the read of it in this same script says it must,
-- so the call sent again (a lost reply), a rerun after a kill or a rescue, or a late second
-- run changes nothing and fires nothing.
-- A node calls it before it writes a run's ordinary outcome (ack, retry or dead): dying
-- between the two leaves the job in the backup list, its rerun calls this again (a no-op) and
-- then writes its outcome, so no transition is lost and none counts twice.
-- KEYS[1] P batch:<bid>   KEYS[2] P batch:<bid>:pending   KEYS[3] P batch:<bid>:dead
-- KEYS[4] P batch:<bid>:jobs   KEYS[5] P queues   KEYS[5+q] P queue:<callback queue q>, q = 1..Q
-- ARGV[1] now (seconds)   ARGV[2] wake channel   ARGV[3] the callback queues as the caller
-- read them (the batch's "queues" field)   ARGV[4] Q   ARGV[5..4+Q] the queue names of
-- KEYS[5+q]; then pairs: jid, outcome ("succeeded", "failed" (will retry) or "died").
-- Returns {changed (how many jobs changed state), fired callbacks…}, or {-1, queues} (nothing
-- written) when ARGV[3] is not the batch's "queues" field: the caller declares those queues'
-- keys and calls again.
-- Success: the jid leaves pending; success fires when pending is empty. Failure or death: a
-- jid still pending at "0" turns "1" (it has run) and "fresh" drops; a death also adds the jid
-- to dead, and the death callback fires at the first. Complete fires when "fresh" reaches 0:
-- every job has run at least once. A callback fires once: its "<name>_at" field is set with
-- HSETNX as it is enqueued.
-- Out of memory the script runs: its first write is a removal (HDEL of the jids from pending,
-- a failure's put back with "1"), after which Redis refuses nothing, so a node can always
-- record an outcome before it acknowledges the job.
local queues = redis.call('HGET', KEYS[1], 'queues')
if not queues then return {0} end -- no such batch (expired, or never created)
if queues ~= ARGV[3] then return {-1, queues} end
local Q = tonumber(ARGV[4])

local ok, other, seen = {}, {}, {}
for a = 5 + Q, #ARGV, 2 do
  local jid, out = ARGV[a], ARGV[a + 1]
  if not seen[jid .. ' ' .. out] then
    seen[jid .. ' ' .. out] = true
    if out == 'succeeded' then ok[#ok + 1] = jid else other[#other + 1] = {jid, out} end
  end
end
local changed, ran, died = 0, 0, 0
-- Failures and deaths first: a success of the same job in this call then removes it.
if #other > 0 then
  local ids = {}
  for i, o in ipairs(other) do ids[i] = o[1] end
  local vals = redis.call('HMGET', KEYS[2], unpack(ids))
  redis.call('HDEL', KEYS[2], unpack(ids))
  local back, counted = {}, {}
  for i, o in ipairs(other) do
    if vals[i] then -- still pending
      back[o[1]] = true
      if vals[i] == '0' and not counted[o[1]] then
        counted[o[1]] = true
        ran = ran + 1
        changed = changed + 1
      end
      if o[2] == 'died' and redis.call('SADD', KEYS[3], o[1]) == 1 then
        died = died + 1
        changed = changed + 1
      end
    end
  end
  local h = {}
  for jid in pairs(back) do
    h[#h + 1] = jid
    h[#h + 1] = '1'
  end
  if #h > 0 then redis.call('HSET', KEYS[2], unpack(h)) end
end
if #ok > 0 then
  local vals = redis.call('HMGET', KEYS[2], unpack(ok))
  redis.call('HDEL', KEYS[2], unpack(ok))
  for i, jid in ipairs(ok) do
    if vals[i] then
      changed = changed + 1
      if vals[i] == '0' then ran = ran + 1 end
    end
  end
end
if changed == 0 then return {0} end

local fresh
if ran > 0 then
  fresh = redis.call('HINCRBY', KEYS[1], 'fresh', -ran)
else
  fresh = tonumber(redis.call('HGET', KEYS[1], 'fresh') or '1')
end
local qkey = {}
for q = 1, Q do qkey[ARGV[4 + q]] = KEYS[5 + q] end
local reply = {changed}
local function fire(name)
  if redis.call('HSETNX', KEYS[1], name .. '_at', ARGV[1]) == 0 then return end
  reply[#reply + 1] = name
  local doc = redis.call('HGET', KEYS[1], 'cb:' .. name)
  if not doc then return end
  local q = redis.call('HGET', KEYS[1], 'cbq:' .. name)
  redis.call('SADD', KEYS[5], q)
  redis.call('LPUSH', qkey[q], doc)
  redis.pcall('PUBLISH', ARGV[2], q)
end
if died > 0 then fire('death') end
if fresh <= 0 then fire('complete') end
if redis.call('HLEN', KEYS[2]) == 0 then
  fire('success')
  local ttl = tonumber(redis.call('HGET', KEYS[1], 'ttl') or '86400')
  for k = 1, 4 do redis.call('EXPIRE', KEYS[k], ttl) end
end
return reply
