-- rescue: move a page of a dead node's backup list back to the consumption end of its queue,
-- but only while the node's heartbeat is still the stale score the monitor saw: a node that
-- beat again keeps its jobs. Monitors racing each other never duplicate an entry: each one
-- leaves the backup list through exactly one LPOP.
-- KEYS[1] P queue:backup::<node>::<q>   KEYS[2] P queue:<q>   KEYS[3] P heartbeats
-- ARGV[1] node   ARGV[2] the stale score   ARGV[3] page size   ARGV[4] wake channel
-- ARGV[5] queue name   ARGV[6] namespace prefix (a keyed job goes back to the head of its key's
-- list, keyed.lua)
-- Returns {jobs left in the backup list, jobs moved}; {0, 0} when the node beat again.
-- (PUBLISH uses pcall: wake-ups are best effort, and a user without the channel permission
-- must not turn a written job into a failed call.)
local score = redis.call('ZSCORE', KEYS[3], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return {0, 0} end
local moved = 0
for _ = 1, tonumber(ARGV[3]) do
  local job = redis.call('LPOP', KEYS[1])
  if not job then break end
  if not key_back(ARGV[6], ARGV[5], job, ARGV[1]) then redis.call('RPUSH', KEYS[2], job) end
  moved = moved + 1
end
if moved > 0 then redis.pcall('PUBLISH', ARGV[4], ARGV[5]) end
return {redis.call('LLEN', KEYS[1]), moved}
