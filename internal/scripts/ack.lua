-- ack: take a finished unique job off the backup list and release its lock, if it still holds
-- it (compare-and-delete on the jid: a lock that expired and was taken by another job stays).
-- A job no longer in the backup list was handed back to its queue and will run again, so it
-- keeps its lock.
-- KEYS[1] P queue:backup::<node>::<q>     KEYS[2] P unique:<token>
-- ARGV[1] raw job         ARGV[2] jid
-- Returns the number of backup entries removed.
local removed = redis.call('LREM', KEYS[1], -1, ARGV[1])
if removed > 0 and redis.call('GET', KEYS[2]) == ARGV[2] then redis.call('DEL', KEYS[2]) end
return removed
