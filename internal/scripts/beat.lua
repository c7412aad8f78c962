-- beat: record that a node is alive, scored with the Redis server's clock, so that a client
-- whose clock is off can neither make a live node look dead nor a dead one alive.
-- KEYS[1] P heartbeats    ARGV[1] node identity
-- Returns 1.
local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], tonumber(t[1]) + tonumber(t[2]) / 1000000, ARGV[1])
return 1
