-- workflow_create: write workflow id (its graph, the documents of the jobs that wait, and the
-- jobs that wait for nothing pushed to their queues) in one atomic step: no job of the
-- workflow can run before the whole graph is in Redis.
-- KEYS[1] P wf:<id>   KEYS[2] P wf:<id>:graph   KEYS[3] P wf:<id>:jobs   KEYS[4] P workflows
-- KEYS[5] P queues    KEYS[5+q] P queue:<queue q>, for q = 1..Q
-- ARGV[1] id   ARGV[2] the call's token   ARGV[3] now (seconds)
-- ARGV[4] how long the data lives while the workflow runs (seconds)   ARGV[5] wake channel
-- ARGV[6] Q   ARGV[7] M (workflow hash pairs)   ARGV[8] G (graph pairs)   ARGV[9] J (waiting
-- jobs)   ARGV[10] R (jobs pushed now)
-- then Q queue names, M field/value pairs, G field/value pairs, J name/document pairs, and R
-- queue number/document pairs.
-- Returns "ok", "replay" (this call was already applied: a resent call writes nothing) or
-- "exists" (id belongs to another workflow: nothing written).
-- Every key is type-checked before the first write. Out of memory the first write (an
-- addition) is refused: nothing is written.
-- expect, push_lists and push_scheduled are push.lua's (scripts.go puts it before this text).
local Q, M, G, J, R = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local err = expect(KEYS[1], 'hash') or expect(KEYS[2], 'hash') or expect(KEYS[3], 'hash') or expect(KEYS[4], 'zset')
  or expect(KEYS[5], 'set')
for q = 1, Q do err = err or expect(KEYS[5 + q], 'list') end
if err then return err end
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'token') == ARGV[2] then return 'replay' end
  return 'exists'
end

local chunk = 1000 -- pairs per HSET: well inside Lua's limit on unpacked arguments
local function hset(key, first, pairs)
  for s = 0, pairs - 1, chunk do
    local last = math.min(s + chunk, pairs) - 1
    redis.call('HSET', key, unpack(ARGV, first + 2 * s, first + 2 * last + 1))
  end
end
local m0 = 11 + Q
local g0 = m0 + 2 * M
local j0 = g0 + 2 * G
local r0 = j0 + 2 * J
redis.call('HSET', KEYS[1], 'token', ARGV[2], 'created_at', ARGV[3])
hset(KEYS[1], m0, M)
hset(KEYS[2], g0, G)
if J > 0 then hset(KEYS[3], j0, J) end
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[1])

local lists = {}
for i = 0, R - 1 do
  local q = tonumber(ARGV[r0 + 2 * i])
  local l = lists[q]
  if not l then
    l = {}
    lists[q] = l
  end
  l[#l + 1] = ARGV[r0 + 2 * i + 1]
end
push_lists(lists, Q, KEYS[5], 5, 10, ARGV[5])
for k = 1, 3 do redis.call('EXPIRE', KEYS[k], ARGV[4]) end
return 'ok'
