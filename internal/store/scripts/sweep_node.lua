-- sweep_node: forget what a gone node left behind when a node that does not remove them
-- buried it (a node of an earlier release, whose bury.lua kept heartbeat_epochs and
-- backup_queues:<node>): its incarnation token and its set of backup queues go, but only
-- while the node is in no heartbeat (a live node, or one still to be rescued, keeps both),
-- none of its backup lists holds a job, and its set names no queue besides those given.
-- KEYS[1] P heartbeats   KEYS[2] P heartbeat_epochs   KEYS[3] P backup_queues:<node>
-- KEYS[3+i] P queue:backup::<node>::<q_i>
-- ARGV[1] node   ARGV[1+i] q_i
-- Returns 1 when it forgot the node, 0 when the node is in the heartbeats (alive, or not
-- rescued yet), 2 when a backup list holds jobs or the set names another queue.
-- Out of memory it runs: it only removes.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
local seen = {}
for i = 4, #KEYS do
  if redis.call('LLEN', KEYS[i]) > 0 then return 2 end
  seen[ARGV[i - 2]] = true
end
for _, q in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  if not seen[q] then return 2 end
end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3])
return 1
