-- fetch: take up to n jobs from each of several queues into this node's backup lists, in one
-- round trip (the poll loop's only Redis call).
-- KEYS[2i-1] P queue:<q_i>          KEYS[2i] P queue:backup::<node>::<q_i>
-- ARGV[i] the most jobs to take from q_i (its free slots)
-- Returns, for each queue in order, the list of raw jobs taken, oldest first.
local out = {}
for i = 1, #ARGV do
  local src, dst = KEYS[2*i - 1], KEYS[2*i]
  local got = {}
  for _ = 1, tonumber(ARGV[i]) do
    local job = redis.call('RPOPLPUSH', src, dst)
    if not job then break end
    got[#got + 1] = job
  end
  out[i] = got
end
return out
