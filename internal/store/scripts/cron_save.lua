-- cron_save: write a periodic job in sidekiq-cron 1.x's layout. A new schedule gets every
-- field, its status, and the ticks before now in its enqueued set (as sidekiq-cron's save does,
-- so that creating a schedule never fires the tick just before it); an existing one keeps its
-- status, its last enqueue time and its enqueued set, and gets the other fields.
-- KEYS[1] P cron_job:<name>   KEYS[2] P cron_jobs   KEYS[3] P cron_job:<name>:enqueued
-- ARGV[1] "cron_job:<name>" (the set's member, without the namespace)
-- ARGV[2] mode: "upsert", "create" (fail if it exists) or "update" (fail if it does not)
-- ARGV[3] status for a new schedule   ARGV[4] the ticks before now, as members, space-separated
-- ARGV[5] the score for it (now)      ARGV[6..] field, value, … (without status and
--                                     last_enqueue_time)
-- Returns 1 created, 0 updated, -1 not found (update), -2 exists (create).
local exists = redis.call('EXISTS', KEYS[1]) == 1
if exists and ARGV[2] == 'create' then return -2 end
if not exists and ARGV[2] == 'update' then return -1 end
local fields = {}
for i = 6, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('SADD', KEYS[2], ARGV[1])
if exists then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'last_enqueue_time', '')
for member in string.gmatch(ARGV[4], '%S+') do
  redis.call('ZADD', KEYS[3], ARGV[5], member)
end
return 1
