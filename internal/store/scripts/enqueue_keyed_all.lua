-- enqueue_keyed_all: enqueue_keyed.lua for many keyed jobs in one call (EnqueueAll): each
-- onto the tail of its key's list (its key readied as there) or, with a due time, into its
-- queue's delayed set; one wake-up per queue. Unique jobs go through enqueue_keyed.lua.
-- KEYS[1] P queues
-- ARGV[1] wake channel   ARGV[2] namespace prefix
-- ARGV[3..] quadruples: queue, key, job JSON, due score ('' for now)
-- Returns the number of jobs written.
local prefix, woken, n, memo = ARGV[2], {}, 0, {}
for i = 3, #ARGV, 4 do
  local q, k, job, due = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  if not woken[q] then redis.call('SADD', KEYS[1], q) end
  if due ~= '' then
    redis.call('ZADD', prefix .. 'key_delayed:' .. q, due, job)
  else
    if redis.call('RPUSH', prefix .. 'key_jobs:' .. q .. ':' .. k, job) == 1 then
      key_ready(prefix, q, k, 0, false, memo)
    end
  end
  woken[q] = true
  n = n + 1
end
for q in pairs(woken) do redis.pcall('PUBLISH', ARGV[1], q) end
return n
