-- bury: forget a dead node whose backup lists were rescued: its busy list, its heartbeat, its
-- published deadline, its incarnation token and its set of backup queues go, unless it beat
-- again meanwhile, or one of its backup lists still holds a job (a node is never forgotten
-- with jobs that nobody would rescue any more). The set of backup queues must name no queue
-- besides those given: a list the monitor did not see (a fetch that ran after it looked) is
-- rescued in a later round.
-- KEYS[1] P heartbeats   KEYS[2] P <node>:workers   KEYS[3] P heartbeat_deadlines
-- KEYS[4] P heartbeat_epochs   KEYS[5] P backup_queues:<node>
-- KEYS[5+i] P queue:backup::<node>::<q_i>
-- ARGV[1] node   ARGV[2] the stale score   ARGV[2+i] q_i
-- Returns 1 when buried, 0 when the node beat again, 2 when a backup list holds jobs.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
local seen = {}
for i = 6, #KEYS do
  if redis.call('LLEN', KEYS[i]) > 0 then return 2 end
  seen[ARGV[i - 3]] = true
end
for _, q in ipairs(redis.call('SMEMBERS', KEYS[5])) do
  if not seen[q] then return 2 end
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('DEL', KEYS[2], KEYS[5])
return 1
