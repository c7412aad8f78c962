-- recover: move up to a page of jobs from a backup list back to the consumption end of their
-- queue, oldest in-flight job next to run (Exq's mlpop_rpush).
-- KEYS[1] P queue:backup::<node>::<q>     KEYS[2] P queue:<q>
-- ARGV[1] page size
-- Returns {jobs left in the backup list, jobs moved}.
local moved = 0
for _ = 1, tonumber(ARGV[1]) do
  local job = redis.call('LPOP', KEYS[1])
  if not job then break end
  redis.call('RPUSH', KEYS[2], job)
  moved = moved + 1
end
return {redis.call('LLEN', KEYS[1]), moved}
