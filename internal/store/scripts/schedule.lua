-- schedule: move one page of due jobs, read beforehand (ZRANGEBYSCORE … LIMIT), from a sorted
-- set (schedule or retry) to the queues named in their "queue" field, raw strings unchanged. The
-- caller decodes each member's queue, so every key is declared here (Redis Cluster and ACL key
-- patterns need that). Only a member still in the set moves (ZREM == 1): schedulers racing on
-- the same page never move a job twice. A member that cannot be routed (bad JSON, no queue)
-- goes to the dead set wrapped as a poison message instead of blocking the set forever.
-- KEYS[1] P schedule or P retry   KEYS[2] P queues   KEYS[3] P dead
-- KEYS[3+q] P queue:<queue q>, for q = 1..Q
-- ARGV[1] now score       ARGV[2] wake channel    ARGV[3] jid prefix for poison wrappers
-- ARGV[4] poison class    ARGV[5] poison error class
-- then three values per member i: queue number q (0 = cannot be routed), queue name, raw job
-- Returns the number of members moved.
-- (PUBLISH uses pcall: wake-ups are best effort, and a user without the channel permission
-- must not turn a written job into a failed call.)
local moved = 0
local woken = {}
local i = 0
for a = 6, #ARGV, 3 do
  i = i + 1
  local q, name, job = tonumber(ARGV[a]), ARGV[a + 1], ARGV[a + 2]
  if redis.call('ZREM', KEYS[1], job) == 1 then
    moved = moved + 1
    if q > 0 then
      redis.call('SADD', KEYS[2], name)
      redis.call('LPUSH', KEYS[3 + q], job)
      if not woken[name] then
        woken[name] = true
        redis.pcall('PUBLISH', ARGV[2], name)
      end
    else
      local wrapped = '{"class":' .. cjson.encode(ARGV[4]) .. ',"args":[],"queue":"","jid":' ..
        cjson.encode(ARGV[3] .. i) .. ',"raw":' .. cjson.encode(job) .. ',"enqueued_at":' .. ARGV[1] ..
        ',"retry":0,"retry_count":0,"failed_at":' .. ARGV[1] .. ',"retried_at":' .. ARGV[1] ..
        ',"error_class":' .. cjson.encode(ARGV[5]) ..
        ',"error_message":' .. cjson.encode('cannot route a job from ' .. KEYS[1] .. ': not a JSON object with a queue') .. '}'
      redis.call('ZADD', KEYS[3], ARGV[1], wrapped)
    end
  end
end
return moved
