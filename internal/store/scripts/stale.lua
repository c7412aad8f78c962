-- stale: list the nodes that count as dead by the server's clock. A node that publishes its
-- window (exq) is dead once its deadline has passed; a node that publishes none (Exq) is dead
-- once its last beat is older than the window given for such nodes. A deadline left by a node
-- whose heartbeat is gone (stopped cleanly, or buried by another runtime's monitor) is dropped.
-- A stall of the server (a long script of another client, DEBUG SLEEP, BUSY replies) holds
-- every node's beats, so no node counts as dead until a whole window of its own has passed
-- since the latest stall ended (heartbeat_resumed). ARGV[2] is the server time of the caller's
-- previous beat or check (as their replies gave it; 0 for none): if this check runs more than
-- ARGV[3] seconds after it, the caller's calls could not run in between (the server stalled,
-- or the caller did), and that stall ends now, before any node is judged (beat.lua does the
-- same). The reply starts with the server's time, and gives each node's deadline: the monitor
-- also requires that one of its own calls ran after that deadline and before this one was
-- sent (internal/heartbeat).
-- Out of memory (scripts.go), a check runs: its one write that may need memory, the record of
-- a stall, is made with pcall, so a refusal leaves the check to judge by the stall it saw (the
-- nodes' beats, which run out of memory, record it for the others).
-- KEYS[1] P heartbeats    KEYS[2] P heartbeat_deadlines    KEYS[3] P heartbeat_resumed
-- ARGV[1] window in seconds for nodes that publish none
-- ARGV[2] the server time of the caller's previous call   ARGV[3] the longest gap in seconds
-- between two of the caller's calls that is not a stall
-- Returns a flat list: the server time, then node, heartbeat score, deadline, node, … (scores as
-- Redis prints them, the time and the deadlines with six decimals).
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local stamp = string.format('%.6f', now)
local previous = tonumber(ARGV[2])
local resumed
if previous > 0 and now - previous > tonumber(ARGV[3]) then
  redis.pcall('SET', KEYS[3], stamp)
  resumed = now
end
local function since()
  if not resumed then resumed = tonumber(redis.call('GET', KEYS[3])) or 0 end
  return resumed
end
local out = {stamp}
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'WITHSCORES')
for i = 1, #due, 2 do
  local node = due[i]
  local score = redis.call('ZSCORE', KEYS[1], node)
  local deadline = tonumber(due[i + 1])
  if not score then
    redis.call('ZREM', KEYS[2], node)
  elseif since() + deadline - tonumber(score) <= now then
    out[#out + 1] = node
    out[#out + 1] = score
    out[#out + 1] = string.format('%.6f', deadline)
  end
end
local window = tonumber(ARGV[1])
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - window, 'WITHSCORES')
for i = 1, #old, 2 do
  if not redis.call('ZSCORE', KEYS[2], old[i]) and since() + window <= now then
    out[#out + 1] = old[i]
    out[#out + 1] = old[i + 1]
    out[#out + 1] = string.format('%.6f', tonumber(old[i + 1]) + window)
  end
end
return out
