-- beat: record that a node is alive, scored with the Redis server's clock, so that a client
-- whose clock is off can neither make a live node look dead nor a dead one alive. The node
-- also publishes when it counts as dead (beat + its own window), so that nodes beating at
-- other rates judge it by its window, not by theirs.
-- KEYS[1] P heartbeats    KEYS[2] P heartbeat_deadlines
-- ARGV[1] node identity   ARGV[2] its window in seconds (interval × (missed + 1))
-- Returns 1.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
return 1
