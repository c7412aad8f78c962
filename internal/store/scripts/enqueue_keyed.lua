-- enqueue_keyed: write one keyed job (docs/keys.md): onto the tail of its key's list, the key
-- readied when the job is its only one and it is neither waiting for a time, held nor paused; or, with a due time, into
-- the queue's delayed set, from which a keyed fetch moves it when due. Never onto queue:<q>:
-- Sidekiq and Exq nodes would run it without its key's policy. A unique job first takes its
-- lock as enqueue.lua does.
-- KEYS[1] P queues   KEYS[2] P key_jobs:<q>:<k>   KEYS[3] P key_delayed:<q>
-- KEYS[4] P unique:<token> (unique jobs only)
-- ARGV[1] queue name   ARGV[2] job JSON   ARGV[3] wake channel   ARGV[4] jid
-- ARGV[5] lock TTL in ms (unique jobs only)   ARGV[6] key   ARGV[7] namespace prefix
-- ARGV[8] due score ('' for now)
-- Returns 0 when written, {1, holder jid} on a unique conflict (0 when the lock is held by
-- this jid: a repeat of a call that wrote the job).
if KEYS[4] then
  if not redis.call('SET', KEYS[4], ARGV[4], 'PX', ARGV[5], 'NX') then
    local holder = redis.call('GET', KEYS[4])
    if holder == ARGV[4] then return 0 end
    return {1, holder}
  end
end
redis.call('SADD', KEYS[1], ARGV[1])
if ARGV[8] ~= '' then
  redis.call('ZADD', KEYS[3], ARGV[8], ARGV[2])
  redis.pcall('PUBLISH', ARGV[3], ARGV[1])
  return 0
end
-- A key with jobs waiting already is in the ready, blocked, held or paused set (every path
-- that leaves a job in a key's list puts its key in one), so only a job that starts the
-- list readies it.
if redis.call('RPUSH', KEYS[2], ARGV[2]) == 1 then
  key_ready(ARGV[7], ARGV[1], ARGV[6], 0, false)
end
redis.pcall('PUBLISH', ARGV[3], ARGV[1])
return 0
