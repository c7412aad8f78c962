-- batch_add: create batch bid with its first jobs, or add jobs to it from a running job of the
-- batch, and push the jobs to their queues, in one atomic step: a job is in its queue only if
-- the batch counts it, so no job of a batch can end before the batch knows it.
-- KEYS[1] P batch:<bid>   KEYS[2] P batch:<bid>:jobs   KEYS[3] P batch:<bid>:pending
-- KEYS[4] P batch:<bid>:dead   KEYS[5] P batches   KEYS[6] P queues
-- with a parent batch (a create with ARGV[10] set): KEYS[7] P batch:<parent>,
-- KEYS[8] P batch:<parent>:pending, KEYS[9] P batch:<parent>:jobs; then
-- KEYS[K+q] P queue:<queue q>, for q = 1..Q, K being 6, or 9 with a parent.
-- ARGV[1] bid   ARGV[2] mode: "create", "open" or "add"
-- ARGV[3] create, open: the call's token (a replay of this call is told apart from another
--         creator); add: the jid of the running job that adds (it must still be pending), or
--         "batch::open" for an add from a client to an open batch (it must still be open)
-- ARGV[4] now (seconds)   ARGV[5] how long the data lives while the batch runs (seconds; an
-- add renews it by the creation's, its "expiry" field)
-- ARGV[6] wake channel    ARGV[7] Q   ARGV[8] N (jobs)   ARGV[9] F (hash fields, create only)
-- ARGV[10] the parent batch's id ("" for none)   ARGV[11] the running job of the parent that
-- creates this child ("" when created outside a job of the parent)
-- ARGV[12..11+Q] queue names; then F field, value pairs; then three values per job: jid,
-- queue number, document. (A create's jids are distinct: the caller checks.)
-- A child batch is one member, "batch:<bid>", of its parent's pending hash, added here with
-- the child; its "parents" field lists its ancestors (nearest first) and its "queues" field
-- holds its ancestors' callback queues too, so that batch_settle.lua can carry the child's
-- callbacks up in the same script. A parent must exist, and must not have succeeded (created
-- from a job of the parent: that job must still be pending) — else "parent_gone", or "done"
-- when the creating job is one whose success the parent has already counted (a rerun).
-- Open: a create whose pending hash also holds the member "batch::open" at "0" (counted in
-- "fresh"), which no job or child can be (ids hold no ':'), so neither the success nor the
-- complete callback can fire until the batch is closed: batch_settle.lua recording that
-- member's success (a replayed close finds it gone and changes nothing).
-- Returns {status, added}: "ok"; "replay" when this create was already applied (a resent
-- call: nothing written); "exists" when bid was created by another call; "gone" when the batch
-- no longer exists; "not_member" when the adder is not a job of the batch; "done" when the
-- adder has already succeeded (a rerun after a kill: its first run's adds are in the batch, so
-- this one writes nothing); "closed" when a client's add finds the batch not open (closed, or
-- never opened). An add writes only the jids not yet in the batch, so an add sent
-- twice counts once. The pending count includes the running adder until its own outcome, so
-- the batch cannot succeed while a job is still adding to it.
-- The batch: jobs is the set of every jid added (the total); pending the hash of the jids not
-- yet succeeded, "0" until a run of the job has ended, "1" after; the batch hash's "fresh" the
-- number of pending jids at "0" (none left: every job has run once); dead the set of jids that
-- died.
-- Every key is type-checked before the first write (Redis does not roll back a script that
-- fails half-way). Out of memory the first write (an addition) is refused: nothing is written.
local Q, N, F = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local parent, K = ARGV[10], 6
if parent ~= '' then K = 9 end
local function expect(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE ' .. key .. ' is a ' .. t .. ', not a ' .. want .. '; nothing was written')
  end
end
local err = expect(KEYS[1], 'hash') or expect(KEYS[2], 'set') or expect(KEYS[3], 'hash') or expect(KEYS[5], 'zset')
  or expect(KEYS[6], 'set')
for q = 1, Q do err = err or expect(KEYS[K + q], 'list') end
if err then return err end

local exists = redis.call('EXISTS', KEYS[1]) == 1
local open = ARGV[2] == 'open'
local create = ARGV[2] == 'create' or open
if create then
  if exists then
    if redis.call('HGET', KEYS[1], 'token') == ARGV[3] then return {'replay', 0} end
    return {'exists', 0}
  end
  if parent ~= '' then
    if redis.call('EXISTS', KEYS[7]) == 0 then return {'parent_gone', 0} end
    if ARGV[11] ~= '' then
      if not redis.call('HGET', KEYS[8], ARGV[11]) then
        -- A rerun of a parent's job whose success the parent has counted: its first run's
        -- child is in the parent.
        if redis.call('SISMEMBER', KEYS[9], ARGV[11]) == 1 then return {'done', 0} end
        return {'parent_gone', 0}
      end
    elseif redis.call('HEXISTS', KEYS[7], 'success_at') == 1 then
      return {'parent_gone', 0}
    end
  end
else
  if not exists then return {'gone', 0} end
  if ARGV[3] == 'batch::open' then
    if not redis.call('HGET', KEYS[3], ARGV[3]) then return {'closed', 0} end
  else
    if redis.call('SISMEMBER', KEYS[2], ARGV[3]) == 0 then return {'not_member', 0} end
    if not redis.call('HGET', KEYS[3], ARGV[3]) then return {'done', 0} end
  end
end

local chunk = 1000 -- stays well inside Lua's limit on unpacked arguments
local fields0, jobs0 = 11 + Q, 11 + Q + 2 * F
local lists, added = {}, 0
local function take(i)
  local base = jobs0 + 3 * (i - 1)
  local q = tonumber(ARGV[base + 2])
  local l = lists[q]
  if not l then
    l = {}
    lists[q] = l
  end
  l[#l + 1] = ARGV[base + 3]
  added = added + 1
end
if create then
  local h = {}
  for f = 1, 2 * F do h[#h + 1] = ARGV[fields0 + f] end
  -- A pending hash of many jids is made a hash table from its first write: as a listpack
  -- (Redis keeps a hash of up to hash-max-listpack-entries, 512 by default, as one) every
  -- field written, and later every success's HMGET and HDEL, scans it, so that writing 500
  -- jids cost ~2 µs of Redis time a jid. A value longer than hash-max-listpack-value turns
  -- it into a hash table, which it stays; the field ("batch::ht", a reserved member that no
  -- jid can be) is removed before the script ends, so no reader ever sees it.
  local big = N > 128
  if big then redis.call('HSET', KEYS[3], 'batch::ht', string.rep('-', 1025)) end
  local fresh = N
  if open then
    fresh = N + 1
    redis.call('HSET', KEYS[3], 'batch::open', '0')
  end
  redis.call('HSET', KEYS[1], 'token', ARGV[3], 'created_at', ARGV[4], 'fresh', fresh, 'bid', ARGV[1], 'expiry', ARGV[5], unpack(h))
  redis.call('ZADD', KEYS[5], ARGV[4], ARGV[1])
  if parent ~= '' then
    local up = redis.call('HMGET', KEYS[7], 'queues', 'parents')
    local queues, seenq = {}, {}
    for _, list in ipairs({redis.call('HGET', KEYS[1], 'queues') or '', up[1] or ''}) do
      for q in string.gmatch(list, '[^\n]+') do
        if not seenq[q] then
          seenq[q] = true
          queues[#queues + 1] = q
        end
      end
    end
    local parents = parent
    if up[2] and up[2] ~= '' then parents = parent .. '\n' .. up[2] end
    redis.call('HSET', KEYS[1], 'queues', table.concat(queues, '\n'), 'parents', parents, 'parent', parent)
    local member = 'batch:' .. ARGV[1]
    if redis.call('SADD', KEYS[9], member) == 1 then
      redis.call('HSET', KEYS[8], member, '0')
      redis.call('HINCRBY', KEYS[7], 'fresh', 1)
    end
  end
  for s = 1, N, chunk do
    local ids, pend = {}, {}
    for i = s, math.min(s + chunk - 1, N) do
      local jid = ARGV[jobs0 + 3 * (i - 1) + 1]
      ids[#ids + 1] = jid
      pend[#pend + 1] = jid
      pend[#pend + 1] = '0'
      take(i)
    end
    redis.call('SADD', KEYS[2], unpack(ids))
    redis.call('HSET', KEYS[3], unpack(pend))
  end
  if big then redis.call('HDEL', KEYS[3], 'batch::ht') end
else
  for i = 1, N do
    local jid = ARGV[jobs0 + 3 * (i - 1) + 1]
    if redis.call('SADD', KEYS[2], jid) == 1 then
      redis.call('HSET', KEYS[3], jid, '0')
      take(i)
    end
  end
  if added > 0 then redis.call('HINCRBY', KEYS[1], 'fresh', added) end
end
for q = 1, Q do
  local l = lists[q]
  if l then
    redis.call('SADD', KEYS[6], ARGV[11 + q])
    for s = 1, #l, chunk do
      redis.call('LPUSH', KEYS[K + q], unpack(l, s, math.min(s + chunk - 1, #l)))
    end
    redis.pcall('PUBLISH', ARGV[6], ARGV[11 + q])
  end
end
-- The data lives while the batch runs; the success sets the shorter TTL of an ended batch.
if redis.call('HEXISTS', KEYS[1], 'success_at') == 0 then
  local live = redis.call('HGET', KEYS[1], 'expiry') or ARGV[5] -- an add keeps the creation's
  for k = 1, 4 do redis.call('EXPIRE', KEYS[k], live) end
end
return {'ok', added}
