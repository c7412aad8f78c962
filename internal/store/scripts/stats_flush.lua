-- stats_flush: add one batch of a node's counters, once. The batch carries an id that the
-- node keeps until Redis has answered: a batch whose reply was lost is sent again with the
-- same id (by the node, or by a client library that resends commands), and the marker shows
-- that Redis already applied it, so no run is counted twice. The batch also carries the
-- per-class run metrics of Sidekiq 7 and 8's Metrics tab.
-- KEYS[1] P stat_flush:<node> (the id of the last batch applied)
-- KEYS[1+i] the key of step i: a counter (P stat:…), a metrics hash (P j|…) or a histogram
--   (P <class>-…, P h|<class>-…), as Sidekiq 7 and 8's metrics/tracking.rb write them
-- ARGV[1] batch id   ARGV[2] marker TTL in seconds
-- From ARGV[3], for each step in turn: its kind, its key's TTL in seconds (0: none), then
--   'c': the increment (INCRBY)
--   'h': n, then n pairs of field and increment (HINCRBY)
--   'b': n, then n pairs of bucket and increment: saturating u16 counters at bit 16·bucket
--        (BITFIELD … OVERFLOW SAT INCRBY u16 #bucket n, as Sidekiq's Histogram#persist)
-- Returns 1 when applied, 0 when the batch had been applied before.
if redis.call('GET', KEYS[1]) == ARGV[1] then return 0 end
local a = 3
for i = 2, #KEYS do
  local kind, ttl = ARGV[a], tonumber(ARGV[a + 1])
  a = a + 2
  if kind == 'c' then
    redis.call('INCRBY', KEYS[i], ARGV[a])
    a = a + 1
  elseif kind == 'h' then
    local n = tonumber(ARGV[a])
    for j = a + 1, a + 2 * n, 2 do
      redis.call('HINCRBY', KEYS[i], ARGV[j], ARGV[j + 1])
    end
    a = a + 1 + 2 * n
  elseif kind == 'b' then
    local n = tonumber(ARGV[a])
    local cmd = {'BITFIELD', KEYS[i], 'OVERFLOW', 'SAT'}
    for j = a + 1, a + 2 * n, 2 do
      cmd[#cmd + 1] = 'INCRBY'
      cmd[#cmd + 1] = 'u16'
      cmd[#cmd + 1] = '#' .. ARGV[j]
      cmd[#cmd + 1] = ARGV[j + 1]
    end
    redis.call(unpack(cmd))
    a = a + 1 + 2 * n
  else
    return redis.error_reply('stats_flush: unknown step kind ' .. tostring(kind))
  end
  if ttl > 0 then redis.call('EXPIRE', KEYS[i], ttl) end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1
