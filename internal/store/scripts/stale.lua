-- stale: list the nodes that count as dead by the server's clock. A node that publishes its
-- window (exq) is dead once its deadline has passed; a node that publishes none (Exq) is dead
-- once its last beat is older than the window given for such nodes. A deadline left by a node
-- whose heartbeat is gone (stopped cleanly, or buried by another runtime's monitor) is dropped.
-- The reply starts with the server's time, and gives each node's deadline: the monitor rescues
-- a node only if one of its own calls ran after that deadline and before this one was sent, so
-- that a beat the server could not process in time (Redis stalled by a long script, DEBUG
-- SLEEP) has been processed before the node is judged (heartbeat.go).
-- KEYS[1] P heartbeats    KEYS[2] P heartbeat_deadlines
-- ARGV[1] window in seconds for nodes that publish none
-- Returns a flat list: the server time, then node, heartbeat score, deadline, node, … (scores as
-- Redis prints them, the time and the deadlines with six decimals).
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local out = {string.format('%.6f', now)}
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'WITHSCORES')
for i = 1, #due, 2 do
  local node = due[i]
  local score = redis.call('ZSCORE', KEYS[1], node)
  if score then
    out[#out + 1] = node
    out[#out + 1] = score
    out[#out + 1] = string.format('%.6f', tonumber(due[i + 1]))
  else
    redis.call('ZREM', KEYS[2], node)
  end
end
local window = tonumber(ARGV[1])
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - window, 'WITHSCORES')
for i = 1, #old, 2 do
  if not redis.call('ZSCORE', KEYS[2], old[i]) then
    out[#out + 1] = old[i]
    out[#out + 1] = old[i + 1]
    out[#out + 1] = string.format('%.6f', tonumber(old[i + 1]) + window)
  end
end
return out
