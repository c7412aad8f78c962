-- enqueue_at: add one job to the schedule set. A unique job first takes its lock; if another
-- job holds it, nothing is written.
-- KEYS[1] P schedule      KEYS[2] P unique:<token> (unique jobs only)
-- ARGV[1] due score       ARGV[2] job JSON      ARGV[3] wake channel
-- ARGV[4] jid             ARGV[5] lock TTL in ms (unique jobs only)
-- Returns 0 when written, {1, holder jid} on a unique conflict; 0 without writing when the lock
-- is held by this very jid (a repeat of a call that wrote the job, see enqueue.lua).
-- A job due before every job the set held is announced on the wake channel as ":due:<score>",
-- so that sleeping schedulers look again (scheduler.go). (PUBLISH uses pcall: wake-ups are
-- best effort, and a user without the channel permission must not turn a written job into a
-- failed call.)
if KEYS[2] then
  if not redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5], 'NX') then
    local holder = redis.call('GET', KEYS[2])
    if holder == ARGV[4] then return 0 end
    return {1, holder}
  end
end
local head = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2] or '')
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
if not head or tonumber(ARGV[1]) < head then
  redis.pcall('PUBLISH', ARGV[3], ':due:' .. ARGV[1])
end
return 0
