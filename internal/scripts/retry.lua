-- retry: put a failed (or snoozed) job into the retry set and take it off the backup list, as
-- one step. If the raw job is no longer in the backup list, someone already put it back on its
-- queue (shutdown hand-back or a rescue), so writing a retry as well would run it twice.
-- KEYS[1] P retry         KEYS[2] P queue:backup::<node>::<q>
-- ARGV[1] due score       ARGV[2] rewritten job     ARGV[3] raw job as fetched
-- Returns 1 when written, 0 when the job was not in the backup list.
if redis.call('LREM', KEYS[2], -1, ARGV[3]) == 0 then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
return 1
