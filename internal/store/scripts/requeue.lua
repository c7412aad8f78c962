-- requeue: hand jobs this node took but will not finish (shutdown grace period over) back to
-- the consumption end of their queue, so another node runs them next, and wake idle nodes.
-- KEYS[1] P queue:backup::<node>::<q>     KEYS[2] P queue:<q>
-- ARGV[1] wake channel    ARGV[2] queue name    ARGV[3..] raw jobs, newest first
-- Returns the number of jobs moved (a job already gone from the backup list is skipped).
-- (PUBLISH uses pcall: wake-ups are best effort, and a user without the channel permission
-- must not turn a written job into a failed call.)
local moved = 0
for i = 3, #ARGV do
  if redis.call('LREM', KEYS[1], -1, ARGV[i]) > 0 then
    redis.call('RPUSH', KEYS[2], ARGV[i])
    moved = moved + 1
  end
end
if moved > 0 then redis.pcall('PUBLISH', ARGV[1], ARGV[2]) end
return moved
