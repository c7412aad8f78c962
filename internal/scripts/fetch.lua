-- fetch: take up to n jobs from each of several queues into this node's backup lists, in one
-- round trip (the poll loop's only Redis call).
-- KEYS[2i-1] P queue:<q_i>          KEYS[2i] P queue:backup::<node>::<q_i>
-- ARGV[i] the most jobs to take from q_i (its free slots)
-- Returns, for each queue in order, {length of the backup list before this call, raw jobs
-- taken, oldest first…}. The length lets the node see entries it does not hold: jobs of an
-- earlier fetch whose reply was lost, e.g. when a client library sent this script again after
-- the connection broke (the first run's jobs would otherwise sit there until the node dies).
local out = {}
for i = 1, #ARGV do
  local src, dst = KEYS[2*i - 1], KEYS[2*i]
  local got = {redis.call('LLEN', dst)}
  for _ = 1, tonumber(ARGV[i]) do
    local job = redis.call('RPOPLPUSH', src, dst)
    if not job then break end
    got[#got + 1] = job
  end
  out[i] = got
end
return out
