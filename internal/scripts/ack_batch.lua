-- ack_batch: take finished jobs off this node's backup lists (one LREM each, from the tail,
-- where RPOPLPUSH left the oldest jobs, which are the first to finish), in one call. A job is
-- taken off only if the run that finished it belongs to the node's current incarnation: a run
-- from before the node was buried (paused past its window, its jobs rescued) must not remove
-- the entry of another run of the same job that the node fetched since.
-- KEYS[1] P heartbeats   KEYS[2] P heartbeat_epochs   KEYS[2+i] P queue:backup::<node>::<q_i>
-- ARGV[1] node   then for each job: the number i of its backup list, the incarnation token of
-- its run ('' for a node without heartbeats: no check), the raw job
-- Returns the number of entries removed (a job whose run's incarnation is gone removes none).
local current = redis.call('HGET', KEYS[2], ARGV[1])
local alive = redis.call('ZSCORE', KEYS[1], ARGV[1]) and current
local removed = 0
for j = 2, #ARGV, 3 do
  local epoch = ARGV[j + 1]
  if epoch == '' or (alive and epoch == current) then
    removed = removed + redis.call('LREM', KEYS[2 + tonumber(ARGV[j])], -1, ARGV[j + 2])
  end
end
return removed
