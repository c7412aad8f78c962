-- enqueue: push one job onto its queue now and wake idle exq nodes. A unique job first takes
-- its lock; if another job holds it, nothing is written.
-- KEYS[1] P queues        KEYS[2] P queue:<q>        KEYS[3] P unique:<token> (unique jobs only)
-- ARGV[1] queue name      ARGV[2] job JSON      ARGV[3] wake channel
-- ARGV[4] jid             ARGV[5] lock TTL in ms (unique jobs only)
-- Returns 0 when written, {1, holder jid} on a unique conflict.
-- (PUBLISH uses pcall: wake-ups are best effort, and a user without the channel permission
-- must not turn a written job into a failed call.)
if KEYS[3] then
  if not redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5], 'NX') then
    return {1, redis.call('GET', KEYS[3])}
  end
end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('LPUSH', KEYS[2], ARGV[2])
redis.pcall('PUBLISH', ARGV[3], ARGV[1])
return 0
