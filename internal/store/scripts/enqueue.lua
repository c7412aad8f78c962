-- enqueue: push one job onto its queue now and wake idle exq nodes. A unique job first takes
-- its lock; if another job holds it, nothing is written.
-- KEYS[1] P queues        KEYS[2] P queue:<q>        KEYS[3] P unique:<token> (unique jobs only)
-- ARGV[1] queue name      ARGV[2] job JSON      ARGV[3] wake channel
-- ARGV[4] jid             ARGV[5] lock TTL in ms (unique jobs only)
-- Returns 0 when written, {1, holder jid} on a unique conflict. A lock already held by this
-- very jid means this call is a repeat of one that wrote the job (a client library sending
-- the script again after a broken connection): it returns 0 and writes nothing more.
-- (PUBLISH uses pcall: wake-ups are best effort, and a user without the channel permission
-- must not turn a written job into a failed call.) A push that fails (the queue key holds
-- another type) takes back the queue's name and the lock this call wrote: nothing changes.
if KEYS[3] then
  if not redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5], 'NX') then
    local holder = redis.call('GET', KEYS[3])
    if holder == ARGV[4] then return 0 end
    return {1, holder}
  end
end
local added = redis.call('SADD', KEYS[1], ARGV[1])
local pushed = redis.pcall('LPUSH', KEYS[2], ARGV[2])
if type(pushed) == 'table' and pushed.err then
  -- The queue key holds another type (someone else wrote it): take back what this call
  -- wrote, so that a refused enqueue leaves Redis as it was (removals, which run under OOM).
  if added == 1 then redis.call('SREM', KEYS[1], ARGV[1]) end
  if KEYS[3] then redis.call('DEL', KEYS[3]) end
  return redis.error_reply(pushed.err)
end
redis.pcall('PUBLISH', ARGV[3], ARGV[1])
return 0
