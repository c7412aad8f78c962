-- ack_batch: take finished jobs off this node's backup lists (one LREM each, from the tail,
-- where the fetch left the oldest jobs, which are the first to finish), and remove the leases of
-- ended jobs (one ZREM each), in one call. A job is taken off only if the run that finished it
-- belongs to the node's current incarnation: a run from before the node was buried (paused
-- past its window, its jobs rescued) must not remove the entry of another run of the same job
-- that the node fetched since. Every write is a removal, so it runs when Redis is out of memory
-- (scripts.go).
-- KEYS[1] P heartbeats   KEYS[2] P heartbeat_epochs
-- KEYS[2+i] P queue:backup::<node>::<q_i> or P leases:<q_i>
-- ARGV[1] node   then for each request: 'a' (a finished job) or 'l' (a lease), the number i of
-- its key, the incarnation token of the job's run ('' for no check; unused for a lease), the
-- raw job or the lease
-- Returns the number of members removed (a job whose run's incarnation is gone removes none).
local current = redis.call('HGET', KEYS[2], ARGV[1])
local alive = redis.call('ZSCORE', KEYS[1], ARGV[1]) and current
local removed = 0
for j = 2, #ARGV, 4 do
  local key, epoch = KEYS[2 + tonumber(ARGV[j + 1])], ARGV[j + 2]
  if ARGV[j] == 'l' then
    removed = removed + redis.call('ZREM', key, ARGV[j + 3])
  elseif epoch == '' or (alive and epoch == current) then
    removed = removed + redis.call('LREM', key, -1, ARGV[j + 3])
  end
end
return removed
