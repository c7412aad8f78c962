-- put_back: return a job this node fetched but has no worker for yet (a node still
-- registering its workers, Options.RegisterGrace) to the enqueue end of its queue, unchanged,
-- so that the jobs queued behind it run first and the job is fetched again later (by this
-- node once the worker is there, or by another node that has it), and wake idle nodes.
-- KEYS[1] P queue:backup::<node>::<q>     KEYS[2] P queue:<q>
-- ARGV[1] wake channel    ARGV[2] queue name    ARGV[3] raw job
-- ARGV[4] namespace prefix (a keyed job goes back to the head of its key's list, keyed.lua)
-- Returns 1 if the job was moved, 0 if it was no longer in the backup list (rescued).
-- (PUBLISH uses pcall: wake-ups are best effort.)
if redis.call('LREM', KEYS[1], -1, ARGV[3]) == 0 then return 0 end
if not key_back(ARGV[4], ARGV[2], ARGV[3]) then redis.call('LPUSH', KEYS[2], ARGV[3]) end
redis.pcall('PUBLISH', ARGV[1], ARGV[2])
return 1
