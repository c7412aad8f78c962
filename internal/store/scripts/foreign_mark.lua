-- foreign_mark: note that job jid of a batch or workflow was seen running on a node that is
-- not exq (a Sidekiq or Exq node, which records nothing in a batch or workflow), so that the
-- admin API can list it after that run has ended. The note lives with its batch or workflow:
-- it is written only while the batch's or workflow's hash exists, and expires when that hash
-- does (the hash's remaining TTL at the time of the note). At most ARGV[3] notes a batch or
-- workflow: past that, new ones are dropped (the audit still finds those jobs).
-- KEYS[1] P batch:<bid> or P wf:<id>   KEYS[2] P batch:<bid>:foreign or P wf:<id>:foreign
-- ARGV[1] jid   ARGV[2] the node it ran on   ARGV[3] the most notes kept
-- Returns 1 when the note was written, 0 when the notes are full, -1 when there is no such
-- batch or workflow (a Sidekiq Pro batch's job, say, whose "bid" is not exq's).
-- Out of memory Redis refuses it (its first write is an addition): a note is not needed for
-- any job to run.
local ttl = redis.call('TTL', KEYS[1])
if ttl < 0 then return -1 end -- no such hash (-2), or one that never expires (-1: not exq's)
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ttl)
return 1
