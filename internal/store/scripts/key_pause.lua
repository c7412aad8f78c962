-- key_pause: pause or resume one key of a queue on every node (API.PauseKey, API.ResumeKey;
-- docs/keys.md). Pausing adds the key to key_paused:<q> and takes it out of the ready and
-- blocked sets: no fetch looks at it, and key_ready (keyed.lua), which every path that
-- readies a key goes through, leaves it out while it is paused. Its jobs keep waiting in its
-- list (enqueues go on) and its running jobs end as usual. Resuming removes it from the set
-- and readies it when it has jobs waiting (unless a failed job of its sequence holds it: the
-- retry readies it when due); the fetch checks its limits again.
-- KEYS[1] P key_paused:<q>   KEYS[2] P key_ready:<q>   KEYS[3] P key_blocked:<q>
-- KEYS[4] P key_jobs:<q>:<k>
-- ARGV[1] '1' to pause, '0' to resume   ARGV[2] queue name   ARGV[3] key
-- ARGV[4] namespace prefix   ARGV[5] wake channel
-- Returns 1 when the key's state changed, 0 when it was already so.
if ARGV[1] == '1' then
  local n = redis.call('SADD', KEYS[1], ARGV[3])
  redis.call('ZREM', KEYS[2], ARGV[3])
  redis.call('ZREM', KEYS[3], ARGV[3])
  return n
end
local n = redis.call('SREM', KEYS[1], ARGV[3])
if redis.call('LLEN', KEYS[4]) > 0 and key_ready(ARGV[4], ARGV[2], ARGV[3], 0, true) then
  redis.pcall('PUBLISH', ARGV[5], ARGV[2])
end
return n
