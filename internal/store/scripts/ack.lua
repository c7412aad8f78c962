-- ack: take a finished unique job off the backup list and release its lock, if it still holds
-- it (compare-and-delete on the jid: a lock that expired and was taken by another job stays).
-- A job no longer in the backup list was handed back to its queue and will run again, so it
-- keeps its lock.
-- A run from an incarnation of the node that was buried removes nothing (see ack_batch.lua).
-- KEYS[1] P queue:backup::<node>::<q>     KEYS[2] P unique:<token>
-- KEYS[3] P heartbeats    KEYS[4] P heartbeat_epochs
-- ARGV[1] raw job         ARGV[2] jid
-- ARGV[3] node            ARGV[4] the incarnation token of the run ('' for no check)
-- Returns the number of backup entries removed.
if ARGV[4] ~= '' and (not redis.call('ZSCORE', KEYS[3], ARGV[3]) or redis.call('HGET', KEYS[4], ARGV[3]) ~= ARGV[4]) then return 0 end
local removed = redis.call('LREM', KEYS[1], -1, ARGV[1])
if removed > 0 and redis.call('GET', KEYS[2]) == ARGV[2] then redis.call('DEL', KEYS[2]) end
return removed
