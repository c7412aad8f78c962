-- retry_keyed: retry.lua for a keyed job (docs/keys.md): the rewritten job goes into the
-- queue's delayed set (never the shared retry set, which Sidekiq's scheduler empties into
-- queue:<q>), and, for a sequence that a failure holds, its key is held: none of its later
-- jobs runs before this one, which goes back to the head of its key's list when due.
-- KEYS[1] P key_delayed:<q>   KEYS[2] P queue:backup::<node>::<q>
-- KEYS[3] P heartbeats        KEYS[4] P heartbeat_epochs   KEYS[5] P key_held:<q>
-- KEYS[6] P key_ready:<q>     KEYS[7] P key_blocked:<q>
-- ARGV[1] due score   ARGV[2] rewritten job   ARGV[3] raw job as fetched   ARGV[4] unused
-- ARGV[5] node   ARGV[6] the incarnation token of the run ('' for no check)
-- ARGV[7] key   ARGV[8] jid   ARGV[9] '1' to hold the key
-- Returns 1 when written, 0 when the job was not in the backup list (or its run is a buried
-- incarnation's).
if ARGV[6] ~= '' and (not redis.call('ZSCORE', KEYS[3], ARGV[5]) or redis.call('HGET', KEYS[4], ARGV[5]) ~= ARGV[6]) then return 0 end
if redis.call('LREM', KEYS[2], -1, ARGV[3]) == 0 then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
if ARGV[9] == '1' then
  redis.call('HSET', KEYS[5], ARGV[7], ARGV[8])
  redis.call('ZREM', KEYS[6], ARGV[7])
  redis.call('ZREM', KEYS[7], ARGV[7])
end
return 1
