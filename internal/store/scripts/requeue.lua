-- requeue: hand jobs this node took but will not finish (shutdown grace period over) back to
-- the consumption end of their queue, so another node runs them next, and wake idle nodes.
-- KEYS[1] P queue:backup::<node>::<q>     KEYS[2] P queue:<q>
-- ARGV[1] wake channel    ARGV[2] queue name    ARGV[3] namespace prefix (a keyed job goes back
-- to the head of its key's list, keyed.lua)    ARGV[4..] raw jobs, newest first
-- Returns the number of jobs moved (a job already gone from the backup list is skipped).
-- (PUBLISH uses pcall: wake-ups are best effort, and a user without the channel permission
-- must not turn a written job into a failed call.)
local moved = 0
for i = 4, #ARGV do
  if redis.call('LREM', KEYS[1], -1, ARGV[i]) > 0 then
    if not key_back(ARGV[3], ARGV[2], ARGV[i]) then redis.call('RPUSH', KEYS[2], ARGV[i]) end
    moved = moved + 1
  end
end
if moved > 0 then redis.pcall('PUBLISH', ARGV[1], ARGV[2]) end
return moved
