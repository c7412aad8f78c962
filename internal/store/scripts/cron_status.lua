-- cron_status: set the status of a periodic job, if it exists (a hash holding only a status
-- would break sidekiq-cron's readers).
-- KEYS[1] P cron_job:<name>   ARGV[1] "enabled" or "disabled"
-- Returns 1 when set, 0 when there is no such job.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1])
return 1
