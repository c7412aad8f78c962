-- fetch_limited: fetch.lua for a poll where some queue has a cluster-wide limit or leases to
-- release: take up to n jobs from each of several queues into this node's backup lists, in one
-- round trip (the poll loop's only Redis call), within the queues' cluster-wide limits.
--
-- A queue named in the paused set gives nothing: reading the set here, in the same script,
-- means no fetch that starts after PauseQueue returned can take a job of that queue, on any
-- node, with no poll of the set and no window.
--
-- A queue with a global limit gives a job only with a lease: a member of its leases set scored
-- by when it expires. Expired leases (a node killed without releasing them) are dropped first,
-- so the count of live leases is the count of jobs running, and cannot drift. The node releases
-- a lease when its job ends by naming it in a later fetch.
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
-- KEYS[5i..5i+4] for queue i: P queue:<q>, P queue:backup::<node>::<q>, P leases:<q>,
--                  P starts:<q>, P rate_pace:<q>
-- ARGV[1] node   ARGV[2] lease lifetime in seconds (the node's heartbeat window)
-- ARGV[3] its incarnation token ('' for a node without heartbeats: no check)
-- ARGV[7i-3..7i+3] for queue i: name, most jobs to take, global limit (0: none), rate N (0:
--                  none), rate window in seconds, the first number for new lease and start
--                  members ("<node>:<number>", numbered in the order the jobs are taken),
--                  how many leases to release; then, after every queue's seven, the leases to
--                  release, queue after queue.
-- Returns, for each queue in order, {length of the backup list before this call, wait, raw jobs
-- taken, oldest first…}. The length lets the node see entries it does not hold: jobs of an
-- earlier fetch whose reply was lost, e.g. when a client library sent this script again after
-- the connection broke. wait is -1 unless a limit held jobs back that the queue still has: then
-- the milliseconds until the rate allows the next start, or 0 when the node cannot know (every
-- lease is taken, or the queue is paused).
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local node, ttl = ARGV[1], tonumber(ARGV[2])
if ARGV[3] ~= '' and (not redis.call('ZSCORE', KEYS[2], node) or redis.call('HGET', KEYS[3], node) ~= ARGV[3]) then
  return redis.error_reply('BURIED this node was taken for dead and its jobs were rescued')
end
local nq = (#KEYS - 4) / 5
local rel = 4 + 7 * nq -- the next lease to release
local out = {}
for i = 1, nq do
  local k, a = 5 * i, 7 * i - 3
  local src, dst, leases, starts, pace = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4]
  local want, limit = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local rate, per, first = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local releases = tonumber(ARGV[a + 6])
  if releases > 0 then
    redis.call('ZREM', leases, unpack(ARGV, rel, rel + releases - 1))
    rel = rel + releases
  end
  local got = {redis.call('LLEN', dst), -1}
  local n, wait = want, -1
  if n > 0 and redis.call('SISMEMBER', KEYS[1], ARGV[a]) == 1 then
    n, wait = 0, 0
  end
  if n > 0 and limit > 0 then
    redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
    local room = limit - redis.call('ZCARD', leases)
    if room < n then
      n, wait = math.max(room, 0), 0
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
    local job = redis.call('RPOPLPUSH', src, dst)
    if not job then
      wait = -1 -- the queue ran out: nothing is held back
      break
    end
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
  if took > 0 then
    redis.call('SADD', KEYS[4], ARGV[a])
  end
  if limit > 0 and took > 0 then
    redis.call('PEXPIRE', leases, math.ceil((ttl + 60) * 1000))
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
