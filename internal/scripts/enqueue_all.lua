-- enqueue_all: push a mixed list of immediate and scheduled jobs, all or nothing.
-- KEYS[1] P schedule      KEYS[2] P queues      KEYS[2+i] P queue:<q of job i>
-- ARGV[1] wake channel, then three values per job i:
--   ARGV[3i-1] queue name  ARGV[3i] score ("" = now)  ARGV[3i+1] job JSON
-- Returns one status per job, in order (0 = written).
local out = {}
local woken = {}
local n = (#ARGV - 1) / 3
for i = 1, n do
  local q, score, job = ARGV[3*i - 1], ARGV[3*i], ARGV[3*i + 1]
  if score == '' then
    redis.call('SADD', KEYS[2], q)
    redis.call('LPUSH', KEYS[2 + i], job)
    if not woken[q] then
      woken[q] = true
      redis.call('PUBLISH', ARGV[1], q)
    end
  else
    redis.call('ZADD', KEYS[1], score, job)
  end
  out[i] = 0
end
return out
