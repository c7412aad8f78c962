-- settle_group: the outcomes of several runs of jobs of batches and workflows in one call, each
-- exactly as its own script records it (batch_settle.lua, workflow_settle.lua; scripts.go puts
-- their text before this one as the functions batch_settle and workflow_settle, called with
-- the item's own KEYS and ARGV), in order. A node's concurrent outcomes share a round trip
-- this way (flows.go), as its acknowledgements do.
-- KEYS: every item's keys, one item after the other.
-- ARGV[1] number of items; then per item: "b" (batch) or "w" (workflow), its number of keys,
-- its number of arguments, its arguments.
-- Returns one reply per item, as its own script replies.
-- Out of memory it runs as the item scripts do: the first item's first write is a removal.
local out = {}
local k, a = 1, 2
for i = 1, tonumber(ARGV[1]) do
  local kind, nk, na = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local keys, args = {}, {}
  for j = 1, nk do keys[j] = KEYS[k + j - 1] end
  for j = 1, na do args[j] = ARGV[a + 2 + j] end
  if kind == 'b' then
    out[i] = batch_settle(keys, args)
  else
    out[i] = workflow_settle(keys, args)
  end
  k = k + nk
  a = a + 3 + na
end
return out
