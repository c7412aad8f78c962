-- kill_keyed: bury one waiting keyed job (the admin API's CancelJob, docs/keys.md), by its exact
-- raw string, from its key's list or from its queue's delayed set, into the dead set, scored
-- now, and trim the dead set as kill.lua does. A job that was a held sequence's failed job
-- (key_held names its jid) frees its key: the key's next job may start. A job gone from both
-- places (fetched, or moved meanwhile) is not buried; repeating a call moves nothing twice.
-- KEYS[1] P key_jobs:<q>:<k>   KEYS[2] P key_delayed:<q>   KEYS[3] P dead   KEYS[4] P key_held:<q>
-- ARGV[1] now score   ARGV[2] oldest score kept (now - DeadTimeout)   ARGV[3] most dead jobs kept
-- ARGV[4] raw job   ARGV[5] its jid   ARGV[6] queue name   ARGV[7] key   ARGV[8] namespace prefix
-- ARGV[9] wake channel
-- Returns 1 when the job was buried, 0 when it was in neither place.
local q, k, jid = ARGV[6], ARGV[7], ARGV[5]
if redis.call('LREM', KEYS[1], 1, ARGV[4]) == 0 then
  if redis.call('ZREM', KEYS[2], ARGV[4]) == 0 then return 0 end
  if redis.call('HGET', KEYS[4], k) == jid then
    redis.call('HDEL', KEYS[4], k)
    if redis.call('LLEN', KEYS[1]) > 0 and key_ready(ARGV[8], q, k, 0, true) then
      redis.pcall('PUBLISH', ARGV[9], q)
    end
  end
end
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[2])
redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -(tonumber(ARGV[3]) + 1))
return 1
