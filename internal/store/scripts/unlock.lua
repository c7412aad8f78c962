-- unlock: release a unique lock if the given job still holds it (compare-and-delete).
-- KEYS[1] P unique:<token>     ARGV[1] jid
-- Returns 1 when released.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
