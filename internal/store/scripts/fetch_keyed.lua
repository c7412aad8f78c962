-- fetch_keyed: fetch.lua for a poll where some queue serves keyed jobs (Queue.Keys,
-- docs/keys.md): take up to n jobs of each queue into this node's backup lists, the keyed
-- ones within their key's policy, in one round trip.
--
-- Per queue: first the keyed jobs due in the delayed set move into their key's list (a held
-- sequence's failed job to the head, its key released), and the keys whose wait in
-- key_blocked ended go back to the ready set (a bounded number of each per call). Then the
-- keys are served in turn: the key with the lowest turn in key_ready gives its oldest job if
-- its limits allow (fewer live leases than Concurrency, fewer starts in the window than
-- Rate.N), and goes back with its turn plus 1/weight; a key its limits hold back moves to
-- key_blocked until the time they free it (its earliest lease's lapse, its oldest start's
-- leaving the window), so it is not looked at again before (an ended job's release readies
-- it earlier). Each step is a few sorted-set operations: the cost per job grows with the log
-- of the number of keys, never with their number. A key with no job left leaves the ready set.
-- The queue's own list (jobs enqueued without a key) shares the slots: it gets up to half of
-- them when it has jobs (with one slot, every other poll, by ARGV parity), the keys the rest.
--
-- Leases: a job of a key with a Concurrency gets a lease "<node>:<number>" in
-- key_leases:<q>:<k>, scored by when it lapses: two heartbeat windows, renewed by the node's
-- beats, removed when the job ends. A killed node's leases are removed by the rescue of its
-- jobs, which comes after one window: a lease that lapsed first would let a sequence's next
-- job start before the rescued one. They lapse on their own only when no rescue removed them
-- (a fetch whose reply was lost: the node could not name them). Starts are logged in
-- key_starts:<q>:<k> when the policy has a Rate. Every time is the Redis server's clock.
--
-- The node's incarnation and its set of backup queues are checked and kept as in fetch.lua.
-- KEYS[1] P paused   KEYS[2] P heartbeats   KEYS[3] P heartbeat_epochs
-- KEYS[4] P backup_queues:<node>
-- KEYS[4+5i-4 .. 4+5i] for queue i: P queue:<q>, P queue:backup::<node>::<q>, P key_ready:<q>,
--                  P key_blocked:<q>, P key_delayed:<q>
-- ARGV[1] node   ARGV[2] lease lifetime in seconds   ARGV[3] incarnation token ('' no check)
-- ARGV[4] namespace prefix   ARGV[5] parity (0 or 1)
-- then per queue: name, most jobs to take, concurrency per key (0: none), rate N per key (0:
-- none), rate window in seconds, the first lease number, the number w of weights, then w
-- pairs of key and weight.
-- Returns, for each queue in order, {length of the backup list before this call, wait, then
-- pairs of raw job and its key ('' for a job of the queue's own list)}. wait is -1, or the
-- milliseconds until the earliest key wait or delayed job ends (the poll loop looks again
-- then at the latest).
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local node, ttl, prefix, parity = ARGV[1], tonumber(ARGV[2]), ARGV[4], ARGV[5]
if ARGV[3] ~= '' and (not redis.call('ZSCORE', KEYS[2], node) or redis.call('HGET', KEYS[3], node) ~= ARGV[3]) then
  return redis.error_reply('BURIED this node was taken for dead and its jobs were rescued')
end
local out = {}
local a = 6
local nq = (#KEYS - 4) / 5
for i = 1, nq do
  local kk = 4 + 5 * (i - 1)
  local src, dst, ready, blocked, delayed = KEYS[kk + 1], KEYS[kk + 2], KEYS[kk + 3], KEYS[kk + 4], KEYS[kk + 5]
  local q, want, conc = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local rate, per, first = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local nw = tonumber(ARGV[a + 6])
  local weights = {}
  for w = 1, nw do weights[ARGV[a + 5 + 2 * w]] = tonumber(ARGV[a + 6 + 2 * w]) end
  a = a + 7 + 2 * nw
  local held = prefix .. 'key_held:' .. q
  local got = {redis.call('LLEN', dst), -1}
  local paused = want > 0 and redis.pcall('SISMEMBER', KEYS[1], q) == 1
  if want > 0 and not paused then
    -- Due delayed jobs into their keys' lists.
    for _, job in ipairs(redis.call('ZRANGEBYSCORE', delayed, '-inf', now, 'LIMIT', 0, 100)) do
      redis.call('ZREM', delayed, job)
      local k, jid = key_of(job)
      if not k then
        redis.call('RPUSH', src, job) -- not keyed after all: its queue
      else
        local list = prefix .. 'key_jobs:' .. q .. ':' .. k
        if jid and redis.call('HGET', held, k) == jid then
          redis.call('HDEL', held, k)
          redis.call('LPUSH', list, job)
          key_ready(prefix, q, k, 0, true)
        else
          redis.call('RPUSH', list, job)
          key_ready(prefix, q, k, 0, false)
        end
      end
    end
    -- Keys whose wait ended back to the ready set.
    for _, k in ipairs(redis.call('ZRANGEBYSCORE', blocked, '-inf', now, 'LIMIT', 0, 100)) do
      redis.call('ZREM', blocked, k)
      if redis.call('LLEN', prefix .. 'key_jobs:' .. q .. ':' .. k) > 0 then
        key_ready(prefix, q, k, 0, false)
      end
    end
    local plain = redis.call('LLEN', src)
    local nk = want
    if plain > 0 then
      local share = math.floor(want / 2)
      if want == 1 and parity == '1' then share = 1 end
      nk = want - math.min(plain, share)
    end
    local taken, looks = 0, 0
    while taken < nk and looks < nk + 100 do
      looks = looks + 1
      local top = redis.call('ZRANGE', ready, 0, 0, 'WITHSCORES')
      if #top == 0 then break end
      local k, turn = top[1], tonumber(top[2])
      local list = prefix .. 'key_jobs:' .. q .. ':' .. k
      local leases, starts = prefix .. 'key_leases:' .. q .. ':' .. k, prefix .. 'key_starts:' .. q .. ':' .. k
      -- limited: when the key's limits free it if they hold it back now (nil otherwise),
      -- with how many leases and starts it has in its window.
      local function limited()
        local nl, ns = 0, 0
        if conc > 0 then
          redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
          nl = redis.call('ZCARD', leases)
          if nl >= conc then
            return tonumber(redis.call('ZRANGE', leases, 0, 0, 'WITHSCORES')[2]), nl, ns
          end
        end
        if rate > 0 then
          redis.call('ZREMRANGEBYSCORE', starts, '-inf', now - per)
          ns = redis.call('ZCARD', starts)
          if ns >= rate then
            return tonumber(redis.call('ZRANGE', starts, 0, 0, 'WITHSCORES')[2]) + per, nl, ns
          end
        end
        return nil, nl, ns
      end
      -- (A held key is never in the ready set: retry_keyed.lua takes it out, key_ready
      -- keeps it out.)
      local until_, nl, ns = limited()
      local job = not until_ and redis.call('LPOP', list)
      if until_ then
        redis.call('ZREM', ready, k)
        redis.call('ZADD', blocked, until_, k)
      elseif not job then
        redis.call('ZREM', ready, k) -- its list is empty
      else
        redis.call('LPUSH', dst, job)
        local member = node .. ':' .. string.format('%d', first + taken)
        if conc > 0 then
          redis.call('ZADD', leases, now + 2 * ttl, member)
          redis.call('PEXPIRE', leases, math.ceil((2 * ttl + 60) * 1000))
        end
        if rate > 0 then
          redis.call('ZADD', starts, now, member)
          redis.call('PEXPIRE', starts, math.ceil(per * 1000) + 1000)
        end
        got[#got + 1] = job
        got[#got + 1] = k
        taken = taken + 1
        if redis.call('LLEN', list) == 0 then
          redis.call('ZREM', ready, k)
        elseif conc > 0 and nl + 1 >= conc then
          -- Full now: until its earliest lease lapses (a release readies it sooner).
          redis.call('ZREM', ready, k)
          redis.call('ZADD', blocked, tonumber(redis.call('ZRANGE', leases, 0, 0, 'WITHSCORES')[2]), k)
        elseif rate > 0 and ns + 1 >= rate then
          redis.call('ZREM', ready, k)
          redis.call('ZADD', blocked, tonumber(redis.call('ZRANGE', starts, 0, 0, 'WITHSCORES')[2]) + per, k)
        else
          redis.call('ZADD', ready, turn + 1 / (weights[k] or 1), k)
        end
      end
    end
    -- The queue's own jobs fill the rest, as fetch.lua takes them.
    local np = want - taken
    if np > 0 and plain > 0 then
      local tail = redis.call('LRANGE', src, -np, -1)
      if #tail > 0 then
        redis.call('LTRIM', src, 0, -#tail - 1)
        for j = #tail, 1, -1 do
          redis.call('LPUSH', dst, tail[j])
          got[#got + 1] = tail[j]
          got[#got + 1] = ''
        end
      end
    end
    if #got > 2 then redis.call('SADD', KEYS[4], q) end
  end
  -- How long until a key's wait or a delayed job ends.
  local soon
  for _, z in ipairs({blocked, delayed}) do
    local f = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
    if f[2] and (not soon or tonumber(f[2]) < soon) then soon = tonumber(f[2]) end
  end
  if paused then
    got[2] = 0
  elseif soon then
    got[2] = math.max(math.ceil((soon - now) * 1000), 1)
  end
  out[i] = got
end
return out
