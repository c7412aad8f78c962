-- beat: record that a node is alive, scored with the Redis server's clock, so that a client
-- whose clock is off can neither make a live node look dead nor a dead one alive. The node
-- also publishes when it counts as dead (beat + its own window), so that nodes beating at
-- other rates judge it by its window, not by theirs, and renews the leases of its running
-- jobs (Queue.GlobalLimit) to the same time: a killed node's leases lapse as it counts as dead.
-- A lease already released or lapsed is not renewed (ZADD XX), so a beat racing a job's end
-- cannot bring its lease back.
-- Out of memory (scripts.go), a beat runs: it starts with a removal (the deadline, written
-- again below), so the nodes keep beating and none takes another for dead. A join (the first
-- beat, at Start, and the first after a burial) starts with an addition, so Redis refuses it
-- and no node joins then.
-- A node beats as the incarnation it joined with (ARGV[4]); if that incarnation was buried
-- meanwhile (its heartbeat or its token gone: it was taken for dead while it could not beat,
-- and its jobs were rescued), the beat writes nothing and returns '0', so that the node first
-- drops its runs from before, then joins again with a new token.
-- A beat that runs more than ARGV[6] seconds after the node's previous beat or check (ARGV[5],
-- the server time their replies gave; 0 for none) saw a stall (of Redis: a long script, DEBUG
-- SLEEP, BUSY replies; or of the node) and records its end in heartbeat_resumed, from which
-- every node gets a whole window again (stale.lua).
-- KEYS[1] P heartbeats    KEYS[2] P heartbeat_deadlines    KEYS[3] P heartbeat_epochs
-- KEYS[4] P heartbeat_resumed    KEYS[4+i] P leases:<q_i>
-- ARGV[1] node identity   ARGV[2] its window in seconds (interval × (missed + 1))
-- ARGV[3] "beat" or "join" (with the token ARGV[4])   ARGV[4] its incarnation token
-- ARGV[5] the server time of its previous call   ARGV[6] the longest gap in seconds between
-- two of its calls that is not a stall
-- ARGV[7..] for each leases set in order: how many leases ("k<n>" for a key's leases), then
-- the leases
-- Returns the server time with six decimals (monitors compare it with deadlines, see
-- stale.lua), or '0' when the incarnation was buried.
if ARGV[3] ~= 'join' and (not redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[4]) then
  return '0'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local stamp = string.format('%.6f', now)
local window = tonumber(ARGV[2])
if ARGV[3] ~= 'join' then redis.call('ZREM', KEYS[2], ARGV[1]) end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZADD', KEYS[2], now + window, ARGV[1])
if ARGV[3] == 'join' then redis.call('HSET', KEYS[3], ARGV[1], ARGV[4]) end
local previous = tonumber(ARGV[5])
if previous > 0 and now - previous > tonumber(ARGV[6]) then
  redis.call('SET', KEYS[4], stamp)
end
local a = 7
for i = 5, #KEYS do
  -- A count written "k<n>" is a key's leases (keyed jobs, docs/keys.md): they live two windows,
  -- so that the rescue of a dead node, which removes them with its jobs, comes first.
  local spec, life = ARGV[a], window
  if string.sub(spec, 1, 1) == 'k' then spec, life = string.sub(spec, 2), 2 * window end
  local n = tonumber(spec)
  local args = {'XX'}
  for j = a + 1, a + n do
    args[#args + 1] = now + life
    args[#args + 1] = ARGV[j]
  end
  if n > 0 then
    redis.call('ZADD', KEYS[i], unpack(args))
    redis.call('PEXPIRE', KEYS[i], math.ceil((life + 3600) * 1000)) -- see fetch_limited.lua
  end
  a = a + n + 1
end
return stamp
