-- enqueue_all: push a mixed list of immediate and scheduled jobs in one atomic step. Each
-- unique job takes its lock first; a job whose lock is held is skipped and reported.
-- KEYS[1] P schedule      KEYS[2] P queues
-- KEYS[1+2i] P queue:<q of job i>      KEYS[2+2i] P unique:<token of job i>, or P queues
--                                       as a placeholder for a job that is not unique
-- ARGV[1] wake channel, then five values per job i (from ARGV[5i-3]):
--   queue name, score ("" = now), job JSON, jid, lock TTL in ms ("" = not unique)
-- Returns per job, in order: {0, jid} written or {1, holder jid} on a unique conflict.
-- Redis does not roll back a script that fails half-way, so every key is type-checked first.
-- (PUBLISH uses pcall: wake-ups are best effort, and a user without the channel permission
-- must not turn a written job into a failed call.)
local function expect(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE ' .. key .. ' is a ' .. t .. ', not a ' .. want .. '; nothing was written')
  end
end
local n = (#ARGV - 1) / 5
local err = expect(KEYS[1], 'zset') or expect(KEYS[2], 'set')
if err then return err end
for i = 1, n do
  local base = 5 * i - 3
  if ARGV[base + 1] == '' then err = expect(KEYS[1 + 2 * i], 'list') end
  if not err and ARGV[base + 4] ~= '' then err = expect(KEYS[2 + 2 * i], 'string') end
  if err then return err end
end
local out = {}
local woken = {}
for i = 1, n do
  local base = 5 * i - 3
  local q, score, job, jid, ttl = ARGV[base], ARGV[base + 1], ARGV[base + 2], ARGV[base + 3], ARGV[base + 4]
  local holder = nil
  if ttl ~= '' and not redis.call('SET', KEYS[2 + 2 * i], jid, 'PX', ttl, 'NX') then
    holder = redis.call('GET', KEYS[2 + 2 * i])
  end
  if holder then
    out[i] = {1, holder}
  else
    if score == '' then
      redis.call('SADD', KEYS[2], q)
      redis.call('LPUSH', KEYS[1 + 2 * i], job)
      if not woken[q] then
        woken[q] = true
        redis.pcall('PUBLISH', ARGV[1], q)
      end
    else
      redis.call('ZADD', KEYS[1], score, job)
    end
    out[i] = {0, jid}
  end
end
return out
