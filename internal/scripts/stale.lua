-- stale: list the nodes that count as dead by the server's clock. A node that publishes its
-- window (exq) is dead once its deadline has passed; a node that publishes none (Exq) is dead
-- once its last beat is older than the window given for such nodes. A deadline left by a node
-- whose heartbeat is gone (stopped cleanly, or buried by another runtime's monitor) is dropped.
-- KEYS[1] P heartbeats    KEYS[2] P heartbeat_deadlines
-- ARGV[1] window in seconds for nodes that publish none
-- Returns a flat list: node, heartbeat score, node, score, … (scores as Redis prints them).
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local out = {}
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, node in ipairs(due) do
  local score = redis.call('ZSCORE', KEYS[1], node)
  if score then
    out[#out + 1] = node
    out[#out + 1] = score
  else
    redis.call('ZREM', KEYS[2], node)
  end
end
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]), 'WITHSCORES')
for i = 1, #old, 2 do
  if not redis.call('ZSCORE', KEYS[2], old[i]) then
    out[#out + 1] = old[i]
    out[#out + 1] = old[i + 1]
  end
end
return out
