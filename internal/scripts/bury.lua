-- bury: forget a dead node whose backup lists were rescued: its busy list, its heartbeat and
-- its published deadline go, unless it beat again meanwhile.
-- KEYS[1] P heartbeats   KEYS[2] P <node>:workers   KEYS[3] P heartbeat_deadlines
-- ARGV[1] node   ARGV[2] the stale score
-- Returns 1 when buried, 0 when the node beat again.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('DEL', KEYS[2])
return 1
