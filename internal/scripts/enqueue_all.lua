-- enqueue_all: push a mixed list of immediate and scheduled jobs, all or nothing.
-- KEYS[1] P schedule      KEYS[2] P queues      KEYS[2+i] P queue:<q of job i>
-- ARGV[1] wake channel, then three values per job i:
--   ARGV[3i-1] queue name  ARGV[3i] score ("" = now)  ARGV[3i+1] job JSON
-- Returns one status per job, in order (0 = written). Redis does not roll back a script
-- that fails half-way, so every key is type-checked before the first write.
local function expect(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE ' .. key .. ' is a ' .. t .. ', not a ' .. want .. '; nothing was written')
  end
end
local n = (#ARGV - 1) / 3
local err = expect(KEYS[1], 'zset') or expect(KEYS[2], 'set')
if err then return err end
for i = 1, n do
  if ARGV[3*i] == '' then
    err = expect(KEYS[2 + i], 'list')
    if err then return err end
  end
end
local out = {}
local woken = {}
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
