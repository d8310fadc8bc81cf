-- Leave: take every entry of a subscription being dropped out of the
-- waiters' queue.
--
-- KEYS: waiters. ARGV: subscription id.
return redis.call('LREM', KEYS[1], 0, ARGV[1])
