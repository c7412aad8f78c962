-- retry: put a failed (or snoozed) job into the retry set and take it off the backup list, as
-- one step. If the raw job is no longer in the backup list, someone already put it back on its
-- queue (shutdown hand-back or a rescue), so writing a retry as well would run it twice.
-- Nor is it written for a run from an incarnation of the node that was buried (the job was
-- rescued; another run's entry may be in the list, see ack_batch.lua).
-- KEYS[1] P retry         KEYS[2] P queue:backup::<node>::<q>
-- KEYS[3] P heartbeats    KEYS[4] P heartbeat_epochs
-- ARGV[1] due score       ARGV[2] rewritten job     ARGV[3] raw job as fetched
-- ARGV[4] wake channel    ARGV[5] node   ARGV[6] the incarnation token of the run ('' for no check)
-- Returns 1 when written, 0 when the job was not in the backup list (or its run is a buried
-- incarnation's).
-- A job due before every job the set held is announced on the wake channel as ":due:<score>",
-- so that sleeping schedulers look again (scheduler.go). (PUBLISH uses pcall: wake-ups are
-- best effort, and a user without the channel permission must not turn a written job into a
-- failed call.)
if ARGV[6] ~= '' and (not redis.call('ZSCORE', KEYS[3], ARGV[5]) or redis.call('HGET', KEYS[4], ARGV[5]) ~= ARGV[6]) then return 0 end
if redis.call('LREM', KEYS[2], -1, ARGV[3]) == 0 then return 0 end
local head = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2] or '')
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
if ARGV[4] and (not head or tonumber(ARGV[1]) < head) then
  redis.pcall('PUBLISH', ARGV[4], ':due:' .. ARGV[1])
end
return 1
