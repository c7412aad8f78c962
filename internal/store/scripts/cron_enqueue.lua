-- cron_enqueue: enqueue a periodic job's job, as sidekiq-cron's enque! does: push it, record
-- the enqueue time and the jid history (newest first, 10 kept). With a tick, only if the
-- schedule exists, is enabled (read here, at every tick) and the tick is claimed: this call's
-- ZADD adds the tick to the enqueued set (sidekiq-cron claims with the same ZADD and member,
-- so no tick is enqueued twice, whoever runs it). Ticks older than a day leave the set.
-- A tick's claim also sets the claim's marker (KEYS[6], with a TTL): a node that lost the
-- reply sends the same call again, and the marker tells it that the tick is its own, where the
-- enqueued set alone could not say whose it is.
-- KEYS[1] P cron_job:<name>   KEYS[2] P cron_job:<name>:enqueued   KEYS[3] P queue:<q>
-- KEYS[4] P queues            KEYS[5] P cron_job:<name>:jid_history
-- KEYS[6] P cron_claim:<claim id> (with a tick only)
-- ARGV[1] the tick as member, "" to enqueue now without a tick   ARGV[2] its Unix time
-- ARGV[3] the job   ARGV[4] queue name   ARGV[5] last_enqueue_time   ARGV[6] history entry
-- ARGV[7] trim: ticks scored below this leave the set   ARGV[8] wake channel
-- ARGV[9] the marker's TTL in ms   ARGV[10] "check": write nothing, only say whether this
-- claim was made (the tick is too old to be enqueued now)
-- Returns 1 when enqueued (by this call, or by an earlier one with the same claim id), 0 when
-- not (no schedule, disabled, or the tick was another's).
if ARGV[1] ~= '' then
  if redis.call('EXISTS', KEYS[6]) == 1 then return 1 end
  if ARGV[10] == 'check' then return 0 end
end
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] ~= '' then
  local status = redis.call('HGET', KEYS[1], 'status')
  if status and status ~= 'enabled' then return 0 end
  if redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1]) == 0 then return 0 end
  redis.call('ZREMRANGEBYSCORE', KEYS[2], 0, '(' .. ARGV[7])
  redis.call('SET', KEYS[6], '1', 'PX', ARGV[9])
end
redis.call('SADD', KEYS[4], ARGV[4])
redis.call('LPUSH', KEYS[3], ARGV[3])
redis.call('HSET', KEYS[1], 'last_enqueue_time', ARGV[5])
redis.call('LPUSH', KEYS[5], ARGV[6])
redis.call('LTRIM', KEYS[5], 0, 9)
redis.pcall('PUBLISH', ARGV[8], ARGV[4]) -- best effort: a user without the channel still enqueued
return 1
