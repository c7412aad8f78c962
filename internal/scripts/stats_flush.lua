-- stats_flush: add one batch of a node's counters, once. The batch carries an id that the
-- node keeps until Redis has answered: a batch whose reply was lost is sent again with the
-- same id (by the node, or by a client library that resends commands), and the marker shows
-- that Redis already applied it, so no run is counted twice.
-- KEYS[1] P stat_flush:<node> (the id of the last batch applied)
-- KEYS[1+i] P stat:… counter i
-- ARGV[1] batch id   ARGV[2] marker TTL in seconds
-- ARGV[1+2i] increment of counter i   ARGV[2+2i] its TTL in seconds (0: none)
-- Returns 1 when applied, 0 when the batch had been applied before.
if redis.call('GET', KEYS[1]) == ARGV[1] then return 0 end
for i = 2, #KEYS do
  redis.call('INCRBY', KEYS[i], ARGV[2 * i - 1])
  local ttl = tonumber(ARGV[2 * i])
  if ttl > 0 then redis.call('EXPIRE', KEYS[i], ttl) end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1
