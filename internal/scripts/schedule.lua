-- schedule: move up to a page of due jobs from a sorted set (schedule or retry) to the queues
-- named in their "queue" field, raw strings unchanged. A member that cannot be routed (bad JSON,
-- no queue) goes to the dead set wrapped as a poison message instead of blocking the set forever.
-- Due means any score up to now from -inf, not from 0: a job another runtime scheduled before
-- 1970 has a negative score and would otherwise wait forever.
-- KEYS[1] P schedule or P retry           KEYS[2] P dead
-- ARGV[1] now score       ARGV[2] page size       ARGV[3] prefix P (destination keys are
-- known only here)        ARGV[4] wake channel    ARGV[5] jid prefix for poison wrappers
-- ARGV[6] poison class    ARGV[7] poison error class
-- Returns the number of members moved.
-- (PUBLISH uses pcall: wake-ups are best effort, and a user without the channel permission
-- must not turn a written job into a failed call.)
local jobs = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local woken = {}
for i, job in ipairs(jobs) do
  redis.call('ZREM', KEYS[1], job)
  local ok, decoded = pcall(cjson.decode, job)
  local q = nil
  if ok and type(decoded) == 'table' then q = decoded['queue'] end
  if type(q) == 'string' and q ~= '' then
    redis.call('SADD', ARGV[3] .. 'queues', q)
    redis.call('LPUSH', ARGV[3] .. 'queue:' .. q, job)
    if not woken[q] then
      woken[q] = true
      redis.pcall('PUBLISH', ARGV[4], q)
    end
  else
    local wrapped = '{"class":' .. cjson.encode(ARGV[6]) .. ',"args":[],"queue":"","jid":' ..
      cjson.encode(ARGV[5] .. i) .. ',"raw":' .. cjson.encode(job) .. ',"enqueued_at":' .. ARGV[1] ..
      ',"retry":0,"retry_count":0,"failed_at":' .. ARGV[1] .. ',"retried_at":' .. ARGV[1] ..
      ',"error_class":' .. cjson.encode(ARGV[7]) ..
      ',"error_message":' .. cjson.encode('cannot route a job from ' .. KEYS[1] .. ': not a JSON object with a queue') .. '}'
    redis.call('ZADD', KEYS[2], ARGV[1], wrapped)
  end
end
return #jobs
