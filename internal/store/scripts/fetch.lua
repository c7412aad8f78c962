-- fetch: take up to n jobs from each of several queues into this node's backup lists, in one
-- round trip (the poll loop's only Redis call), when none of them has a cluster-wide limit
-- (fetch_limited.lua does that, with a reply of its own). A queue named in the paused set
-- gives nothing: reading the set here, in the same script, means no fetch that starts after PauseQueue
-- returned can take a job of that queue, on any node, with no poll of the set and no window.
-- A node that beats gives the token of its incarnation: if it is no longer in the heartbeats
-- with that token (it was buried while paused, and its jobs rescued), the fetch takes nothing
-- and fails with BURIED, since a job taken now would sit in the backup list of a node nobody
-- watches. Each queue a job is taken from is added to the node's set of backup queues, where a
-- rescue finds it even if the queue is in no queues set.
-- KEYS[1] P paused (set of paused queue names)   KEYS[2] P heartbeats
-- KEYS[3] P heartbeat_epochs                      KEYS[4] P backup_queues:<node>
-- KEYS[2i+3] P queue:<q_i>          KEYS[2i+4] P queue:backup::<node>::<q_i>
-- ARGV[1] node   ARGV[2] its incarnation token ('' for a node without heartbeats: no check)
-- ARGV[2i+1] q_i (its name, for the paused set)   ARGV[2i+2] the most jobs to take from q_i
-- Returns one flat array (read without a generic reply's boxing, scripts.RunFetch): for each
-- queue in order, the length of its backup list before this call, the number n of jobs taken,
-- then those n raw jobs, oldest first. The length lets the node see entries it does not hold:
-- jobs of an earlier fetch whose reply was lost, e.g. when a client library sent this script
-- again after the connection broke (the first run's jobs would otherwise sit there until the
-- node dies).
local node, epoch = ARGV[1], ARGV[2]
if epoch ~= '' and (not redis.call('ZSCORE', KEYS[2], node) or redis.call('HGET', KEYS[3], node) ~= epoch) then
  return redis.error_reply('BURIED this node was taken for dead and its jobs were rescued')
end
local out = {}
local nq = (#ARGV - 2) / 2
-- With several queues, one EXISTS spares a SISMEMBER per queue when nothing is paused (an
-- idle node polls every queue at its cap).
local anyPaused = nq == 1 or redis.call('EXISTS', KEYS[1]) == 1
for i = 1, nq do
  local src, dst = KEYS[2*i + 3], KEYS[2*i + 4]
  out[#out + 1] = redis.call('LLEN', dst)
  local count = #out + 1 -- where the number of jobs taken goes, the jobs after it
  out[count] = 0
  -- pcall: a paused key of another type (written by someone else) pauses nothing; as an
  -- error it stopped every fetch of every node.
  if not anyPaused or redis.pcall('SISMEMBER', KEYS[1], ARGV[2*i + 1]) ~= 1 then
    local n = tonumber(ARGV[2*i + 2])
    if n > 0 then
      -- The n oldest jobs at once: LRANGE, then LTRIM, so that the script's first write is a
      -- removal and the fetch runs when Redis is out of memory (scripts.go; LLEN above failed
      -- if dst is not a list); once a script has written, Redis refuses none of its writes.
      -- Three commands per queue instead of two per job (RPOP, LPUSH): the server's CPU per
      -- job is what a whole fleet shares. (Not RPOP with a count: Redis 6.0 has none.)
      local tail = redis.call('LRANGE', src, -n, -1) -- newest first, the oldest last
      if #tail > 0 then
        redis.call('LTRIM', src, 0, -#tail - 1)
        for k = #tail, 1, -1 do out[#out + 1] = tail[k] end
        -- Oldest first, so that it ends up nearest the tail, as a pop and push per job left it
        -- (a thousand at a time: unpack's limit is Lua's stack).
        for k = count + 1, #out, 1000 do
          redis.call('LPUSH', dst, unpack(out, k, math.min(k + 999, #out)))
        end
        out[count] = #tail
        redis.call('SADD', KEYS[4], ARGV[2*i + 1])
      end
    end
  end
end
return out
