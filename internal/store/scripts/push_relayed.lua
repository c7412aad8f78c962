-- push_relayed: push jobs that an outbox relay read from a database, each jid at most once. A
-- jid whose relayed mark exists was handled by an earlier call (a relay that died between this
-- push and the delete of its rows, or a second relay that took the rows over): it is skipped
-- and reported, and nothing is written for it. Otherwise the mark is set first and the job is
-- written as enqueue_all writes it: its unique lock (a job whose lock another jid holds is not
-- written, and keeps its mark so a repeat reports no second conflict), then its queue now, or
-- the schedule set when it has a score.
-- KEYS[1] P schedule   KEYS[2] P queues   KEYS[2+q] P queue:<queue q>, for q = 1..Q
-- KEYS[2+Q+i] P relayed:<jid of job i>, for i = 1..N
-- KEYS[2+Q+N+u] P unique:<token of unique job u>, for u = 1..U
-- ARGV[1] wake channel   ARGV[2] Q   ARGV[3] N   ARGV[4] U   ARGV[5] mark TTL in ms
-- ARGV[5+q] queue name q; then three values per job i: its queue number (0 when scheduled),
-- its score ("" for now), its JSON; then three per unique job u: its job number, its jid, its
-- lock TTL in ms.
-- Returns one entry per job, in order: 0 written, 1 already relayed (nothing written), or the
-- holder's jid (a string) when its unique lock was held (nothing written but the mark).
-- Why one script: the mark and the push must be one step, or a relay killed between them
-- would either lose the job (mark without push) or push it twice (push without mark). Redis
-- does not roll back a script that fails half-way, so every key is type-checked before the
-- first write; the first write is an addition (SET), so out of memory the call is refused
-- whole. (PUBLISH uses pcall: wake-ups are best effort.)
-- expect, push_lists and push_scheduled are push.lua's (scripts.go puts it before this text).
local Q, N, U, markTTL = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local jobs0, uniq0 = 5 + Q, 5 + Q + 3 * N
local err = expect(KEYS[1], 'zset') or expect(KEYS[2], 'set')
for q = 1, Q do err = err or expect(KEYS[2 + q], 'list') end
for k = 3 + Q, 2 + Q + N + U do err = err or expect(KEYS[k], 'string') end
if err then return err end

local lockOf = {}
for u = 1, U do
  local base = uniq0 + 3 * (u - 1)
  lockOf[tonumber(ARGV[base + 1])] = {key = KEYS[2 + Q + N + u], jid = ARGV[base + 2], ttl = ARGV[base + 3]}
end

local out, lists, scheduled = {}, {}, {}
for i = 1, N do
  local base = jobs0 + 3 * (i - 1)
  local q, score, job = tonumber(ARGV[base + 1]), ARGV[base + 2], ARGV[base + 3]
  local mark = KEYS[2 + Q + i]
  local status = 0
  if redis.call('SET', mark, '1', 'PX', markTTL, 'NX') == false then
    status = 1
  else
    local l = lockOf[i]
    if l and not redis.call('SET', l.key, l.jid, 'PX', l.ttl, 'NX') then
      local holder = redis.call('GET', l.key)
      if holder == l.jid then status = 1 else status = holder end
    end
  end
  out[i] = status
  if status == 0 then
    if score == '' then
      local list = lists[q]
      if not list then
        list = {}
        lists[q] = list
      end
      list[#list + 1] = job
    else
      scheduled[#scheduled + 1] = score
      scheduled[#scheduled + 1] = job
    end
  end
end

-- One LPUSH or ZADD per chunk, in batch order (push.lua).
push_lists(lists, Q, KEYS[2], 2, 5, ARGV[1])
push_scheduled(KEYS[1], scheduled, ARGV[1])
return out
