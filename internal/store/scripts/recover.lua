-- recover: move up to a page of jobs from a backup list back to the consumption end of their
-- queue, oldest in-flight job next to run (Exq's mlpop_rpush).
-- KEYS[1] P queue:backup::<node>::<q>     KEYS[2] P queue:<q>
-- ARGV[1] page size   ARGV[2] queue name   ARGV[3] namespace prefix (a keyed job goes back to
-- the head of its key's list, keyed.lua)
-- Returns {jobs left in the backup list, jobs moved}.
local moved = 0
for _ = 1, tonumber(ARGV[1]) do
  local job = redis.call('LPOP', KEYS[1])
  if not job then break end
  if not key_back(ARGV[3], ARGV[2], job) then redis.call('RPUSH', KEYS[2], job) end
  moved = moved + 1
end
return {redis.call('LLEN', KEYS[1]), moved}
