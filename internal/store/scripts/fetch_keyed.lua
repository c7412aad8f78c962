-- fetch_keyed: fetch.lua for a poll where some queue serves keyed jobs (Queue.Keys,
-- docs/keys.md): take up to n jobs of each queue into this node's backup lists, the keyed
-- ones within their key's policy, in one round trip.
--
-- Per queue: first the keyed jobs due in the delayed set move into their key's list (a held
-- sequence's failed job to the head, its key released), and the keys whose wait in
-- key_blocked ended go back to the ready set (a bounded number of each per call). Then the
-- keys are served in turn, in rounds: the keys with the lowest turns in key_ready (as many as
-- there are slots left) each give their oldest jobs, one each when the keys outnumber the
-- slots and an even share of them otherwise, as far as their limits allow (fewer live leases
-- than Concurrency, fewer starts in the window than Rate.N), and go back with their turn plus
-- the jobs they gave over their weight; a key its limits hold back moves to
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
-- (a fetch whose reply was lost: the node could not name them), and only once their node has
-- beaten since their time without renewing them: a stall of Redis longer than their life
-- (no node could renew them meanwhile) frees no slot. Starts are logged in
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
    -- Due delayed jobs into their keys' lists (the memo of key_ready holds until the visits
    -- below take keys out of the ready set).
    local memo = {}
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
          key_ready(prefix, q, k, 0, true, memo)
        elseif redis.call('RPUSH', list, job) == 1 then
          key_ready(prefix, q, k, 0, false, memo) -- (a key with jobs waiting is in a set)
        end
      end
    end
    -- Keys whose wait ended back to the ready set.
    for _, k in ipairs(redis.call('ZRANGEBYSCORE', blocked, '-inf', now, 'LIMIT', 0, 100)) do
      redis.call('ZREM', blocked, k)
      if redis.call('LLEN', prefix .. 'key_jobs:' .. q .. ':' .. k) > 0 then
        key_ready(prefix, q, k, 0, false, memo)
      end
    end
    local plain = redis.call('LLEN', src)
    local nk = want
    if plain > 0 then
      local share = math.floor(want / 2)
      if want == 1 and parity == '1' then share = 1 end
      nk = want - math.min(plain, share)
    end
    -- live is how many members of z (leases or starts) count at the time since, up to cap
    -- (starts scored at or before since have left the window and are removed; leases go as
    -- drop_lapsed, leases.lua, says), and the lowest score that counts: one read of the
    -- members for a small cap, the first and the count for a large one.
    local function live(z, since, cap, leases)
      local n = cap <= 16 and cap or 1
      local f = redis.call('ZRANGE', z, 0, n - 1, 'WITHSCORES')
      if #f == 0 then return 0, nil end
      if tonumber(f[2]) <= since then
        if leases then
          drop_lapsed(z, KEYS[2], now)
        else
          redis.call('ZREMRANGEBYSCORE', z, '-inf', since)
        end
        f = redis.call('ZRANGE', z, 0, n - 1, 'WITHSCORES')
        if #f == 0 then return 0, nil end
      end
      if cap > 16 then return redis.call('ZCARD', z), tonumber(f[2]) end
      return #f / 2, tonumber(f[2])
    end
    -- Rounds: the keys with the lowest turns, as many as there are slots left, each visited
    -- once per round in turn order, each giving its share of the slots (one when the keys
    -- outnumber them) within its limits, and put back with its turn plus what it gave over
    -- its weight. No key is visited twice before every key ahead of it in the round was.
    local taken, looks, moved = 0, 0, {}
    while taken < nk and looks < nk + 100 do
      local round = redis.call('ZRANGE', ready, 0, nk - taken - 1, 'WITHSCORES')
      if #round == 0 then break end
      local share = math.max(1, math.floor((nk - taken) / (#round / 2)))
      for r = 1, #round, 2 do
        if taken >= nk or looks >= nk + 100 then break end
        looks = looks + 1
        local k, turn = round[r], tonumber(round[r + 1])
        local list = prefix .. 'key_jobs:' .. q .. ':' .. k
        local leases, starts = prefix .. 'key_leases:' .. q .. ':' .. k, prefix .. 'key_starts:' .. q .. ':' .. k
        -- (A held key is never in the ready set: retry_keyed.lua takes it out, key_ready
        -- keeps it out.) until_ is when the key's limits free it if they hold it back now.
        local c, until_ = math.min(share, nk - taken), nil
        local nl, lfirst, ns, sfirst = 0, nil, 0, nil
        if conc > 0 then
          nl, lfirst = live(leases, now, conc, true)
          -- (A lapsed lease that still counts: until its node's next beat, which renews or
          -- drops it; a second at most, a release readies the key sooner.)
          if nl >= conc then until_ = math.max(lfirst, now + 1) end
          c = math.min(c, conc - nl)
        end
        if not until_ and rate > 0 then
          ns, sfirst = live(starts, now - per, rate)
          if ns >= rate then until_ = sfirst + per end
          c = math.min(c, rate - ns)
        end
        local jobs
        if not until_ then
          if c == 1 then
            local job = redis.call('LPOP', list)
            jobs = job and {job} or {}
          else
            -- LRANGE and LTRIM, not LPOP with a count: Redis 6.0 has none.
            jobs = redis.call('LRANGE', list, 0, c - 1)
            if #jobs > 0 then redis.call('LTRIM', list, #jobs, -1) end
          end
        end
        if until_ then
          redis.call('ZREM', ready, k)
          redis.call('ZADD', blocked, until_, k)
        elseif #jobs == 0 then
          redis.call('ZREM', ready, k) -- its list is empty
        else
          local lz, sz = {}, {}
          for _, job in ipairs(jobs) do
            local member = node .. ':' .. string.format('%d', first + taken)
            moved[#moved + 1] = job
            got[#got + 1] = job
            got[#got + 1] = k
            taken = taken + 1
            lz[#lz + 1] = now + 2 * ttl
            lz[#lz + 1] = member
            sz[#sz + 1] = now
            sz[#sz + 1] = member
          end
          if conc > 0 then
            redis.call('ZADD', leases, unpack(lz))
            redis.call('PEXPIRE', leases, math.ceil((2 * ttl + 3600) * 1000)) -- see fetch_limited.lua
          end
          if rate > 0 then
            redis.call('ZADD', starts, unpack(sz))
            redis.call('PEXPIRE', starts, math.ceil(per * 1000) + 1000)
          end
          if #jobs < c or redis.call('LLEN', list) == 0 then
            redis.call('ZREM', ready, k)
          elseif conc > 0 and nl + #jobs >= conc then
            -- Full now: until its earliest lease lapses (a release readies it sooner).
            redis.call('ZREM', ready, k)
            redis.call('ZADD', blocked, math.max(lfirst or now + 2 * ttl, now + 1), k)
          elseif rate > 0 and ns + #jobs >= rate then
            redis.call('ZREM', ready, k)
            redis.call('ZADD', blocked, (sfirst or now) + per, k)
          else
            redis.call('ZADD', ready, turn + #jobs / (weights[k] or 1), k)
          end
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
          moved[#moved + 1] = tail[j]
          got[#got + 1] = tail[j]
          got[#got + 1] = ''
        end
      end
    end
    -- Into the backup list, in the order taken (one LPUSH per thousand jobs).
    for j = 1, #moved, 1000 do
      redis.call('LPUSH', dst, unpack(moved, j, math.min(j + 999, #moved)))
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
