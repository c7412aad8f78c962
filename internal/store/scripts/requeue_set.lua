-- requeue_set: move jobs, by their exact raw strings, from a sorted set (retry, schedule or
-- dead) to their queues, byte for byte, and wake idle nodes. The caller reads each job's
-- "queue" field and leaves out the jobs it cannot route (they stay in the set), so every key is
-- declared here (Redis Cluster and ACL key patterns need that). A job already gone from the set
-- is skipped, so repeating a call moves nothing twice.
-- KEYS[1] P retry, P schedule or P dead   KEYS[2] P queues
-- KEYS[2+q] P queue:<queue q>, for q = 1..Q
-- ARGV[1] wake channel, then three values per job: queue number q, queue name, raw job
-- Returns the number of jobs moved.
-- (PUBLISH uses pcall: wake-ups are best effort, and a user without the channel permission
-- must not turn a written job into a failed call.)
local moved = 0
local woken = {}
for a = 2, #ARGV, 3 do
  local q, name, raw = tonumber(ARGV[a]), ARGV[a + 1], ARGV[a + 2]
  if redis.call('ZREM', KEYS[1], raw) > 0 then
    redis.call('SADD', KEYS[2], name)
    redis.call('LPUSH', KEYS[2 + q], raw)
    moved = moved + 1
    if not woken[name] then
      woken[name] = true
      redis.pcall('PUBLISH', ARGV[1], name)
    end
  end
end
return moved
