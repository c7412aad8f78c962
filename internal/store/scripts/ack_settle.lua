-- ack_settle: the acknowledgements of finished jobs (ack_batch.lua) with the transitions of
-- the batches and workflows of those that belong to one, in one call: each transition exactly
-- as its own script records it (batch_settle.lua, workflow_settle.lua; scripts.go puts their
-- text before this one as the functions batch_settle and workflow_settle), then each job taken
-- off its backup list. A job's transition and its LREM are one atomic step: a node that dies
-- before the call leaves both undone (the job is rescued and runs again), after it both done;
-- why that is exactly once: docs/workflows.md, "The transition in the acknowledgement".
-- A job whose item was given a stale route (the item's reply is {-1, ...}: nothing written)
-- is not taken off: its caller sends the call again for it with the stored route.
-- KEYS[1] P heartbeats   KEYS[2] P heartbeat_epochs   then every item's keys, one item after
-- the other; then the backup lists and leases sets the groups name.
-- ARGV[1] node   ARGV[2] I (items)   then per item: "b" (batch), "w" (a workflow's job) or "m"
-- (the successes of jobs of one workflow: workflow_succeed below), its number of keys, its
-- number of arguments, its arguments; then groups as ack_batch.lua's, each: 'a'
-- (finished jobs), 'l' (leases) or 'f' (finished jobs of batches or workflows), the index in
-- KEYS of their key, the incarnation token of their runs ('' for no check; unused for
-- leases), the count n, then the n raw jobs or leases; for 'f', three values per job: the
-- numbers of the (one or two) items it depends on (0 for none), then the raw job.
-- Returns {removed (backup entries and leases), then one reply per item as its own script
-- replies}.
-- Out of memory it runs: the first item's first write is a removal (HDEL), as is an LREM.
-- Any error raised by a transition stops the script before any job is taken off.

-- workflow_succeed: the successes of jobs of one workflow, recorded as workflow_settle.lua
-- records them one after the other, with the graph read and written once for all of them:
-- the jobs' states and their children's counts of unfinished parents in one HMGET each, the
-- new states and counts in one HSET each, the workflow's count in one HINCRBY, the released
-- jobs pushed as workflow_settle.lua pushes them. The same end state, since no job of the call
-- that changes is a child of another (a job runs only once all its parents have ended); when
-- one is (a job run by hand, say), the jobs are recorded one by one by workflow_settle itself.
-- KEYS as workflow_settle.lua's: P wf:<id>, P wf:<id>:graph, P wf:<id>:jobs, P queues, then
-- P queue:<q> for each queue q of the workflow.
-- ARGV[1] now (seconds)   ARGV[2] wake channel   ARGV[3] the workflow's queues as the caller
-- read them   ARGV[4] N   ARGV[5..4+N] the jobs' names   then the queue names of KEYS[4+q].
-- Returns {-1, queues} (nothing written) when ARGV[3] is not the workflow's "queues" field;
-- else, per job in order, workflow_settle.lua's reply {changed, released, canceled, finished}.
local function workflow_succeed(KEYS, ARGV)
  local chunk = 1000 -- fields per command: well inside Lua's limit on unpacked arguments
  local function call(cmd, key, list, per)
    local out = {}
    for s = 1, #list, chunk * per do
      local r = redis.call(cmd, key, unpack(list, s, math.min(s + chunk * per - 1, #list)))
      if type(r) == 'table' then
        for _, v in ipairs(r) do out[#out + 1] = v end
      end
    end
    return out
  end
  local N = tonumber(ARGV[4])
  local names, qnames = {}, {}
  for i = 1, N do names[i] = ARGV[4 + i] end
  for q = 5 + N, #ARGV do qnames[#qnames + 1] = ARGV[q] end
  local out = {}
  for i = 1, 4 * N do out[i] = 0 end
  local meta = redis.call('HMGET', KEYS[1], 'queues', 'total', 'succeeded', 'dead', 'canceled')
  if not meta[1] then return out end -- no such workflow (expired, or never created)
  if meta[1] ~= ARGV[3] then return {-1, meta[1]} end
  local f = {}
  for i, n in ipairs(names) do
    f[2 * i - 1] = 's:' .. n
    f[2 * i] = 'c:' .. n
  end
  local sc = call('HMGET', KEYS[2], f, 2)
  local inCall, changes, seen, kids = {}, {}, {}, {}
  for i, n in ipairs(names) do
    inCall[n] = true
    local s = sc[2 * i - 1]
    if not seen[n] and s ~= 'succeeded' and s ~= 'dead' and s ~= 'canceled' then
      changes[i] = true
      if sc[2 * i] then
        for child in string.gmatch(sc[2 * i], '[^\n]+') do kids[#kids + 1] = child end
      end
    end
    seen[n] = true
  end
  for _, c in ipairs(kids) do
    if inCall[c] then
      -- A job of the call is a child of another that changes: one by one, in order.
      for i, n in ipairs(names) do
        local args = {n, 'succeeded', ARGV[1], ARGV[2], ARGV[3]}
        for _, q in ipairs(qnames) do args[#args + 1] = q end
        local r = workflow_settle(KEYS, args)
        for j = 1, 4 do out[4 * (i - 1) + j] = r[j] end
      end
      return out
    end
  end
  -- Every read before the first write: the children's counts.
  local count, wf, distinct = {}, {}, {}
  for _, c in ipairs(kids) do
    if not count[c] then
      count[c] = 0
      distinct[#distinct + 1] = c
      wf[#wf + 1] = 'w:' .. c
    end
  end
  local vals = call('HMGET', KEYS[2], wf, 1)
  for i, c in ipairs(distinct) do count[c] = tonumber(vals[i] or '0') end
  -- The first write is a removal: each job's own count (0 once it runs), so out of memory this
  -- runs as workflow_settle.lua does.
  local own = {}
  for i, n in ipairs(names) do own[i] = 'w:' .. n end
  call('HDEL', KEYS[2], own, 1)
  local total = tonumber(meta[2])
  local ended = tonumber(meta[3] or '0') + tonumber(meta[4] or '0') + tonumber(meta[5] or '0')
  local states, ready, by = {}, {}, {}
  local succeeded, finished = 0, false
  for i, n in ipairs(names) do
    if changes[i] then
      states[#states + 1] = 's:' .. n
      states[#states + 1] = 'succeeded'
      succeeded = succeeded + 1
      ended = ended + 1
      out[4 * (i - 1) + 1] = 1
      if ended >= total then
        out[4 * i] = 1
        finished = true
      end
      if sc[2 * i] then
        for child in string.gmatch(sc[2 * i], '[^\n]+') do
          -- A canceled child's count is far below 0: it never reaches 0 here.
          count[child] = count[child] - 1
          if count[child] == 0 then
            ready[#ready + 1] = child
            by[#ready] = i
          end
        end
      end
    end
  end
  if succeeded == 0 then return out end
  call('HSET', KEYS[2], states, 2)
  redis.call('HINCRBY', KEYS[1], 'succeeded', succeeded)
  local counts = {}
  for _, c in ipairs(distinct) do
    counts[#counts + 1] = 'w:' .. c
    counts[#counts + 1] = string.format('%d', count[c])
  end
  call('HSET', KEYS[2], counts, 2)
  -- The released jobs: their documents pushed, one LPUSH per queue, and their states set.
  local qkey = {}
  for q, name in ipairs(qnames) do qkey[name] = KEYS[4 + q] end
  for s = 1, #ready, chunk do
    local rn, qf, st = {}, {}, {}
    for i = s, math.min(s + chunk - 1, #ready) do
      rn[#rn + 1] = ready[i]
      qf[#qf + 1] = 'q:' .. ready[i]
      st[#st + 1] = 's:' .. ready[i]
      st[#st + 1] = 'queued'
    end
    local docs = redis.call('HMGET', KEYS[3], unpack(rn))
    local qs = redis.call('HMGET', KEYS[2], unpack(qf))
    redis.call('HDEL', KEYS[3], unpack(rn))
    redis.call('HSET', KEYS[2], unpack(st))
    local lists, order = {}, {}
    for i = 1, #rn do
      if docs[i] then
        local l = lists[qs[i]]
        if not l then
          l = {}
          lists[qs[i]] = l
          order[#order + 1] = qs[i]
        end
        l[#l + 1] = docs[i]
        local at = 4 * (by[s + i - 1] - 1) + 2
        out[at] = out[at] + 1
      end
    end
    for _, q in ipairs(order) do
      redis.call('SADD', KEYS[4], q)
      redis.call('LPUSH', qkey[q], unpack(lists[q]))
      redis.pcall('PUBLISH', ARGV[2], q)
    end
  end
  if finished then
    redis.call('HSET', KEYS[1], 'finished_at', ARGV[1])
    local ttl = tonumber(redis.call('HGET', KEYS[1], 'ttl') or '86400')
    for k = 1, 3 do redis.call('EXPIRE', KEYS[k], ttl) end
  end
  return out
end

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
  elseif kind == 'm' then
    r = workflow_succeed(keys, args)
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
