-- enqueue_all: push a mixed list of immediate and scheduled jobs in one atomic step. Each
-- unique job takes its lock first; a job whose lock is held is skipped and reported.
-- KEYS[1] P schedule   KEYS[2] P queues   KEYS[2+q] P queue:<queue q>, for q = 1..Q
-- KEYS[2+Q+u] P unique:<token of unique job u>, for u = 1..U
-- ARGV[1] wake channel   ARGV[2] Q   ARGV[3] N (jobs)   ARGV[4] U
-- ARGV[4+q] queue name q; ARGV[5+Q] where each job goes: "" when every job goes to queue 1
-- now (the common batch), else "<queue number>,<score>;" per job (queue 0 and a score for a
-- scheduled job, an empty score for now); then the N jobs' JSON, one value each (three values
-- per job were most of what the client wrote and Redis parsed); then three values per unique
-- job u: its job number, its jid, its lock TTL in ms.
-- Returns {job number, holder jid, …} for the jobs skipped on a unique conflict ({} when all
-- were written). Redis does not roll back a script that fails half-way, so every key is
-- type-checked before the first write. A lock already held by its own job's jid means this
-- call repeats one that wrote the whole batch (a client library sending the script again after
-- a broken connection): then nothing is written and {} is returned.
-- Scheduled jobs are announced on the wake channel as ":due:<earliest score>" when the earliest
-- is due before every job the schedule set held, so that sleeping schedulers look again
-- (scheduler.go). (PUBLISH uses pcall: wake-ups are best effort, and a user without the channel
-- permission must not turn a written job into a failed call.)
-- expect, push_lists and push_scheduled are push.lua's (scripts.go puts it before this text).
local Q, N, U = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local jobs0, uniq0 = 5 + Q, 5 + Q + N
local err = expect(KEYS[1], 'zset') or expect(KEYS[2], 'set')
for q = 1, Q do err = err or expect(KEYS[2 + q], 'list') end
for u = 1, U do err = err or expect(KEYS[2 + Q + u], 'string') end
if err then return err end

local qs, scores
if ARGV[5 + Q] ~= '' then
  qs, scores = {}, {}
  for q, score in string.gmatch(ARGV[5 + Q], '(%d+),([^;]*);') do
    qs[#qs + 1], scores[#scores + 1] = tonumber(q), score
  end
  if #qs ~= N then return redis.error_reply('enqueue_all: ' .. #qs .. ' placements for ' .. N .. ' jobs; nothing was written') end
end

for u = 1, U do
  local base = uniq0 + 3 * (u - 1)
  if redis.call('GET', KEYS[2 + Q + u]) == ARGV[base + 2] then return {} end
end

local skipped, out = {}, {}
for u = 1, U do
  local base = uniq0 + 3 * (u - 1)
  local i, jid, ttl = tonumber(ARGV[base + 1]), ARGV[base + 2], ARGV[base + 3]
  local key = KEYS[2 + Q + u]
  if not redis.call('SET', key, jid, 'PX', ttl, 'NX') then
    skipped[i] = true
    out[#out + 1] = i
    out[#out + 1] = redis.call('GET', key)
  end
end

-- Jobs are collected per queue (and for the schedule) in batch order, then written with one
-- LPUSH or ZADD per chunk: far cheaper than a call per job, and the order is kept.
local lists, scheduled = {}, {}
for i = 1, N do
  if not skipped[i] then
    local q, score, job = 1, '', ARGV[jobs0 + i]
    if qs then q, score = qs[i], scores[i] end
    if score == '' then
      local l = lists[q]
      if not l then
        l = {}
        lists[q] = l
      end
      l[#l + 1] = job
    else
      scheduled[#scheduled + 1] = score
      scheduled[#scheduled + 1] = job
    end
  end
end
push_lists(lists, Q, KEYS[2], 2, 4, ARGV[1])
push_scheduled(KEYS[1], scheduled, ARGV[1])
return out
