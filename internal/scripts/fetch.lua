-- fetch: take up to n jobs from each of several queues into this node's backup lists, in one
-- round trip (the poll loop's only Redis call), when none of them has a cluster-wide limit
-- (fetch_limited.lua does that, with a reply of its own). A queue named in the paused set
-- gives nothing: reading the set here, in the same script, means no fetch that starts after PauseQueue
-- returned can take a job of that queue, on any node, with no poll of the set and no window.
-- KEYS[1] P paused (set of paused queue names)
-- KEYS[2i] P queue:<q_i>          KEYS[2i+1] P queue:backup::<node>::<q_i>
-- ARGV[2i-1] q_i (its name, for the paused set)   ARGV[2i] the most jobs to take from q_i
-- Returns, for each queue in order, {length of the backup list before this call, raw jobs
-- taken, oldest first…}. The length lets the node see entries it does not hold: jobs of an
-- earlier fetch whose reply was lost, e.g. when a client library sent this script again after
-- the connection broke (the first run's jobs would otherwise sit there until the node dies).
local out = {}
for i = 1, #ARGV / 2 do
  local src, dst = KEYS[2*i], KEYS[2*i + 1]
  local got = {redis.call('LLEN', dst)}
  if redis.call('SISMEMBER', KEYS[1], ARGV[2*i - 1]) == 0 then
    for _ = 1, tonumber(ARGV[2*i]) do
      -- RPOP, then LPUSH, not RPOPLPUSH: the first write is a removal, so the fetch runs when
      -- Redis is out of memory (scripts.go). (LLEN above failed if dst is not a list.)
      local job = redis.call('RPOP', src)
      if not job then break end
      redis.call('LPUSH', dst, job)
      got[#got + 1] = job
    end
  end
  out[i] = got
end
return out
