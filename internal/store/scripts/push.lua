-- push: the prelude scripts.go puts before enqueue_all.lua, push_relayed.lua and
-- workflow_create.lua, so that the three check keys and write jobs exactly alike.

-- expect returns an error reply when key holds a type other than want (nil when it holds
-- want or nothing): a script checks every key before its first write, since Redis does not
-- roll back a script that fails half-way.
local function expect(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE ' .. key .. ' is a ' .. t .. ', not a ' .. want .. '; nothing was written')
  end
end

-- push_lists pushes lists[q] (jobs in the order given) to KEYS[key0 + q], for q = 1..nq, one
-- LPUSH per chunk of 1000 (well inside Lua's limit on unpacked arguments); adds the queue's
-- name ARGV[name0 + q] to the queues set and announces it on the wake channel. (PUBLISH uses
-- pcall: wake-ups are best effort, and a user without the channel permission must not turn a
-- written job into a failed call.)
local function push_lists(lists, nq, queues, key0, name0, wake)
  for q = 1, nq do
    local l = lists[q]
    if l then
      redis.call('SADD', queues, ARGV[name0 + q])
      for s = 1, #l, 1000 do
        redis.call('LPUSH', KEYS[key0 + q], unpack(l, s, math.min(s + 999, #l)))
      end
      redis.pcall('PUBLISH', wake, ARGV[name0 + q])
    end
  end
end

-- push_scheduled adds score/job pairs (scheduled = {score, job, score, job, …}) to the schedule
-- set, one ZADD per 1000 pairs, and announces ":due:<earliest score>" on the wake channel when
-- the earliest is due before every job the set held, so that sleeping schedulers look again.
local function push_scheduled(schedule, scheduled, wake)
  if #scheduled == 0 then return end
  local head = tonumber(redis.call('ZRANGE', schedule, 0, 0, 'WITHSCORES')[2] or '')
  local earliest, at = nil, nil
  for s = 1, #scheduled, 2 do
    local n = tonumber(scheduled[s])
    if not earliest or n < earliest then earliest, at = n, scheduled[s] end
  end
  for s = 1, #scheduled, 2000 do
    redis.call('ZADD', schedule, unpack(scheduled, s, math.min(s + 1999, #scheduled)))
  end
  if not head or earliest < head then
    redis.pcall('PUBLISH', wake, ':due:' .. at)
  end
end

