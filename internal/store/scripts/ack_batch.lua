-- ack_batch: take finished jobs off this node's backup lists (one LREM each, from the tail,
-- where the fetch left the oldest jobs, which are the first to finish), and remove the leases of
-- ended jobs (one ZREM each), in one call. A job is taken off only if the run that finished it
-- belongs to the node's current incarnation: a run from before the node was buried (paused
-- past its window, its jobs rescued) must not remove the entry of another run of the same job
-- that the node fetched since. Every write is a removal, so it runs when Redis is out of memory
-- (scripts.go).
-- KEYS[1] P heartbeats   KEYS[2] P heartbeat_epochs
-- KEYS[2+i] P queue:backup::<node>::<q_i> or P leases:<q_i>
-- ARGV[1] node   then groups of requests alike, each: 'a' (finished jobs) or 'l' (leases), the
-- number i of their key, the incarnation token of their runs ('' for no check; unused for
-- leases), the count n, then the n raw jobs or leases. (A group, not four arguments per job:
-- each argument is a Lua string the server builds, a quarter of the script's time per job.)
-- Returns the number of members removed (a job whose run's incarnation is gone removes none).
local current = redis.call('HGET', KEYS[2], ARGV[1])
local alive = redis.call('ZSCORE', KEYS[1], ARGV[1]) and current
local removed = 0
local j, last = 2, #ARGV
while j <= last do
  local key, epoch, n = KEYS[2 + tonumber(ARGV[j + 1])], ARGV[j + 2], tonumber(ARGV[j + 3])
  if ARGV[j] == 'l' then
    for m = j + 4, j + 3 + n do
      removed = removed + redis.call('ZREM', key, ARGV[m])
    end
  elseif epoch == '' or (alive and epoch == current) then
    for m = j + 4, j + 3 + n do
      removed = removed + redis.call('LREM', key, -1, ARGV[m])
    end
  end
  j = j + 4 + n
end
return removed
