-- stale: list the nodes that count as dead by the server's clock. A node that publishes its
-- window (exq) is dead once its deadline has passed; a node that publishes none (Exq) is dead
-- once its last beat is older than the window given for such nodes. A deadline left by a node
-- whose heartbeat is gone (stopped cleanly, or buried by another runtime's monitor) is dropped.
-- A stall of the server (a long script of another client, DEBUG SLEEP, BUSY replies) holds
-- every node's beats, so no node counts as dead until a whole window of its own has passed
-- since the latest stall ended (heartbeat_resumed). The caller records the server time of its
-- check in heartbeat_calls; if it ran more than ARGV[3] seconds after its previous beat or
-- check (at its first check: the latest call of any node), the caller's calls could not run
-- in between (the server stalled, or this node did): that stall ends now, before any node is
-- judged. The reply starts with the server's time, and
-- gives each node's deadline: the monitor also requires that one of its own calls ran after
-- that deadline and before this one was sent (heartbeat.go).
-- Out of memory (scripts.go), a check runs: its first write is a removal (its own call time,
-- written again at once), so that a node never takes another for dead on a stall it missed.
-- KEYS[1] P heartbeats    KEYS[2] P heartbeat_deadlines    KEYS[3] P heartbeat_calls
-- KEYS[4] P heartbeat_resumed
-- ARGV[1] window in seconds for nodes that publish none   ARGV[2] the caller's identity
-- ARGV[3] the longest gap in seconds between two of the caller's calls that is not a stall
-- Returns a flat list: the server time, then node, heartbeat score, deadline, node, … (scores as
-- Redis prints them, the time and the deadlines with six decimals).
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local stamp = string.format('%.6f', now)
local previous = tonumber(redis.call('HGET', KEYS[3], ARGV[2]))
if not previous then
  -- The caller's first check: the latest call of any node stands for its own.
  for _, v in ipairs(redis.call('HVALS', KEYS[3])) do
    local at = tonumber(v)
    if at and (not previous or at > previous) then previous = at end
  end
end
redis.call('HDEL', KEYS[3], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], stamp)
local resumed = tonumber(redis.call('GET', KEYS[4])) or 0
if previous and now - previous > tonumber(ARGV[3]) and now > resumed then
  redis.call('SET', KEYS[4], stamp)
  resumed = now
end
local out = {stamp}
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'WITHSCORES')
for i = 1, #due, 2 do
  local node = due[i]
  local score = redis.call('ZSCORE', KEYS[1], node)
  local deadline = tonumber(due[i + 1])
  if not score then
    redis.call('ZREM', KEYS[2], node)
  elseif resumed + deadline - tonumber(score) <= now then
    out[#out + 1] = node
    out[#out + 1] = score
    out[#out + 1] = string.format('%.6f', deadline)
  end
end
local window = tonumber(ARGV[1])
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - window, 'WITHSCORES')
for i = 1, #old, 2 do
  if not redis.call('ZSCORE', KEYS[2], old[i]) and resumed + window <= now then
    out[#out + 1] = old[i]
    out[#out + 1] = old[i + 1]
    out[#out + 1] = string.format('%.6f', tonumber(old[i + 1]) + window)
  end
end
return out
