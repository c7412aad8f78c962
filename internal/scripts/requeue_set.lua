-- requeue_set: move jobs, by their exact raw strings, from a sorted set (retry, schedule or
-- dead) to the queue named in their "queue" field, byte for byte, and wake idle nodes. A job
-- already gone from the set is skipped, so repeating a call moves nothing twice. A member that
-- cannot be routed (no queue) stays where it is.
-- KEYS[1] P retry, P schedule or P dead
-- ARGV[1] prefix P   ARGV[2] wake channel   ARGV[3..] raw jobs
-- Returns the number of jobs moved.
-- (PUBLISH uses pcall: wake-ups are best effort, and a user without the channel permission
-- must not turn a written job into a failed call.)
local moved = 0
local woken = {}
for i = 3, #ARGV do
  local raw = ARGV[i]
  local ok, job = pcall(cjson.decode, raw)
  local q = nil
  if ok and type(job) == 'table' then q = job['queue'] end
  if type(q) == 'string' and q ~= '' and redis.call('ZREM', KEYS[1], raw) > 0 then
    redis.call('SADD', ARGV[1] .. 'queues', q)
    redis.call('LPUSH', ARGV[1] .. 'queue:' .. q, raw)
    moved = moved + 1
    if not woken[q] then
      woken[q] = true
      redis.pcall('PUBLISH', ARGV[2], q)
    end
  end
end
return moved
