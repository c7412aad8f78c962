-- remove_jobs: remove jobs, by their exact raw strings, from a queue list or a sorted set and,
-- when asked, release their unique locks (compare-and-delete: only a lock the job still holds).
-- KEYS[1] P queue:<q>, P retry, P schedule or P dead
-- ARGV[1] "list" or "zset"   ARGV[2] prefix P (lock keys are known only from the jobs)
-- ARGV[3] "1" to release locks    ARGV[4..] raw jobs
-- Returns the number of jobs removed.
local removed = 0
for i = 4, #ARGV do
  local raw = ARGV[i]
  local n
  if ARGV[1] == 'list' then n = redis.call('LREM', KEYS[1], 1, raw) else n = redis.call('ZREM', KEYS[1], raw) end
  if n > 0 then
    removed = removed + 1
    if ARGV[3] == '1' then
      local ok, job = pcall(cjson.decode, raw)
      if ok and type(job) == 'table' and type(job['unique_token']) == 'string' and job['jid'] then
        local key = ARGV[2] .. 'unique:' .. job['unique_token']
        if redis.call('GET', key) == job['jid'] then redis.call('DEL', key) end
      end
    end
  end
end
return removed
