-- fetch_limited: fetch.lua for a poll where some queue has a cluster-wide limit: take up to n
-- jobs from each of several queues into this node's backup lists, in one round trip (the poll
-- loop's only Redis call), within the queues' cluster-wide limits.
--
-- A queue named in the paused set gives nothing: reading the set here, in the same script,
-- means no fetch that starts after PauseQueue returned can take a job of that queue, on any
-- node, with no poll of the set and no window.
--
-- A queue with a global limit gives a job only with a lease: a member of its leases set scored
-- by when it expires. Expired leases (a node killed without releasing them) are dropped first,
-- so the count of live leases is the count of jobs running, and cannot drift; but only once
-- their node has beaten since without renewing them, or is gone (drop_lapsed, leases.lua): a
-- stall of Redis longer than a window, which kept every node from renewing its leases, frees
-- no slot. The node releases
-- a lease as soon as its job ends, in a call of its own, so every node sees the slot free at
-- its next poll; its own next fetch names the lease too (the call may not have arrived yet),
-- so that it does not count the lease as its own.
--
-- Slots are shared: while other nodes wait for one (their last fetch of the queue was held
-- back by the limit, the queue had jobs, and they will ask again within the patience they
-- gave), a node takes a slot only while it holds no more leases than the waiting node that
-- holds fewest. So no node holds more than its share, ceil(limit / the nodes waiting, itself
-- included), and when the limit does not divide evenly no waiting node is left with none. A
-- node alone, or among nodes that got what they asked for, takes every free slot. So no node
-- keeps the slots it frees for itself (a node behind a slow link held the whole limit that
-- way), and the nodes that ask more often cannot starve one that asks less often.
--
-- A queue with a rate gives a job only while (a) fewer than N jobs started in the last window
-- (its starts set: a log, so "at most N in any window" holds exactly, at period edges too),
-- and (b) the pace allows it (GCRA: one start every window/N, with a tolerance of two starts,
-- so the starts are spread out rather than taken in bursts as the window frees).
--
-- Every time is the Redis server's clock, so client clock skew does not matter.
--
-- The node's incarnation and its set of backup queues are checked and kept as in fetch.lua.
--
-- KEYS[1] P paused   KEYS[2] P heartbeats   KEYS[3] P heartbeat_epochs
-- KEYS[4] P backup_queues:<node>
-- KEYS[6i-1..6i+4] for queue i: P queue:<q>, P queue:backup::<node>::<q>, P leases:<q>,
--                  P starts:<q>, P rate_pace:<q>, P lease_waiters:<q>
-- ARGV[1] node   ARGV[2] lease lifetime in seconds (the node's heartbeat window)
-- ARGV[3] patience in seconds: how long this node counts as waiting after a fetch held back
-- ARGV[4] its incarnation token ('' for a node without heartbeats: no check)
-- ARGV[7i-2..7i+4] for queue i: name, most jobs to take, global limit (0: none), rate N (0:
--                  none), rate window in seconds, the first number for new lease and start
--                  members ("<node>:<number>", numbered in the order the jobs are taken),
--                  how many leases to release; then, after every queue's seven, the leases to
--                  release, queue after queue.
-- Returns, for each queue in order, {length of the backup list before this call, wait, raw jobs
-- taken, oldest first…}. The length lets the node see entries it does not hold: jobs of an
-- earlier fetch whose reply was lost, e.g. when a client library sent this script again after
-- the connection broke. wait is -1 unless a limit held jobs back that the queue still has: then
-- the milliseconds until the rate allows the next start, or 0 when the node cannot know (every
-- lease or its share is taken, or the queue is paused).
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local node, ttl, patience = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if ARGV[4] ~= '' and (not redis.call('ZSCORE', KEYS[2], node) or redis.call('HGET', KEYS[3], node) ~= ARGV[4]) then
  return redis.error_reply('BURIED this node was taken for dead and its jobs were rescued')
end
local nq = (#KEYS - 4) / 6
local rel = 5 + 7 * nq -- the next lease to release
local out = {}
for i = 1, nq do
  local k, a = 6 * i - 1, 7 * i - 2
  local src, dst, leases, starts, pace = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4]
  local waiters = KEYS[k + 5]
  local want, limit = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local rate, per, first = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local releases = tonumber(ARGV[a + 6])
  if releases > 0 then
    redis.call('ZREM', leases, unpack(ARGV, rel, rel + releases - 1))
    rel = rel + releases
  end
  local got = {redis.call('LLEN', dst), -1}
  local n, wait = want, -1
  -- pcall: a paused key of another type pauses nothing (as an error it stopped every fetch).
  if n > 0 and redis.pcall('SISMEMBER', KEYS[1], ARGV[a]) == 1 then
    n, wait = 0, 0
  end
  local capped = false -- the global limit, or this node's share of it, held jobs back
  if n > 0 and limit > 0 then
    drop_lapsed(leases, KEYS[2], now)
    local room = limit - redis.call('ZCARD', leases)
    redis.call('ZREMRANGEBYSCORE', waiters, '-inf', now)
    local waiting = redis.call('ZRANGE', waiters, 0, -1)
    if room > 0 and #waiting > 0 then
      -- The leases held by this node and by each waiting one ("<node>:<number>").
      local held = {[node] = 0}
      for _, w in ipairs(waiting) do held[w] = 0 end
      for _, m in ipairs(redis.call('ZRANGE', leases, 0, -1)) do
        local owner = string.match(m, '^(.*):%d+$')
        if owner and held[owner] then held[owner] = held[owner] + 1 end
      end
      local least
      for w, h in pairs(held) do
        if w ~= node and (not least or h < least) then least = h end
      end
      if least then room = math.min(room, least + 1 - held[node]) end
    end
    if room < n then
      n, wait, capped = math.max(room, 0), 0, true
    end
  end
  local tat, spacing
  if n > 0 and rate > 0 then
    spacing = per / rate
    redis.call('ZREMRANGEBYSCORE', starts, '-inf', now - per)
    local room = rate - redis.call('ZCARD', starts)
    tat = math.max(tonumber(redis.call('GET', pace)) or now, now)
    local paced = math.floor((2 * spacing - (tat - now)) / spacing + 1e-9) + 1
    local allowed = math.max(math.min(room, paced), 0)
    if allowed < n then
      n = allowed
      -- When the next start is due: the pace's next slot, or the oldest start leaving the
      -- window, whichever is later (computed again below if this call takes some).
      wait = 1
    end
  end
  for j = 1, n do
    local job = redis.call('RPOP', src) -- then LPUSH: a removal first (see fetch.lua)
    if not job then
      wait = -1 -- the queue ran out: nothing is held back
      break
    end
    redis.call('LPUSH', dst, job)
    got[#got + 1] = job
    local member = node .. ':' .. string.format('%d', first + j - 1)
    if limit > 0 then
      redis.call('ZADD', leases, now + ttl, member)
    end
    if rate > 0 then
      redis.call('ZADD', starts, now, member)
      tat = tat + spacing
    end
  end
  local took = #got - 2
  if capped and wait == 0 and redis.call('LLEN', src) == 0 then
    wait = -1 -- the limit held back no job: the queue is empty
  end
  if took > 0 then
    redis.call('SADD', KEYS[4], ARGV[a])
  end
  if limit > 0 and took > 0 then
    -- The set outlives its members by an hour: its TTL only sweeps the set of a queue no node
    -- fetches any more, and a stall of Redis longer than the TTL would drop every lease at
    -- once (the TTL counts on through a stall; drop_lapsed keeps the members themselves).
    redis.call('PEXPIRE', leases, math.ceil((ttl + 3600) * 1000))
  end
  if limit > 0 and want > 0 then
    if capped and took == n and redis.call('LLEN', src) > 0 then
      redis.call('ZADD', waiters, now + patience, node)
      redis.call('PEXPIRE', waiters, math.ceil(patience * 1000) + 1000)
    else
      redis.call('ZREM', waiters, node)
    end
  end
  if rate > 0 and took > 0 then
    redis.call('SET', pace, string.format('%.6f', tat), 'PX', math.ceil((tat - now + per) * 1000) + 1000)
    redis.call('PEXPIRE', starts, math.ceil(per * 1000) + 1000)
  end
  if wait > 0 then
    if redis.call('LLEN', src) == 0 then
      wait = -1
    else
      local due = tat - 2 * spacing
      if redis.call('ZCARD', starts) >= rate then
        local oldest = redis.call('ZRANGE', starts, 0, 0, 'WITHSCORES')
        due = math.max(due, tonumber(oldest[2]) + per)
      end
      wait = math.max(math.ceil((due - now) * 1000), 1)
    end
  end
  got[2] = wait
  out[i] = got
end
return out
