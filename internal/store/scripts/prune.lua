-- prune: remove from the processes set the nodes whose hash has expired (no "info" field: they
-- stopped pinging a minute ago), with their busy lists under both names. The prune finds the
-- candidates with a read first (SMEMBERS, then HEXISTS for each); this script checks each again
-- before it removes it, because a node may have pinged in between: a Sidekiq process back from
-- a pause writes its hash, membership and busy list anew, and a removal after that would hide
-- it and its running jobs (from the UIs and from the foreign-run watch) until its next beat.
-- KEYS[1] P processes
-- KEYS[3i-1], KEYS[3i], KEYS[3i+1] P <node>, P <node>:workers, P <node>:work of node ARGV[i]
-- ARGV[1..n] the candidates, nodes the read found without info
-- Returns the nodes removed (those still without info).
local gone = {}
for i = 1, #ARGV do
  local k = 3 * i - 1
  if redis.call('HEXISTS', KEYS[k], 'info') == 0 then
    redis.call('DEL', KEYS[k + 1], KEYS[k + 2])
    redis.call('SREM', KEYS[1], ARGV[i])
    gone[#gone + 1] = ARGV[i]
  end
end
return gone
