-- enqueue: push one job onto its queue now and wake idle exq nodes. A unique job first takes
-- its lock; if another job holds it, nothing is written.
-- KEYS[1] P queues        KEYS[2] P queue:<q>        KEYS[3] P unique:<token> (unique jobs only)
-- ARGV[1] queue name      ARGV[2] job JSON      ARGV[3] wake channel
-- ARGV[4] jid             ARGV[5] lock TTL in ms (unique jobs only)
-- Returns 0 when written, {1, holder jid} on a unique conflict. A lock already held by this
-- very jid means this call is a repeat of one that wrote the job (a client library sending
-- the script again after a broken connection): it returns 0 and writes nothing more.
-- (PUBLISH uses pcall: wake-ups are best effort, and a user without the channel permission
-- must not turn a written job into a failed call.)
if KEYS[3] then
  if not redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5], 'NX') then
    local holder = redis.call('GET', KEYS[3])
    if holder == ARGV[4] then return 0 end
    return {1, holder}
  end
end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('LPUSH', KEYS[2], ARGV[2])
redis.pcall('PUBLISH', ARGV[3], ARGV[1])
return 0
