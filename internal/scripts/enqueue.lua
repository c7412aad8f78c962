-- enqueue: push one job onto its queue now and wake idle exq nodes.
-- KEYS[1] P queues        KEYS[2] P queue:<q>
-- ARGV[1] queue name      ARGV[2] job JSON      ARGV[3] wake channel
-- Returns 0.
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('LPUSH', KEYS[2], ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 0
