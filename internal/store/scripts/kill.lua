-- kill: move jobs, by their exact raw strings, from the retry or schedule set to the dead set,
-- byte for byte, scored now (their time of death), and trim the dead set by age and by count
-- as dead.lua does (Sidekiq Web's "Kill"). A job already gone from its set is skipped, so a
-- job the scheduler moved to its queue meanwhile is not also buried, and repeating a call
-- moves nothing twice. KEYS[1] may also be a queue (a list): a waiting job cancelled by the
-- admin API's CancelJob, removed once (LREM) and buried.
-- KEYS[1] P retry, P schedule or P queue:<q>   KEYS[2] P dead
-- ARGV[1] now score   ARGV[2] oldest score kept (now - DeadTimeout)   ARGV[3] most dead jobs kept
-- ARGV[4..] raw jobs
-- Returns the number of jobs moved.
local moved = 0
local list = redis.call('TYPE', KEYS[1])['ok'] == 'list'
for a = 4, #ARGV do
  local gone
  if list then gone = redis.call('LREM', KEYS[1], 1, ARGV[a]) else gone = redis.call('ZREM', KEYS[1], ARGV[a]) end
  if gone > 0 then
    redis.call('ZADD', KEYS[2], ARGV[1], ARGV[a])
    moved = moved + 1
  end
end
if moved > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -(tonumber(ARGV[3]) + 1))
end
return moved
