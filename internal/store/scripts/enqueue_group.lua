-- enqueue_group: writes a group of one-job enqueues (see groupCommit), each job exactly as
-- enqueue.lua (now) or enqueue_at.lua (scheduled) would, but for the wake-ups, sent once at the
-- end: one PUBLISH per queue that got a job, and, as enqueue_all.lua does, one ":due:<score>"
-- for the group's earliest scheduled job when it is due before every job the schedule held. A
-- command's error fails its job only (redis.pcall).
-- KEYS[1] P schedule   KEYS[2] P queues   KEYS[2+q] P queue:<queue q>, for q = 1..Q
-- KEYS[2+Q+u] P unique:<token of unique job u>, for u = 1..U (a token may repeat)
-- ARGV[1] wake channel   ARGV[2] Q   ARGV[3] N (jobs)   ARGV[3+q] queue name q
-- then six values per job: queue number (0: scheduled), score ("" = now), JSON,
-- unique job number u (0: not unique), jid, lock TTL in ms.
-- Returns two values per job: 0, "" when written (or when its lock is held by its own jid:
-- a repeat that wrote it); 1, holder jid on a unique conflict; 2, error text on an error.
local Q, N = tonumber(ARGV[2]), tonumber(ARGV[3])
local jobs0 = 3 + Q
local out, woken = {}, {}
-- head: the schedule's first score before the group's first ZADD (false: none); earliest: the
-- group's earliest scheduled score, and earliestAt its text.
local head, earliest, earliestAt = nil, nil, nil
local function failed(r)
  return type(r) == 'table' and r.err
end
for i = 1, N do
  local b = jobs0 + 6 * (i - 1)
  local q, score, job, u = tonumber(ARGV[b + 1]), ARGV[b + 2], ARGV[b + 3], tonumber(ARGV[b + 4])
  local code, val, write = 0, '', true
  if u > 0 then
    local key, jid = KEYS[2 + Q + u], ARGV[b + 5]
    local r = redis.pcall('SET', key, jid, 'PX', ARGV[b + 6], 'NX')
    if failed(r) then
      code, val, write = 2, r.err, false
    elseif not r then
      write = false
      local holder = redis.pcall('GET', key)
      if failed(holder) then
        code, val = 2, holder.err
      elseif holder ~= jid then
        code, val = 1, holder or ''
      end
    end
  end
  if write then
    local r
    if q > 0 then
      r = redis.pcall('SADD', KEYS[2], ARGV[3 + q])
      if not failed(r) then
        r = redis.pcall('LPUSH', KEYS[2 + q], job)
        if not failed(r) then woken[q] = true end
      end
    else
      if head == nil then
        local h = redis.pcall('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
        head = (not failed(h) and tonumber(h[2] or '')) or false
      end
      r = redis.pcall('ZADD', KEYS[1], score, job)
      if not failed(r) and (not earliest or tonumber(score) < earliest) then
        earliest, earliestAt = tonumber(score), score
      end
    end
    if failed(r) then code, val = 2, r.err end
  end
  out[#out + 1] = code
  out[#out + 1] = val
end
for q = 1, Q do
  if woken[q] then redis.pcall('PUBLISH', ARGV[1], ARGV[3 + q]) end
end
if earliest and (not head or earliest < head) then
  redis.pcall('PUBLISH', ARGV[1], ':due:' .. earliestAt)
end
return out
