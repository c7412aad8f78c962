-- trim_index: remove from a listing index (batches or workflows) the ids whose data has
-- expired, checked id by id in the same step as the removal: an id whose hash exists (a
-- batch or workflow written again under the same id meanwhile) stays. Only nodes call it
-- (readers skip expired ids and write nothing).
-- KEYS[1] P batches or P workflows   KEYS[1+i] P batch:<id_i> or P wf:<id_i>
-- ARGV[i] id_i
-- Returns how many ids it removed.
-- Out of memory it runs: it only removes.
local removed = 0
for i = 1, #ARGV do
  if redis.call('EXISTS', KEYS[1 + i]) == 0 then
    removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return removed
