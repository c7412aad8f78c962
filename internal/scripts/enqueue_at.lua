-- enqueue_at: add one job to the schedule set. A unique job first takes its lock; if another
-- job holds it, nothing is written.
-- KEYS[1] P schedule      KEYS[2] P unique:<token> (unique jobs only)
-- ARGV[1] due score       ARGV[2] job JSON      ARGV[3] jid      ARGV[4] lock TTL in ms
-- Returns 0 when written, {1, holder jid} on a unique conflict; 0 without writing when the lock
-- is held by this very jid (a repeat of a call that wrote the job, see enqueue.lua).
if KEYS[2] then
  if not redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4], 'NX') then
    local holder = redis.call('GET', KEYS[2])
    if holder == ARGV[3] then return 0 end
    return {1, holder}
  end
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
return 0
