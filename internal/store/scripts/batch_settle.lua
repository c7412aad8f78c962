-- batch_settle: record how runs of jobs of batch bid ended and enqueue each callback whose
-- condition first holds, in one atomic step, idempotent by jid: a job's state in the pending
-- hash (batch_add.lua) changes only where the read of it in this same script says it must,
-- so the call sent again (a lost reply), a rerun after a kill or a rescue, or a late second
-- run changes nothing and fires nothing.
-- A node calls it before it writes a run's ordinary outcome (ack, retry or dead): dying
-- between the two leaves the job in the backup list, its rerun calls this again (a no-op) and
-- then writes its outcome, so no transition is lost and none counts twice.
-- Nested batches: a child batch is one member ("batch:<child bid>") of its parent's pending
-- hash. When the child's complete, success or death callback fires, the same script records
-- it in the parent as that member's run ended (not succeeded), success or death (which does
-- not count as a run), and so on up its ancestors.
-- KEYS, four per level from the batch itself (level 0) up to its last ancestor (level D):
-- P batch:<bid>, P batch:<bid>:pending, P batch:<bid>:dead, P batch:<bid>:jobs; then
-- KEYS[4D+5] P queues; KEYS[4D+5+q] P queue:<callback queue q>, for q = 1..Q.
-- ARGV[1] now (seconds)   ARGV[2] wake channel   ARGV[3] the batch's "queues" field as the
-- caller read it (every callback queue of the batch and its ancestors, "\n"-joined)
-- ARGV[4] its "parents" field as read (its ancestors' ids, nearest first)   ARGV[5] D
-- ARGV[6] Q   ARGV[7..6+Q] the queue names of the callback queue keys; then pairs: jid,
-- outcome ("succeeded", "failed" (will retry) or "died").
-- Returns {changed (how many jobs of the batch changed state), fired callbacks…}, or
-- {-1, queues, parents} (nothing written) when ARGV[3] or ARGV[4] is not what the batch holds:
-- the caller declares those keys and calls again.
-- Success: the jid leaves pending; success fires when pending is empty, and every key of the
-- batch then expires after its "ttl"; until then each key this script creates or re-creates
-- (dead at the first death; pending, when a failure empties it and writes it again) gets the
-- batch hash's remaining TTL, so every key of a batch expires with it. Failure or death: a
-- jid still pending at "0" turns "1" (it has run) and "fresh" drops; a death also adds the jid
-- to dead, and the death callback fires at the first. Complete fires when "fresh" reaches 0:
-- every job has run at least once. A callback fires once: its "<name>_at" field is set with
-- HSETNX as it is enqueued.
-- Out of memory the script runs: its first write is a removal (HDEL of the jids from pending,
-- a failure's put back with "1"), after which Redis refuses nothing, so a node can always
-- record an outcome before it acknowledges the job.
local D, Q = tonumber(ARGV[5]), tonumber(ARGV[6])
local meta = redis.call('HMGET', KEYS[1], 'queues', 'parents')
if not meta[1] then return {0} end -- no such batch (expired, or never created)
if meta[1] ~= ARGV[3] or (meta[2] or '') ~= ARGV[4] then return {-1, meta[1], meta[2] or ''} end
local qkey = {}
for q = 1, Q do qkey[ARGV[6 + q]] = KEYS[4 * D + 5 + q] end

-- settle records runs ({jid, outcome}…) in the batch whose keys start at KEYS[k0] and returns
-- how many jobs changed state and the callbacks it fired.
local function settle(k0, runs)
  local B, P, X, J = KEYS[k0], KEYS[k0 + 1], KEYS[k0 + 2], KEYS[k0 + 3]
  -- A batch whose hash is gone (a parent that expired before its child's news) records
  -- nothing: a write would create its pending hash or dead set again, with no TTL and no owner.
  if k0 > 1 and redis.call('EXISTS', B) == 0 then return 0, {} end
  local ok, other, seen = {}, {}, {}
  for _, r in ipairs(runs) do
    if not seen[r[1] .. ' ' .. r[2]] then
      seen[r[1] .. ' ' .. r[2]] = true
      if r[2] == 'succeeded' then ok[#ok + 1] = r[1] else other[#other + 1] = r end
    end
  end
  local changed, ran, died = 0, 0, 0
  -- Failures and deaths first: a success of the same job in this call then removes it.
  if #other > 0 then
    local ids = {}
    for i, o in ipairs(other) do ids[i] = o[1] end
    local vals = redis.call('HMGET', P, unpack(ids))
    redis.call('HDEL', P, unpack(ids))
    local back, counted = {}, {}
    for i, o in ipairs(other) do
      if vals[i] then -- still pending
        -- A child batch's death ("member_died") does not mean it has run: it has when it
        -- completes ("failed").
        if o[2] == 'member_died' then
          back[o[1]] = back[o[1]] or vals[i]
        else
          back[o[1]] = '1'
          if vals[i] == '0' and not counted[o[1]] then
            counted[o[1]] = true
            ran = ran + 1
            changed = changed + 1
          end
        end
        if (o[2] == 'died' or o[2] == 'member_died') and redis.call('SADD', X, o[1]) == 1 then
          died = died + 1
          changed = changed + 1
        end
      end
    end
    local h = {}
    for jid, val in pairs(back) do
      h[#h + 1] = jid
      h[#h + 1] = val
    end
    if #h > 0 then redis.call('HSET', P, unpack(h)) end
  end
  if #ok > 0 then
    local vals = redis.call('HMGET', P, unpack(ok))
    redis.call('HDEL', P, unpack(ok))
    for i in ipairs(ok) do
      if vals[i] then
        changed = changed + 1
        if vals[i] == '0' then ran = ran + 1 end
      end
    end
  end
  if changed == 0 then return 0, {} end
  local fresh
  if ran > 0 then
    fresh = redis.call('HINCRBY', B, 'fresh', -ran)
  else
    fresh = tonumber(redis.call('HGET', B, 'fresh') or '1')
  end
  local fired = {}
  local function fire(name)
    if redis.call('HSETNX', B, name .. '_at', ARGV[1]) == 0 then return end
    fired[#fired + 1] = name
    local doc = redis.call('HGET', B, 'cb:' .. name)
    if not doc then return end
    local q = redis.call('HGET', B, 'cbq:' .. name)
    redis.call('SADD', KEYS[4 * D + 5], q)
    redis.call('LPUSH', qkey[q], doc)
    redis.pcall('PUBLISH', ARGV[2], q)
  end
  if died > 0 then fire('death') end
  if fresh <= 0 then fire('complete') end
  if redis.call('HLEN', P) == 0 then
    fire('success')
    local ttl = tonumber(redis.call('HGET', B, 'ttl') or '86400')
    for k = 0, 3 do redis.call('EXPIRE', KEYS[k0 + k], ttl) end
  else
    -- A key this call created (the dead set's first member; the pending hash written again
    -- after a failure emptied it) expires with the batch: no key of a batch outlives its hash.
    -- (PTTL is 0 in the hash's last millisecond: the key still gets one, never none.)
    local ttl = redis.call('PTTL', B)
    if ttl >= 0 then
      for _, key in ipairs({P, X}) do
        if redis.call('PTTL', key) == -1 then redis.call('PEXPIRE', key, math.max(ttl, 1)) end
      end
    end
  end
  return changed, fired
end

local runs = {}
for a = 7 + Q, #ARGV, 2 do runs[#runs + 1] = {ARGV[a], ARGV[a + 1]} end
local changed, fired = settle(1, runs)
local reply = {changed}
for _, f in ipairs(fired) do reply[#reply + 1] = f end
-- Up the ancestors: what the batch at level L fired is its member's outcome at level L+1.
if D > 0 and #fired > 0 then
  local asOutcome = {death = 'member_died', complete = 'failed', success = 'succeeded'}
  local member = 'batch:' .. (redis.call('HGET', KEYS[1], 'bid') or '')
  for level = 1, D do
    if #fired == 0 then break end
    local up = {}
    for _, f in ipairs(fired) do up[#up + 1] = {member, asOutcome[f]} end
    local k0 = 4 * level + 1
    fired = select(2, settle(k0, up))
    member = 'batch:' .. (redis.call('HGET', KEYS[k0], 'bid') or '')
  end
end
return reply
