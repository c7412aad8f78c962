-- dead: move a job from the backup list to the dead set and trim the dead set by age and
-- by count, as one step (see retry.lua for why the backup removal comes first). A unique job
-- whose lock lasts until success also releases it here, if it still holds it.
-- A run from an incarnation of the node that was buried writes nothing (see retry.lua).
-- KEYS[1] P dead          KEYS[2] P queue:backup::<node>::<q>
-- KEYS[3] P heartbeats    KEYS[4] P heartbeat_epochs       KEYS[5] P unique:<token> (optional)
-- ARGV[1] now score       ARGV[2] dead job JSON      ARGV[3] raw job as fetched
-- ARGV[4] oldest score kept (now - DeadTimeout)      ARGV[5] most dead jobs kept
-- ARGV[6] node            ARGV[7] the incarnation token of the run ('' for no check)
-- ARGV[8] jid (with KEYS[5])
-- Returns 1 when written, 0 when the job was not in the backup list (or its run is a buried
-- incarnation's).
if ARGV[7] ~= '' and (not redis.call('ZSCORE', KEYS[3], ARGV[6]) or redis.call('HGET', KEYS[4], ARGV[6]) ~= ARGV[7]) then return 0 end
if redis.call('LREM', KEYS[2], -1, ARGV[3]) == 0 then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[4])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[5]) + 1))
if KEYS[5] and redis.call('GET', KEYS[5]) == ARGV[8] then redis.call('DEL', KEYS[5]) end
return 1
