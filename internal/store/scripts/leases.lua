-- leases: the function of the fetches that drop lapsed leases (fetch_limited.lua for a queue's
-- GlobalLimit, fetch_keyed.lua for a key's Concurrency), put before their text (withLeases).

-- drop_lapsed removes the leases of the sorted set z ("<node>:<number>", scored by when they
-- lapse) that lapsed at or before now and whose node has beaten since without renewing them
-- (leases it could not name: a fetch whose reply was lost), or is not in the heartbeats set
-- (buried: its rescue removes its leases, this what it missed; or a node without heartbeats,
-- whose leases nothing renews). A lease whose node has not beaten since it lapsed still counts:
-- a stall of Redis (or of the node) longer than the lease's life kept the node from renewing
-- it, and its job may still run; the node's first beat after the stall renews it.
local function drop_lapsed(z, heartbeats, now)
  local old = redis.call('ZRANGEBYSCORE', z, '-inf', now, 'WITHSCORES')
  for m = 1, #old, 2 do
    local holder = string.match(old[m], '^(.*):%d+$')
    local beat = holder and redis.call('ZSCORE', heartbeats, holder)
    if not beat or tonumber(beat) > tonumber(old[m + 1]) then redis.call('ZREM', z, old[m]) end
  end
end
