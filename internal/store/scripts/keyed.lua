-- keyed: the functions of the scripts that move keyed jobs (docs/keys.md), put before their
-- text (withKeyed). A keyed job waits in its key's list, never in the queue's list (where
-- Sidekiq and Exq nodes, which know nothing of keys, would run it in breach of its key's
-- policy). The keys that may start a job now are in key_ready, scored by turn; the keys that
-- wait for a time are in key_blocked, scored by it; a sequence whose failed job waits for its
-- retry is in key_held (key -> jid), and none of its jobs runs until that one does; a key
-- paused by API.PauseKey is in key_paused, in neither key_ready nor key_blocked.
-- Key names are built here from the namespace prefix (the key is only known from the job or
-- the ready set); they share the namespace's hash tag on Redis Cluster.

-- key_of is the key of a raw job and its jid, or nil for a job without one (a cheap search
-- first: every job a rescue or requeue moves passes here).
local function key_of(job)
  if not string.find(job, '"exq_key"', 1, true) then return nil end
  local ok, doc = pcall(cjson.decode, job)
  if not ok or type(doc) ~= 'table' then return nil end
  local k = doc['exq_key']
  if type(k) ~= 'string' or k == '' then return nil end
  return k, doc['jid']
end

-- key_ready puts key k into the ready set at the lowest turn there plus step (0: a key that
-- enters is served within one round of those already waiting), unless it is there already,
-- held (a failed job of its sequence waits for its retry) or paused (API.PauseKey: it is in
-- key_paused:<q>; key_pause.lua readies it when resumed). Every path that readies a key
-- (enqueue, release, retry due, hand-back, rescue, a blocked key's time) comes here, so a
-- paused key's jobs wait and none starts. With unblock, a key waiting for a time is readied
-- too (the fetch checks its limits again); without, it keeps waiting.
-- memo (optional) is a table a script that readies many keys in one call passes to each of
-- them: per queue, whether any key is held or paused and the lowest turn are read once. It
-- holds only while the caller takes no key out of the ready set and holds or pauses none.
local function key_ready(prefix, q, k, step, unblock, memo)
  local ready, blocked = prefix .. 'key_ready:' .. q, prefix .. 'key_blocked:' .. q
  if redis.call('ZSCORE', ready, k) then return false end
  -- A key is in at most one of ready, blocked, held and paused: a key taken out of the
  -- blocked set was neither held nor paused, so only the others are looked up.
  local was_blocked = false
  if unblock then
    was_blocked = redis.call('ZREM', blocked, k) == 1
  elseif redis.call('ZSCORE', blocked, k) then
    return false
  end
  local held, paused = prefix .. 'key_held:' .. q, prefix .. 'key_paused:' .. q
  local m = memo and memo[q]
  if memo and not m then
    m = {held = redis.call('EXISTS', held) == 1, paused = redis.call('EXISTS', paused) == 1}
    memo[q] = m
  end
  if not was_blocked then
    if (not m or m.held) and redis.call('HEXISTS', held, k) == 1 then return false end
    if (not m or m.paused) and redis.call('SISMEMBER', paused, k) == 1 then return false end
  end
  local low = m and m.low
  if not low then
    low = tonumber(redis.call('ZRANGE', ready, 0, 0, 'WITHSCORES')[2]) or 0
    if m then m.low = low end
  end
  redis.call('ZADD', ready, low + step, k)
  return true
end

-- key_back puts a keyed job back into its key's list (at the head: it runs before the key's
-- next job) and readies the key; false for a job without a key, which the caller puts back
-- into its queue. With dead (a rescue), the dead node's leases on the key go too: its jobs of
-- the key run no more (a few members: at most the key's Concurrency).
local function key_back(prefix, q, job, dead)
  local k = key_of(job)
  if not k then return false end
  if dead then
    local leases = prefix .. 'key_leases:' .. q .. ':' .. k
    for _, m in ipairs(redis.call('ZRANGE', leases, 0, -1)) do
      if string.sub(m, 1, #dead + 1) == dead .. ':' then redis.call('ZREM', leases, m) end
    end
  end
  redis.call('LPUSH', prefix .. 'key_jobs:' .. q .. ':' .. k, job)
  key_ready(prefix, q, k, 0, true)
  return true
end
