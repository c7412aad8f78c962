-- remove_jobs: remove jobs, by their exact raw strings, from a queue list or a sorted set and
-- release the unique locks the caller names for them (compare-and-delete: only a lock the job
-- still holds). The caller reads each job's unique_token and jid, so every lock key is declared
-- here (Redis Cluster and ACL key patterns need that).
-- KEYS[1] P queue:<q>, P retry, P schedule or P dead   KEYS[1+u] P unique:<token u>, u = 1..U
-- ARGV[1] "list" or "zset", then three values per job: lock number u (0 = release none),
-- the job's jid, raw job
-- Returns the number of jobs removed.
local removed = 0
for a = 2, #ARGV, 3 do
  local u, jid, raw = tonumber(ARGV[a]), ARGV[a + 1], ARGV[a + 2]
  local n
  if ARGV[1] == 'list' then n = redis.call('LREM', KEYS[1], 1, raw) else n = redis.call('ZREM', KEYS[1], raw) end
  if n > 0 then
    removed = removed + 1
    if u > 0 and redis.call('GET', KEYS[1 + u]) == jid then redis.call('DEL', KEYS[1 + u]) end
  end
end
return removed
