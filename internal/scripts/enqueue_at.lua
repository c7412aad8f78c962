-- enqueue_at: add one job to the schedule set. A unique job first takes its lock; if another
-- job holds it, nothing is written.
-- KEYS[1] P schedule      KEYS[2] P unique:<token> (unique jobs only)
-- ARGV[1] due score       ARGV[2] job JSON      ARGV[3] jid      ARGV[4] lock TTL in ms
-- Returns 0 when written, {1, holder jid} on a unique conflict.
if KEYS[2] then
  if not redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4], 'NX') then
    return {1, redis.call('GET', KEYS[2])}
  end
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
return 0
