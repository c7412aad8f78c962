-- retry: put a failed (or snoozed) job into the retry set and take it off the backup list, as
-- one step. If the raw job is no longer in the backup list, someone already put it back on its
-- queue (shutdown hand-back or a rescue), so writing a retry as well would run it twice.
-- KEYS[1] P retry         KEYS[2] P queue:backup::<node>::<q>
-- ARGV[1] due score       ARGV[2] rewritten job     ARGV[3] raw job as fetched
-- ARGV[4] wake channel
-- Returns 1 when written, 0 when the job was not in the backup list.
-- A job due before every job the set held is announced on the wake channel as ":due:<score>",
-- so that sleeping schedulers look again (scheduler.go). (PUBLISH uses pcall: wake-ups are
-- best effort, and a user without the channel permission must not turn a written job into a
-- failed call.)
if redis.call('LREM', KEYS[2], -1, ARGV[3]) == 0 then return 0 end
local head = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2] or '')
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
if ARGV[4] and (not head or tonumber(ARGV[1]) < head) then
  redis.pcall('PUBLISH', ARGV[4], ':due:' .. ARGV[1])
end
return 1
