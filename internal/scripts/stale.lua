-- stale: list the nodes whose last beat is older than the allowed age, by the server's clock.
-- KEYS[1] P heartbeats    ARGV[1] allowed age in seconds (interval × (missed + 1))
-- Returns a flat list: node, score, node, score, … (scores as Redis prints them).
local t = redis.call('TIME')
local cutoff = tonumber(t[1]) + tonumber(t[2]) / 1000000 - tonumber(ARGV[1])
if cutoff < 0 then cutoff = 0 end
return redis.call('ZRANGEBYSCORE', KEYS[1], 0, cutoff, 'WITHSCORES')
