-- debounce: write one debounced job into the schedule set. While the burst of its debounce key
-- still waits there and is not yet due, the job replaces that burst's job (its args win, the
-- burst's jid stays) and the run time moves to now + d, but never past the burst's first
-- enqueue + maxWait; otherwise (no burst, its job due or gone: moved by any scheduler, deleted)
-- it starts a new burst with its own jid, due at now + d. Every decision is made here on the
-- Redis server's clock (TIME), so nodes with skewed clocks agree, and a scheduler's move of the
-- job (a ZREM, whoever runs it) and this script never interleave: a job that left runs, and the
-- enqueue that found it gone waits in a new burst.
-- KEYS[1] P schedule      KEYS[2] P debounce:<key>
-- ARGV[1] d in µs         ARGV[2] maxWait in µs      ARGV[3] this call's jid
-- ARGV[4] this call's jid as JSON
-- ARGV[5] the job document up to its jid value (ends with '"jid":')
-- ARGV[6] the job document from its created_at on (starts with ',"created_at":')
-- ARGV[7] the unit of enqueued_at: 's' (float seconds) or 'ms' (integer milliseconds)
-- ARGV[8] wake channel    ARGV[9] how long, in ms, the state outlives the burst's due time
-- The state hash: jid and jidq (the burst's jid, raw and as JSON), first and due (µs on the
-- server's clock), doc (the member waiting in the schedule set), last (the jid of the last
-- call written). It expires ARGV[9] ms after the due time, and is never trusted past that due
-- time, so a state that outlives its job (or a job that outlives its state) never joins a
-- later enqueue to a burst whose job is due.
-- Returns {jid, due score, how}: how 0 a new burst, 1 joined the waiting burst, 2 a repeat of
-- the burst's last call (its jid: a call sent again after a lost reply), which writes nothing.
-- (Only the last call is remembered: a call sent again after a later call of the burst joins
-- the burst once more, its args winning; a client resends at once, so that needs a race.)
-- The first write is the ZADD, so out of memory the call is refused whole (scripts.go). A
-- state key or schedule of another type fails the script before anything is written.
-- (PUBLISH uses pcall: wake-ups are best effort.)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local st = redis.call('HMGET', KEYS[2], 'jid', 'jidq', 'first', 'due', 'doc', 'last')
local function score(us)
  local s = math.floor(us / 1000000)
  return string.format('%.0f.%06d', s, us - s * 1000000)
end
local odue = tonumber(st[4] or '')
if st[1] and odue and st[6] == ARGV[3] then
  return {st[1], score(odue), 2}
end
local jid, jidq, first, how = ARGV[3], ARGV[4], now, 0
if st[1] and st[2] and st[5] and odue and odue > now and tonumber(st[3] or '') and
    redis.call('ZSCORE', KEYS[1], st[5]) then
  jid, jidq, first, how = st[1], st[2], tonumber(st[3]), 1
end
local due = math.min(now + tonumber(ARGV[1]), first + tonumber(ARGV[2]))
local sc = score(due)
local stamp = sc
if ARGV[7] == 'ms' then stamp = string.format('%.0f', math.floor(due / 1000)) end
local doc = ARGV[5] .. jidq .. ',"enqueued_at":' .. stamp .. ARGV[6]
local head = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2] or '')
redis.call('ZADD', KEYS[1], sc, doc)
if how == 1 and st[5] ~= doc then
  redis.call('ZREM', KEYS[1], st[5])
end
redis.call('HSET', KEYS[2], 'jid', jid, 'jidq', jidq, 'first', string.format('%.0f', first),
  'due', string.format('%.0f', due), 'doc', doc, 'last', ARGV[3])
redis.call('PEXPIRE', KEYS[2], math.max(math.ceil((due - now) / 1000), 0) + tonumber(ARGV[9]))
if not head or tonumber(sc) < head then
  redis.pcall('PUBLISH', ARGV[8], ':due:' .. sc)
end
return {jid, sc, how}
