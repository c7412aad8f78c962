-- signals_done: remove the signals a node has handled from its signals list, if they are still
-- exactly the list's right end (compare-and-remove). The node reads its signals with LRANGE,
-- handles them, and only then removes them, so a reply lost after Redis ran this script loses
-- no signal. A replay of this script (a client resending it after a dropped connection) finds
-- newer signals at the right end instead, or nothing, and removes nothing: only a run of
-- signals identical to the ones just handled could match, and handling those is idempotent.
-- KEYS[1] P <node>-signals
-- ARGV[1..n] the handled signals, as LRANGE key -n -1 returned them (oldest last)
-- Returns n when they were removed, 0 when the right end no longer matches.
local n = #ARGV
if n == 0 then return 0 end
local tail = redis.call('LRANGE', KEYS[1], -n, -1)
if #tail ~= n then return 0 end
for i = 1, n do
  if tail[i] ~= ARGV[i] then return 0 end
end
redis.call('LTRIM', KEYS[1], 0, -(n + 1))
return n
